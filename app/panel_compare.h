#pragma once
// What the Compare panel keeps between frames for its synchronised graphs
// (app/panel_compare_graphs.cpp, Note [Synchronised comparison]): trace B's
// cursor at the point matching A's current event, one graph view per side,
// the differences at that point and the hook-order diff up to it.

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "analysis/compare_points.h"
#include "analysis/compare_sync.h"
#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "render/layout/colors.h"

namespace hookscope::app {

// The outline of a box with hooks only in A / only in B at the matching point,
// its tag and the counts' text: the theme's (Note [Canvas palettes]), read on
// the canvas and on the panels' background at WCAG AA in both themes.
inline uint32_t compare_only_a() { return render::palette().compare_a; }
inline uint32_t compare_only_b() { return render::palette().compare_b; }

// What the last frame drew, for tests (HOOKSCOPE_COMPARE_REPORT=FILE).
struct CompareDrawStats {
  std::string label;         // the matching point
  size_t a = 0, b = 0;       // A's current event and B's event
  bool found = true;
  uint32_t differing = 0;    // Functions whose hooks differ at the point
  uint32_t only_a = 0, only_b = 0;  // hooks only in A / only in B there (sums)
  uint32_t marked_a = 0, marked_b = 0;  // boxes outlined on each graph
  uint32_t order_rows = 0;
  uint32_t order_rows_drawn = 0;  // of them drawn by the Hook order tab's last frame (the rows in view)
  std::string order_first;        // the Function of the first row drawn there
  render::GraphDrawStats::Rect window;  // the Compare panel on screen
  uint32_t boxes_a = 0, boxes_b = 0;
  // Note [Compare tags]: each side's "+N only in" tags as drawn, and those
  // with no free place (their boxes are outlined and listed below).
  std::vector<render::GraphDrawStats::Rect> tags_a, tags_b;
  uint32_t untagged_a = 0, untagged_b = 0;
};

struct CompareGraphs {
  const analysis::Model* model_a = nullptr;  // what the members below are for
  const analysis::Model* model_b = nullptr;
  std::unique_ptr<analysis::CompareSync> sync;
  std::vector<analysis::Finding> findings_b;
  std::unique_ptr<analysis::Cursor> cursor_b;
  std::unique_ptr<render::GraphView> view_a, view_b;
  analysis::FunctionIndex selected_b = analysis::kNoIndex;
  analysis::SyncBy by = analysis::SyncBy::kStory;
  bool follow = true;        // B follows A's current event
  size_t synced_for = SIZE_MAX;  // A's event the point was matched for
  analysis::SyncBy synced_by = analysis::SyncBy::kStory;
  analysis::SyncedPoint point;
  // At the point: per Function with hooks on either side, A vs B, and the
  // hook-order diff, computed off the UI thread and kept per pair of events
  // (Note [Differences off the UI thread]). `shown` is the last that landed:
  // for (stats.a, stats.b) unless `pending`.
  std::unique_ptr<analysis::PointDiffs> diffs;
  std::shared_ptr<const analysis::PointDiff> shown;
  bool pending = false;
  const analysis::ModelDiff& at_point() const;
  const std::vector<analysis::OrderDiff>& order() const;
  int tab = 0;  // 0 graphs, 1 hook order, 2 counts at the end, 3 findings
  CompareDrawStats stats;
};

}  // namespace hookscope::app
