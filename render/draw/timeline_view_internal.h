#pragma once
// Per-frame state of the timeline view, shared by timeline_view.cpp,
// timeline_tracks.cpp and timeline_markers.cpp. Internal to the timeline view.

#include <imgui.h>

#include <utility>
#include <vector>

#include "render/draw/timeline_view.h"

namespace hookscope::render {

struct TimelineFrame {
  ImDrawList* dl = nullptr;
  ImVec2 min, max;      // canvas, the header column included
  float plot_x = 0.f;   // where time starts
  int64_t t0 = 0, t1 = 0;
  int64_t min_gap = 1;  // ns per min_mark_px
  bool hovered = false;
  ImVec2 mouse;
  TimelineResult result;
  // What the mouse is over, decided while drawing.
  uint32_t hover_event = UINT32_MAX;
  size_t hover_count = 0;
  const TimelineSpan* hover_span = nullptr;
  size_t hover_span_count = 0;
  bool clicked = false;
  bool gap_clicked = false;  // the click toggled an idle gap (Note [Idle gaps]): no seek
  std::vector<std::pair<float, float>> track_y;  // each track's rows, top and bottom (clicks)
  // Note [Timeline lanes fit the panel]: lanes shrink (down to a few pixels,
  // text dropped) so that every track shows; a short panel never hides a rank.
  float lane_h = 17.f;
  float marker_h = 20.f;  // the marker strip: gives way first when the panel is short
  bool lane_text = true;
};

// Tick colours and names per TickClass (the legend names every colour).
uint32_t tick_class_color(int cls);
const char* tick_class_name(int cls);
// "1.5 ms", "20 ns" (timeline_tracks.cpp).
void format_duration(char* buf, size_t n, double ns);

}  // namespace hookscope::render
