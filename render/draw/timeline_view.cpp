// Drawing the timeline (Note [Timeline folding]): the frame, input, the
// cursor, selection and bookmarks; the axis and tracks are timeline_tracks.cpp.

#include "render/draw/timeline_view.h"

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <cstdio>
#include <string>

#include "render/layout/colors.h"
#include "render/draw/timeline_view_internal.h"

namespace hookscope::render {

TimelineView::TimelineView(TimelineViewOptions options) : options_(options) {}

void TimelineView::set_model(const analysis::Model* model) {
  if (!model) {
    set_model(nullptr, TimelineIndex(), RunStory());
    return;
  }
  set_model(model, TimelineIndex(*model), RunStory(*model));
}

void TimelineView::set_model(const analysis::Model* model, TimelineIndex index, const RunStory& story) {
  model_ = model;
  index_ = std::move(index);
  story_ = story;
  mark_cached_.clear();
  markers_ = model ? timeline_markers(*model, story_) : std::vector<TimelineMarker>{};
  bookmarks_.clear();
  selection_.reset();
  gap_collapsed_.assign(index_.idle_gaps().size(), 1);
  gap_ns_ = 0.0;
  fit_pending_ = true;
}

void TimelineView::set_index(TimelineIndex index) {
  model_ = nullptr;
  index_ = std::move(index);
  mark_cached_.clear();
  gap_collapsed_.assign(index_.idle_gaps().size(), 1);
  gap_ns_ = 0.0;
  fit_pending_ = true;
}

void TimelineView::fit() { fit_pending_ = true; }

void TimelineView::set_window(double begin_ns, double end_ns) {
  begin_ = view_of(begin_ns);
  ns_per_px_ = std::max((view_of(end_ns) - begin_) / std::max(canvas_w_, 1.f), 1e-3);
  fit_pending_ = false;
}

void TimelineView::toggle_bookmark(size_t event) {
  auto it = std::lower_bound(bookmarks_.begin(), bookmarks_.end(), event);
  if (it != bookmarks_.end() && *it == event) {
    bookmarks_.erase(it);
  } else {
    bookmarks_.insert(it, event);
  }
}

size_t TimelineView::event_at_time(double t) const {
  size_t lo = 0, hi = model_->num_events();  // merged order is time order
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (static_cast<double>(model_->time_ns(mid)) < t) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return std::min(lo, model_->num_events() - 1);
}

TimelineResult TimelineView::draw(size_t current_event) {
  TimelineFrame f;
  stats_ = {};
  draw_toolbar(current_event);
  begin_canvas(f);
  f.dl->AddRectFilled(f.min, f.max, palette().background);  // Note [Canvas palettes]
  f.dl->PushClipRect(f.min, f.max, true);
  draw_axis(f);
  size_tracks(f);
  float y = f.min.y + options_.axis_height + f.marker_h;
  for (const TimelineTrack& track : index_.tracks()) {
    draw_track(f, track, y);
    const float height = options_.tick_height + f.lane_h * static_cast<float>(track.lanes.size());
    draw_lost(f, track, y, height);
    f.track_y.push_back({y, y + height});
    y += height + options_.track_gap;
  }
  stats_.track_y = f.track_y;
  // Gaps first: marker labels are placed around their bands and labels (draw_markers).
  draw_gaps(f, f.min.y, y);
  draw_markers(f, f.min.y + options_.axis_height, y);
  draw_overlays(f, current_event);
  f.dl->PopClipRect();
  draw_hover(f);
  if (f.clicked && !f.result.current_event && !selecting_from_ && !f.gap_clicked) {
    f.result.current_event = nearest_event(f);
    if (f.result.current_event) last_click_ = {f.mouse.x, f.mouse.y, t_of(f.mouse.x), *f.result.current_event};
  }
  return f.result;
}

void TimelineView::draw_toolbar(size_t current_event) {
  if (ImGui::SmallButton("Fit##timeline")) fit_pending_ = true;
  ImGui::SameLine();
  if (ImGui::SmallButton("Bookmark") && model_) toggle_bookmark(current_event);
  ImGui::SameLine();
  ImGui::TextDisabled("%zu events, %zu track%s", index_.num_events(), index_.tracks().size(),
                      index_.tracks().size() == 1 ? "" : "s");
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("wheel: zoom, drag: pan, right-drag: select, click: go to event");
  ImGui::SameLine(0.f, 14.f);
  draw_legend();
}

// The canvas: its rectangle, a pending fit, the mouse, and the window's time
// range (the mark cache is dropped when it changes).
void TimelineView::begin_canvas(TimelineFrame& f) {
  f.dl = ImGui::GetWindowDrawList();
  f.min = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  f.max = {f.min.x + std::max(avail.x, 100.f), f.min.y + std::max(avail.y, 40.f)};
  ImGui::InvisibleButton("timeline_canvas", {f.max.x - f.min.x, f.max.y - f.min.y},
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight);
  f.plot_x = f.min.x + options_.header_width;
  canvas_x_ = f.plot_x;
  canvas_w_ = std::max(f.max.x - f.plot_x, 1.f);
  stats_.plot_x0 = f.plot_x;
  stats_.plot_x1 = f.max.x;
  if (fit_pending_ && index_.end_ns() >= index_.begin_ns()) fit_now();
  handle_input(f);
  // Clamped before the casts: a double past int64 is undefined behaviour.
  auto to_ns = [](double t) {
    constexpr double kMax = 9.2e18;
    return static_cast<int64_t>(std::clamp(std::isfinite(t) ? t : 0.0, -kMax, kMax));
  };
  f.t0 = to_ns(std::floor(begin_));
  f.t1 = to_ns(std::ceil(t_of(f.max.x)));
  f.min_gap = std::max<int64_t>(1, to_ns(std::ceil(options_.min_mark_px * ns_per_px_)));
  if (mark_cached_.size() != index_.tracks().size() || f.t0 != cache_t0_ || f.t1 != cache_t1_ ||
      f.min_gap != cache_gap_) {  // Note [Timeline mark cache]
    mark_cached_.assign(index_.tracks().size(), 0);
    mark_cache_.resize(index_.tracks().size());
    cache_t0_ = f.t0;
    cache_t1_ = f.t1;
    cache_gap_ = f.min_gap;
  }
}

// Heights: marker row and lanes shrink to fit the tracks into the canvas.
void TimelineView::size_tracks(TimelineFrame& f) const {
  float fixed = options_.axis_height;
  size_t lanes = 0;
  for (const TimelineTrack& track : index_.tracks()) {
    fixed += options_.tick_height + options_.track_gap;
    lanes += track.lanes.size();
  }
  f.marker_h = std::clamp((f.max.y - f.min.y) - fixed - 4.f * static_cast<float>(lanes), 0.f, options_.marker_height);
  fixed += f.marker_h;
  const float room = (f.max.y - f.min.y) - fixed;
  f.lane_h = options_.lane_height;
  if (lanes > 0 && room < options_.lane_height * static_cast<float>(lanes)) {
    f.lane_h = std::max(4.f, room / static_cast<float>(lanes));
  }
  f.lane_text = f.lane_h >= ImGui::GetFontSize() - 1.f;
}

// Over the tracks: the selection, the bookmarks and the cursor; and the
// training span's x for the draw report.
void TimelineView::draw_overlays(TimelineFrame& f, size_t current_event) {
  if (selection_) {
    const float a = x_of(selection_->first), b = x_of(selection_->second);
    const uint32_t ink = palette().light ? rgba(0, 0, 0) : rgba(255, 255, 255);
    f.dl->AddRectFilled({std::max(a, f.plot_x), f.min.y}, {b, f.max.y}, with_alpha(ink, 28));
    f.dl->AddLine({a, f.min.y}, {a, f.max.y}, with_alpha(ink, 90));
    f.dl->AddLine({b, f.min.y}, {b, f.max.y}, with_alpha(ink, 90));
  }
  if (model_ && model_->num_events() > 0 && !model_->events_of_kind(trace::EventKind::kBackwardBegin).empty()) {
    stats_.first_backward_x = x_of(static_cast<double>(model_->time_ns(model_->events_of_kind(trace::EventKind::kBackwardBegin)[0])));
    stats_.last_event_x = x_of(static_cast<double>(model_->time_ns(model_->num_events() - 1)));
  }
  if (model_) {
    for (size_t b : bookmarks_) {
      if (b >= model_->num_events()) continue;
      const float x = x_of(static_cast<double>(model_->time_ns(b)));
      if (x < f.plot_x || x > f.max.x) continue;
      f.dl->AddLine({x, f.min.y + 2.f}, {x, f.max.y}, rgba(120, 170, 255, 120));
      f.dl->AddTriangleFilled({x, f.min.y + 2.f}, {x + 9.f, f.min.y + 6.f}, {x, f.min.y + 10.f}, rgba(120, 170, 255));
      if (f.hovered && std::abs(f.mouse.x - x) < 6.f && f.mouse.y < f.min.y + options_.axis_height && f.clicked) {
        f.result.current_event = b;
      }
    }
    if (current_event < model_->num_events()) {
      const float x = x_of(static_cast<double>(model_->time_ns(current_event)));
      if (x >= f.plot_x && x <= f.max.x) {
        f.dl->AddLine({x, f.min.y}, {x, f.max.y}, palette().selected, 1.5f);
        f.dl->AddTriangleFilled({x - 5.f, f.min.y}, {x + 5.f, f.min.y}, {x, f.min.y + 7.f}, palette().selected);
      }
    }
  }
}

// Tooltip and click on what the mouse is over.
void TimelineView::draw_hover(TimelineFrame& f) const {
  if (f.hovered && !ImGui::IsMouseDragging(ImGuiMouseButton_Left) && !selecting_from_) {
    if (f.hover_event != UINT32_MAX) {
      f.result.hovered_event = f.hover_event;
      ImGui::BeginTooltip();
      if (f.hover_count > 1) ImGui::Text("%zu events folded; the first:", f.hover_count);
      if (model_) {
        ImGui::TextUnformatted(model_->describe(f.hover_event).c_str());
      } else {
        ImGui::Text("event #%u", f.hover_event);
      }
      ImGui::EndTooltip();
      if (f.clicked && model_) f.result.current_event = f.hover_event;
    } else if (f.hover_span) {
      char dur[32];
      format_duration(dur, sizeof dur, static_cast<double>(f.hover_span->end - f.hover_span->begin));
      ImGui::BeginTooltip();
      if (f.hover_span_count > 1) {
        ImGui::Text("%zu spans folded", f.hover_span_count);
      } else if (model_) {
        ImGui::Text("%s  (%s)", model_->describe(f.hover_span->begin_event).c_str(), dur);
        if (f.hover_span->failed) ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().alarm), "collective failed");
      }
      ImGui::EndTooltip();
      if (f.clicked && model_) f.result.current_event = f.hover_span->begin_event;
    }
  }
}

