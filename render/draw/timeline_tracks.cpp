// The timeline's axis and tracks (Note [Timeline folding]): the time ruler,
// each rank's ticks, folds and span lanes, and their colours.

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <utility>
#include <vector>

#include "render/layout/colors.h"
#include "render/draw/timeline_view.h"
#include "render/draw/timeline_view_internal.h"

namespace hookscope::render {

// Tick colours per TickClass, for the dark and the light canvas (Note [Canvas palettes]).
uint32_t tick_class_color(int cls) {
  static constexpr uint32_t kDark[kNumTickClasses] = {
      rgba(130, 136, 148),  // node
      rgba(110, 200, 120),  // hook added / removed
      rgba(250, 220, 90),   // hook fired
      rgba(90, 150, 230),   // engine
      rgba(190, 130, 230),  // DDP
      rgba(70, 200, 210),   // collective
      rgba(240, 70, 70),    // alarm
      rgba(110, 110, 110),  // other
  };
  static constexpr uint32_t kLight[kNumTickClasses] = {
      rgba(110, 116, 128), rgba(30, 140, 50),  rgba(176, 120, 0), rgba(40, 90, 200),
      rgba(140, 60, 190),  rgba(0, 130, 140),  rgba(208, 30, 30), rgba(120, 120, 120),
  };
  return palette().light ? kLight[cls] : kDark[cls];
}

const char* tick_class_name(int cls) {
  static constexpr const char* kNames[kNumTickClasses] = {"Function", "hook +/-", "fire",  "engine",
                                                          "DDP",      "collective", "alarm", "other"};
  return kNames[cls];
}

namespace {

uint32_t class_color(int cls) { return tick_class_color(cls); }

constexpr int kAlarmClass = static_cast<int>(TickClass::kAlarm);

// The first event of [first, last) of class alarm (`last` if none): a binary
// search on the class summary, O(log^2 n) however many events the fold holds.
size_t first_alarm(const TimelineTrack& track, size_t first, size_t last) {
  if (!(track.classes(first, last) >> kAlarmClass & 1)) return last;
  while (last - first > 1) {
    const size_t mid = first + (last - first) / 2;
    if (track.classes(first, mid) >> kAlarmClass & 1) {
      last = mid;
    } else {
      first = mid;
    }
  }
  return first;
}

// A fold is red when it holds an alarm, else the colour of its most telling class.
uint32_t fold_color(uint8_t bits) {
  for (int cls : {6, 2, 5, 4, 1, 3, 0, 7}) {
    if (bits >> cls & 1) return with_alpha(class_color(cls), cls == 6 ? 255 : 170);
  }
  return palette().text_dim;
}

uint32_t span_color(const TimelineSpan& s) {
  const bool light = palette().light;
  if (s.failed) return light ? rgba(220, 90, 90, 230) : rgba(200, 60, 60, 220);
  switch (s.kind) {
    case SpanKind::kBackward: return light ? rgba(150, 180, 230, 230) : rgba(52, 84, 140, 230);
    case SpanKind::kApply: return light ? rgba(170, 200, 235, 230) : rgba(70, 110, 160, 230);
    case SpanKind::kCollective: return light ? rgba(130, 205, 205, 230) : rgba(40, 140, 140, 230);
  }
  return palette().box;
}

}  // namespace

void format_duration(char* buf, size_t n, double ns) {
  const double a = std::abs(ns);
  if (a >= 1e9) {
    std::snprintf(buf, n, "%.3g s", ns / 1e9);
  } else if (a >= 1e6) {
    std::snprintf(buf, n, "%.3g ms", ns / 1e6);
  } else if (a >= 1e3) {
    std::snprintf(buf, n, "%.3g us", ns / 1e3);
  } else {
    std::snprintf(buf, n, "%.0f ns", ns);
  }
}

namespace {

// An axis label: in format_duration's unit, with the decimals its step needs
// ("15.845 s" ticks 5 ms apart after a start-up band, not "15.8 s" thrice).
void format_tick(char* buf, size_t n, double ns, double step) {
  const double a = std::abs(ns);
  const double unit = a >= 1e9 ? 1e9 : a >= 1e6 ? 1e6 : a >= 1e3 ? 1e3 : 1.0;
  const char* name = unit == 1e9 ? "s" : unit == 1e6 ? "ms" : unit == 1e3 ? "us" : "ns";
  const int decimals = std::clamp(static_cast<int>(std::ceil(-std::log10(step / unit) - 1e-9)), 0, 9);
  std::snprintf(buf, n, "%.*f %s", decimals, ns / unit, name);
}

}  // namespace

void TimelineView::draw_axis(TimelineFrame& f) {
  const float y = f.min.y + options_.axis_height;
  f.dl->AddLine({f.plot_x, y - 1.f}, {f.max.x, y - 1.f}, palette().box_border);
  // Steps of 1, 2 or 5 times a power of ten, at least 110 px apart.
  const double want = 110.0 * ns_per_px_;
  double step = std::pow(10.0, std::floor(std::log10(want)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (step * m >= want) {
      step *= m;
      break;
    }
  }
  // Ticks are origin + k * step for whole k (no `t += step`, which stops
  // advancing once |t| dwarfs step), at most one per 110 px, and none inside
  // a collapsed idle gap (Note [Idle gaps]): each stretch between them gets its own.
  const double origin = static_cast<double>(index_.begin_ns());
  if (!std::isfinite(step) || step <= 0.0) return;
  const double t_left = t_of(f.plot_x), t_right = t_of(f.max.x);
  std::vector<std::pair<double, double>> stretches;  // time with activity in view
  double from = t_left;
  for (size_t k = 0; k < index_.idle_gaps().size(); ++k) {
    if (!gap_collapsed(k)) continue;
    const IdleGap& g = index_.idle_gaps()[k];
    if (static_cast<double>(g.end) <= from) continue;
    if (static_cast<double>(g.begin) >= t_right) break;
    if (static_cast<double>(g.begin) > from) stretches.push_back({from, static_cast<double>(g.begin)});
    from = static_cast<double>(g.end);
  }
  if (from < t_right) stretches.push_back({from, t_right});
  auto ticks = static_cast<int>(std::clamp((f.max.x - f.plot_x) / 110.f + 2.f, 0.f, 1000.f));
  float last_x = -1e30f;
  char buf[32];
  for (const auto& [a, b] : stretches) {
    const double first = std::ceil((a - origin) / step);
    if (!std::isfinite(first)) return;
    for (int k = 0; ticks > 0; ++k, --ticks) {
      const double t = origin + (first + k) * step;
      if (!(t <= b)) break;
      const float x = x_of(t);
      if (!(x <= f.max.x)) break;
      if (x - last_x < 70.f) continue;  // the stretch before a gap ended close by
      last_x = x;
      f.dl->AddLine({x, y - 6.f}, {x, y}, palette().text_dim);
      f.dl->AddLine({x, y}, {x, f.max.y}, palette().grid);
      format_tick(buf, sizeof buf, t - origin, step);
      f.dl->AddText({x + 3.f, f.min.y + 3.f}, palette().text_dim, buf);
    }
  }
}

void TimelineView::draw_track(TimelineFrame& f, const TimelineTrack& track, float y) {
  const TimelineViewOptions& o = options_;
  const float height = o.tick_height + f.lane_h * static_cast<float>(track.lanes.size());
  f.dl->AddRectFilled({f.min.x, y}, {f.max.x, y + height}, palette().track);
  f.dl->AddText({f.min.x + 6.f, y + 1.f}, palette().text, track.name.c_str());
  f.dl->PushClipRect({f.plot_x, y}, {f.max.x, y + height}, true);
  draw_ticks(f, track, y);
  draw_lanes(f, track, y);
  f.dl->PopClipRect();
}

// The tick row: one mark per event, or a fold with its count where marks
// would be closer than min_mark_px; the hovered one becomes f.hover_event.
void TimelineView::draw_ticks(TimelineFrame& f, const TimelineTrack& track, float y) {
  const TimelineViewOptions& o = options_;
  const float ty0 = y + 2.f, ty1 = y + o.tick_height - 2.f;
  char buf[32];
  // The marks of this window, walked once (Note [Timeline mark cache]).
  const auto k = static_cast<size_t>(&track - index_.tracks().data());
  std::vector<CachedMark>& marks = mark_cache_[k];
  if (!mark_cached_[k]) {
    marks.clear();
    for_each_mark(track, f.t0, f.t1, f.min_gap, [&](TickMark m) {
      const bool lone = m.last - m.first == 1;
      marks.push_back({m.first, m.last, track.time(m.first), lone ? 0 : track.time(m.last - 1),
                       lone ? track.cls(m.first) : track.classes(m.first, m.last),
                       lone ? m.first : first_alarm(track, m.first, m.last)});
    });
    mark_cached_[k] = 1;
  }
  for (const CachedMark& m : marks) {
    const float x0 = x_of(static_cast<double>(m.t_first));
    const bool hit = f.hovered && f.mouse.y >= y && f.mouse.y < y + o.tick_height;
    if (m.last - m.first == 1) {
      f.dl->AddRectFilled({x0 - 0.75f, ty0}, {x0 + 0.75f, ty1}, class_color(m.classes));
      ++stats_.ticks;
      if (hit && std::abs(f.mouse.x - x0) <= o.min_mark_px) {
        f.hover_event = track.event(m.first);
        f.hover_count = 1;
      }
      continue;
    }
    const float x1 = std::max(x_of(static_cast<double>(m.t_last)), x0 + o.min_mark_px);
    // A fold holding an alarm is red from its first alarm on, the rest before
    // it: red starting left of a marker would say the alarm came before it.
    if (m.classes >> kAlarmClass & 1) {
      const float xa = std::clamp(x_of(static_cast<double>(track.time(m.first_alarm))), x0, std::max(x0, x1 - 2.f));
      if (m.first_alarm > m.first) {
        f.dl->AddRectFilled({x0, ty0}, {xa, ty1}, fold_color(track.classes(m.first, m.first_alarm)));
      }
      f.dl->AddRectFilled({xa, ty0}, {x1, ty1}, fold_color(1u << kAlarmClass));
      stats_.alarm_folds.push_back({x0, xa, x1});
    } else {
      f.dl->AddRectFilled({x0, ty0}, {x1, ty1}, fold_color(m.classes));
    }
    ++stats_.folds;
    const int len = std::snprintf(buf, sizeof buf, "%zu", m.last - m.first);
    if (x1 - x0 > ImGui::CalcTextSize(buf).x + 6.f) {
      f.dl->AddText(nullptr, o.tick_height - 3.f, {x0 + 3.f, ty0 - 1.f}, palette().chip_text, buf, buf + len);
    }
    if (hit && f.mouse.x >= x0 - 1.f && f.mouse.x <= x1 + 1.f) {
      // The event nearest the mouse inside the fold.
      const auto t = static_cast<int64_t>(std::clamp(t_of(f.mouse.x), -9.2e18, 9.2e18));
      const size_t at = std::min(track.lower_bound(m.first, m.last, t), m.last - 1);
      f.hover_event = track.event(at);
      f.hover_count = m.last - m.first;
    }
  }
}

// The span lanes (backward, apply, collectives) under the tick row.
void TimelineView::draw_lanes(TimelineFrame& f, const TimelineTrack& track, float y) {
  const TimelineViewOptions& o = options_;
  char buf[32];
  for (size_t lane = 0; lane < track.lanes.size(); ++lane) {
    const auto& spans = track.lanes[lane];
    const float ly0 = y + o.tick_height + f.lane_h * static_cast<float>(lane) + 1.f;
    const float ly1 = ly0 + std::max(2.f, f.lane_h - 2.f);
    for_each_span(spans, f.t0, f.t1, f.min_gap, [&](size_t first, size_t last, bool folded) {
      const TimelineSpan& s = spans[first];
      const float x0 = x_of(static_cast<double>(s.begin));
      const float x1 = std::max(x_of(static_cast<double>(spans[last - 1].end)), x0 + o.min_mark_px);
      ++stats_.spans;
      if (f.hovered && f.mouse.y >= ly0 && f.mouse.y < ly1 && f.mouse.x >= x0 && f.mouse.x <= x1) {
        f.hover_span = &s;
        f.hover_span_count = last - first;
      }
      if (folded) {  // several spans too narrow to tell apart: a lighter bar with their count
        f.dl->AddRectFilled({x0, ly0 + 3.f}, {x1, ly1 - 3.f}, with_alpha(span_color(s), 140));
        const int len = std::snprintf(buf, sizeof buf, "%zu", last - first);
        if (f.lane_text && x1 - x0 > ImGui::CalcTextSize(buf).x + 6.f) f.dl->AddText({x0 + 3.f, ly0 + 1.f}, palette().text, buf, buf + len);
        return;
      }
      // A span that never ended (its rank died) is an outline running to the end.
      if (s.open()) {
        f.dl->AddRect({x0, ly0}, {x1, ly1}, span_color(s), 2.f, 0, 1.5f);
      } else {
        f.dl->AddRectFilled({x0, ly0}, {x1, ly1}, span_color(s), 2.f);
      }
      if (x1 - x0 < 24.f || !f.lane_text) return;
      std::string label = span_label(s);
      if (s.open()) label += " (never ended)";
      const ImVec4 clip{std::max(x0, f.plot_x), ly0, x1 - 2.f, ly1};
      f.dl->AddText(ImGui::GetFont(), ImGui::GetFontSize(), {std::max(x0, f.plot_x) + 3.f, ly0 + 1.f}, palette().text,
                    label.c_str(), nullptr, 0.f, &clip);
    });
  }
}

std::string TimelineView::span_label(const TimelineSpan& s) const {
  std::string label;
  if (s.kind == SpanKind::kBackward) {
    label = "backward";
  } else if (s.kind == SpanKind::kCollective) {
    label = std::string(trace::to_string(static_cast<trace::CollectiveOp>(s.op)));
    if (s.failed) label += " (failed)";
  } else if (model_) {
    const trace::Event e = model_->event(s.begin_event);
    const analysis::FunctionIndex fn = model_->find_function(model_->source(s.begin_event), e.node);
    label = fn == analysis::kNoIndex ? "apply" : model_->str(model_->functions()[fn].name);
  }
  return label;
}

}  // namespace hookscope::render
