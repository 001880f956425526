#pragma once
// What the Lanes, Readiness and "Why did this fire?" panels keep between
// frames (app/panel_lanes.cpp, panel_readiness.cpp, panel_explain.cpp,
// placed and focused by panel_views.cpp). Each caches its analysis data per
// model (analysis/lanes.h, readiness.h, explain.h) and sends intents back
// through the App (jump to an event, select a Function).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "analysis/explain.h"
#include "analysis/lanes.h"
#include "analysis/readiness.h"
#include "analysis/stats.h"
#include "panel_changes.h"
#include "panel_lanes_layout.h"

namespace hookscope::app {

// What the last frame drew, for the screenshot tests (HOOKSCOPE_VIEWS_REPORT=FILE).
struct ViewsDrawStats {
  struct Rect {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
  };
  Rect lanes;          // the lanes' bar area
  Rect counter;        // the live-hooks track
  Rect readiness;      // the grids' cells
  uint32_t lane_rows = 0, bars = 0, dead_segments = 0, ticks = 0, stale_ticks = 0;
  uint32_t lingering_segments = 0;  // bar parts while the owner lingered (Note [Lingering owners])
  std::string lanes_summary;        // the toolbar's count line
  uint32_t headers = 0, ranked_headers = 0;  // group headers drawn, of them naming their rank
  uint32_t cells = 0;
  uint32_t readiness_headers = 0;  // backward-pass numbers drawn over the columns
  uint32_t cell_status[6] = {};  // by analysis::Readiness
  std::string readiness_error;   // the panel's message instead of grids
  std::string explain_verdict;   // "" when the current event is no fire
  std::string explain_summary;
  uint32_t explain_steps = 0, explain_links = 0;
};

struct ViewPanels {
  bool show_lanes = false, show_readiness = false, show_explain = false;
  bool panel_applied = false;  // --panel looked at
  int focus_frames = 0;  // --panel: bring it to the front for this many more frames

  // ---- Lanes ----
  const analysis::Model* lanes_model = nullptr;
  size_t lanes_events = 0;  // events of lanes_model
  std::vector<analysis::HookLane> lanes;
  bool lanes_ranks = false;  // the lanes are of several ranks: group labels name theirs
  LiveCounter counter;
  const analysis::Model* series_model = nullptr;  // the selected Function's live hooks
  analysis::FunctionIndex series_function = analysis::kNoIndex;
  std::vector<analysis::SeriesPoint> series;
  LaneGrouping grouping = LaneGrouping::kFunction;
  std::vector<uint32_t> folded;  // group keys, sorted
  bool rows_dirty = true;
  LaneRows rows;
  EventAxis axis;
  bool axis_set = false;
  std::vector<TickColumn> ticks;  // scratch

  // ---- Readiness ----
  const analysis::Model* readiness_model = nullptr;
  std::vector<analysis::ReadinessGrid> grids;
  std::string readiness_error;  // why there are no grids (Note [Readiness map size]), shown in the panel

  // ---- Why did this fire? ----
  const analysis::Model* explain_model = nullptr;
  size_t explained_event = SIZE_MAX;
  std::optional<analysis::Explanation> explanation;
  std::string explain_error;
  EventChanges changes;  // at explained_event

  ViewsDrawStats stats;
};

}  // namespace hookscope::app