std::optional<size_t> TimelineView::nearest_event(const TimelineFrame& f) const {
  if (!model_ || model_->num_events() == 0 || f.mouse.x < f.plot_x) return std::nullopt;
  const double t = t_of(f.mouse.x);
  const auto ns = static_cast<int64_t>(std::clamp(t, -9.2e18, 9.2e18));
  for (size_t k = 0; k < f.track_y.size() && k < index_.tracks().size(); ++k) {
    if (f.mouse.y < f.track_y[k].first || f.mouse.y >= f.track_y[k].second) continue;
    const TimelineTrack& track = index_.tracks()[k];
    if (track.size() == 0) return std::nullopt;
    const size_t after = track.lower_bound(0, track.size(), ns);
    if (after == 0) return track.event(0);
    if (after == track.size()) return track.event(after - 1);
    // Ties go to the earlier event.
    const bool later = static_cast<double>(track.time(after)) - t < t - static_cast<double>(track.time(after - 1));
    return track.event(later ? after : after - 1);
  }
  const size_t after = event_at_time(t);  // the axis, the marker strip, the gaps between tracks
  if (after > 0 && t - static_cast<double>(model_->time_ns(after - 1)) <= static_cast<double>(model_->time_ns(after)) - t) {
    return after - 1;
  }
  return after;
}

