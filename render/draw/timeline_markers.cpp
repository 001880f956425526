// Note [Timeline markers]: the story's moments as labelled lines across the
// tracks, a legend for every colour, and "no data after here" on the track
// of a rank whose process was killed (Note [Run story]).

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "render/layout/colors.h"
#include "render/draw/timeline_view_internal.h"

namespace hookscope::render {

using trace::EventKind;

std::vector<TimelineMarker> timeline_markers(const analysis::Model& model, const RunStory& story) {
  std::vector<TimelineMarker> out;
  for (const RankIncident& inc : story.incidents()) {
    const MarkerKind kind = inc.kind == IncidentKind::kFailed ? MarkerKind::kFailed
                            : inc.kind == IncidentKind::kLost ? MarkerKind::kLost
                                                              : MarkerKind::kRebuilt;
    out.push_back({inc.at, kind, inc.text});
  }
  for (analysis::EventIndex i : model.events_of_kind(EventKind::kReducerConstructed)) {
    const trace::Event e = model.event(i);
    out.push_back({i, MarkerKind::kReducerBuilt,
                   fmt::format("{} built r{}", model.owner_name(model.find_owner(model.source(i), e.owner)), e.rank)});
  }
  for (analysis::EventIndex i : model.events_of_kind(EventKind::kReducerDestroyed)) {
    const trace::Event e = model.event(i);
    out.push_back({i, MarkerKind::kReducerDestroyed,
                   fmt::format("{} destroyed r{}", model.owner_name(model.find_owner(model.source(i), e.owner)), e.rank)});
  }
  for (analysis::OwnerIndex o = 0; o < model.owners().size(); ++o) {
    const analysis::OwnerInfo& info = model.owners()[o];
    if (info.replaced_at == analysis::kNever) continue;
    out.push_back({info.replaced_at, MarkerKind::kReducerLingering,
                   fmt::format("{} lingering r{}", model.owner_name(o), info.rank)});
  }
  std::stable_sort(out.begin(), out.end(), [](const TimelineMarker& a, const TimelineMarker& b) { return a.at < b.at; });
  return out;
}

uint32_t marker_color(MarkerKind kind) {
  const Palette& p = palette();
  switch (kind) {
    case MarkerKind::kFailed:
    case MarkerKind::kLost: return p.alarm;
    case MarkerKind::kRebuilt: return p.light ? rgba(30, 130, 60) : rgba(120, 220, 140);
    case MarkerKind::kReducerBuilt: return p.running;
    case MarkerKind::kReducerDestroyed: return p.destroyed;
    case MarkerKind::kReducerLingering: return p.lingering;
  }
  return p.text_dim;
}

const char* marker_name(MarkerKind kind) {
  switch (kind) {
    case MarkerKind::kFailed: return "failed";
    case MarkerKind::kLost: return "lost";
    case MarkerKind::kRebuilt: return "rebuilt";
    case MarkerKind::kReducerBuilt: return "Reducer built";
    case MarkerKind::kReducerDestroyed: return "destroyed";
    case MarkerKind::kReducerLingering: return "lingering";
  }
  return "";
}

// A swatch and a name per tick class and per marker kind the trace has, on
// one line: a run with no rebuild says nothing of "rebuilt", one with no
// alarm tick nothing of "alarm" (Note [Legend of the trace's owners]: a
// legend names only what the view can show).
void TimelineView::draw_legend() {
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float h = ImGui::GetTextLineHeight();
  auto item = [&](uint32_t color, const char* name, bool line) {
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (line) {
      dl->AddRectFilled({p.x + 3.f, p.y + 1.f}, {p.x + 5.f, p.y + h - 1.f}, color);
      dl->AddTriangleFilled({p.x, p.y + 1.f}, {p.x + 8.f, p.y + 1.f}, {p.x + 4.f, p.y + 6.f}, color);
    } else {
      dl->AddRectFilled({p.x + 2.f, p.y + 3.f}, {p.x + 5.f, p.y + h - 3.f}, color);
    }
    ImGui::Dummy({9.f, h});
    ImGui::SameLine(0.f, 3.f);
    ImGui::TextUnformatted(name);
    ImGui::SameLine(0.f, 8.f);
    stats_.legend.emplace_back(name);
  };
  uint8_t classes = 0;  // the top of each track's class summary: every class it holds
  for (const TimelineTrack& t : index_.tracks()) {
    if (t.summary.empty() && t.size() > 0) classes = 0xff;  // (no summary: say all)
    if (!t.summary.empty()) {
      for (uint8_t bits : t.summary.back()) classes |= bits;
    }
  }
  for (int cls : {0, 1, 2, 3, 4, 5, 6}) {
    if (classes >> cls & 1) item(tick_class_color(cls), tick_class_name(cls), false);
  }
  for (MarkerKind k : {MarkerKind::kFailed, MarkerKind::kLost, MarkerKind::kRebuilt, MarkerKind::kReducerBuilt,
                       MarkerKind::kReducerDestroyed, MarkerKind::kReducerLingering}) {
    if (std::any_of(markers_.begin(), markers_.end(), [&](const TimelineMarker& m) { return m.kind == k; })) {
      item(marker_color(k), marker_name(k), true);
    }
  }
  ImGui::NewLine();
}

// Lines across the tracks; labels in the strip under the axis, the most
// important first (failures, then destruction, ...), each only where it
// overlaps no label already placed, no collapsed idle gap's band and no
// gap's label (drawn before: stats_.gaps) and no triangle of a marker as
// telling as its own: labels never overprint each other, and none sits on a
// band that would read as its time.
void TimelineView::draw_markers(TimelineFrame& f, float top, float bottom) {
  if (!model_ || markers_.empty()) return;
  const float h = f.marker_h;
  auto on_gap_label = [&](float x, float y) {
    return std::any_of(stats_.gaps.begin(), stats_.gaps.end(), [&](const TimelineGapDraw& d) {
      return x >= d.lx0 && x < d.lx1 && y >= d.ly0 && y < d.ly1;
    });
  };
  std::vector<std::pair<float, size_t>> visible;  // x, marker
  for (size_t i = 0; i < markers_.size(); ++i) {
    const float x = x_of(static_cast<double>(model_->time_ns(markers_[i].at)));
    if (x < f.plot_x || x > f.max.x) continue;
    visible.push_back({x, i});
    const uint32_t color = marker_color(markers_[i].kind);
    const bool failure = markers_[i].kind == MarkerKind::kFailed || markers_[i].kind == MarkerKind::kLost;
    f.dl->AddLine({x, top}, {x, bottom}, with_alpha(color, failure ? 220 : 130), failure ? 2.f : 1.f);
    f.dl->AddTriangleFilled({x - 5.f, top + 1.f}, {x + 5.f, top + 1.f}, {x, top + 8.f}, color);
    ++stats_.markers;
    stats_.marker_lines.push_back({marker_name(markers_[i].kind), x, top});
    if (f.hovered && std::abs(f.mouse.x - x) < 5.f && f.mouse.y >= top && f.mouse.y < top + h &&
        !on_gap_label(f.mouse.x, f.mouse.y)) {
      f.hover_event = markers_[i].at;
      f.hover_count = 1;
    }
  }
  auto rank_of = [](MarkerKind k) {
    switch (k) {
      case MarkerKind::kFailed:
      case MarkerKind::kLost: return 0;
      case MarkerKind::kReducerDestroyed:
      case MarkerKind::kReducerLingering: return 1;
      case MarkerKind::kRebuilt: return 2;
      case MarkerKind::kReducerBuilt: return 3;
    }
    return 4;
  };
  std::stable_sort(visible.begin(), visible.end(), [&](const auto& a, const auto& b) {
    return rank_of(markers_[a.second].kind) < rank_of(markers_[b.second].kind);
  });
  std::vector<std::pair<float, float>> taken;
  for (const TimelineGapDraw& d : stats_.gaps) {
    if (d.collapsed) taken.push_back({d.x0, d.x1});
    if (d.ly1 > top && d.ly0 < top + h) taken.push_back({d.lx0, d.lx1});
  }
  const float fs = ImGui::GetFontSize() * 0.9f;
  for (const auto& [x, i] : visible) {
    const std::string& text = markers_[i].label;
    const float w = ImGui::GetFont()->CalcTextSizeA(fs, FLT_MAX, 0.f, text.c_str()).x;
    float x0 = x + 7.f;
    if (x0 + w > f.max.x) x0 = x - 7.f - w;
    const float x1 = x0 + w;
    if (x0 < f.plot_x || h < fs) continue;
    const bool clash = std::any_of(taken.begin(), taken.end(), [&](const auto& t) { return x0 < t.second + 6.f && t.first < x1 + 6.f; });
    // Nor with the triangle of another marker as telling as its own inside
    // its text (a second lingering marker landed inside "Reducer 1 lingering
    // r1"); a less telling one may sit under it: the failure is named even
    // when its Reducer's destruction follows within the label's width. One
    // that only grazes an end (kInk px: a glyph's side bearing) is no clash.
    constexpr float kInk = 4.f;
    const size_t self = i;  // (clang 14 captures no structured binding)
    const int rank = rank_of(markers_[i].kind);
    const bool on_marker = std::any_of(visible.begin(), visible.end(), [&](const auto& v) {
      return v.second != self && rank_of(markers_[v.second].kind) <= rank && v.first + 5.f > x0 + kInk &&
             v.first - 5.f < x1 - kInk;
    });
    if (clash || on_marker) continue;
    taken.push_back({x0, x1});
    stats_.marker_label_x.push_back({x0, x1});
    f.dl->AddText(ImGui::GetFont(), fs, {x0, top + (h - fs) * 0.5f}, marker_color(markers_[i].kind), text.c_str());
    ++stats_.marker_labels;
  }
}

// A lost rank's track after its last event: shaded, "no data after here".
void TimelineView::draw_lost(TimelineFrame& f, const TimelineTrack& track, float y, float height) {
  if (!model_) return;
  for (const RankIncident& inc : story_.incidents()) {
    if (inc.kind != IncidentKind::kLost || inc.source != track.source || inc.last_data == analysis::kNever) continue;
    const float x = std::max(x_of(static_cast<double>(model_->time_ns(inc.last_data))), f.plot_x);
    if (x > f.max.x) continue;
    f.dl->AddRectFilled({x, y}, {f.max.x, y + height}, with_alpha(palette().alarm, 40));
    f.dl->AddLine({x, y}, {x, y + height}, palette().alarm, 2.f);
    const char* text = "no data after here (process killed)";
    // A collapsed band over the spot (a rank lost during start-up) would hide
    // the text's start: it begins after the band.
    float tx = x + 6.f;
    const std::vector<IdleGap>& gaps = index_.idle_gaps();
    for (size_t k = 0; k < gaps.size() && k < gap_collapsed_.size(); ++k) {
      const float b0 = x_of(static_cast<double>(gaps[k].begin)), b1 = x_of(static_cast<double>(gaps[k].end));
      if (gap_collapsed_[k] && tx >= b0 && tx < b1) tx = b1 + 6.f;
    }
    stats_.lost_label_x.push_back(tx);
    const ImVec4 clip{x, y, f.max.x, y + height};
    f.dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), {tx, y + 1.f}, palette().alarm, text, nullptr, 0.f, &clip);
  }
}

}  // namespace hookscope::render