void TimelineView::handle_input(TimelineFrame& f) {
  ImGuiIO& io = ImGui::GetIO();
  f.hovered = ImGui::IsItemHovered();
  f.mouse = io.MousePos;
  const bool active = ImGui::IsItemActive();
  f.clicked = f.hovered && ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
              ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 4.f).x == 0.f;
  if (f.hovered && io.MouseWheel != 0.f) {  // zoom at the cursor, in view time (Note [Timeline time mapping])
    const double at = begin_ + static_cast<double>(f.mouse.x - canvas_x_) * ns_per_px_;
    // Not below a few ulps of the times shown (wall-clock ns need ~256 ns per
    // px to stay distinct), nor past the whole int64 range on the canvas.
    const double floor_px = std::max(1e-3, std::abs(at) * 8 * std::numeric_limits<double>::epsilon());
    ns_per_px_ = std::clamp(ns_per_px_ * std::pow(1.25, -io.MouseWheel), floor_px, 1e17);
    begin_ = at - static_cast<double>(f.mouse.x - canvas_x_) * ns_per_px_;
  }
  const bool select = io.KeyShift || ImGui::IsMouseDown(ImGuiMouseButton_Right);
  if (active && ImGui::IsMouseDragging(ImGuiMouseButton_Left) && !select) {
    begin_ -= static_cast<double>(io.MouseDelta.x) * ns_per_px_;
  }
  // Range selection: right-drag (or shift-drag) from where the press began.
  const int button = ImGui::IsMouseDown(ImGuiMouseButton_Right) ? ImGuiMouseButton_Right : ImGuiMouseButton_Left;
  if (f.hovered && select && ImGui::IsMouseClicked(button)) selecting_from_ = t_of(f.mouse.x);
  if (selecting_from_ && ImGui::IsMouseDown(button)) {
    const double now = t_of(f.mouse.x);
    selection_ = {std::min(*selecting_from_, now), std::max(*selecting_from_, now)};
  }
  if (selecting_from_ && !ImGui::IsMouseDown(ImGuiMouseButton_Left) && !ImGui::IsMouseDown(ImGuiMouseButton_Right)) {
    selecting_from_.reset();
    if (selection_ && x_of(selection_->second) - x_of(selection_->first) < 2.f) {
      selection_.reset();
    } else if (selection_ && model_ && model_->num_events() > 0) {
      const size_t first = event_at_time(selection_->first);
      size_t last = event_at_time(selection_->second);
      if (last > first && static_cast<double>(model_->time_ns(last)) > selection_->second) --last;
      f.result.range = std::pair(first, last);
    }
  }
}

}  // namespace hookscope::render
