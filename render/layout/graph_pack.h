#pragma once
// Packing a compact layout into the canvas's shape (Note [Packed ranks]).
// No ImGui: the graph view calls it on a finished layout, tests call it
// headless.

#include "render/layout/layout.h"

namespace hookscope::render {

// Note [Packed ranks]
// ~~~~~~~~~~~~~~~~~~~
// The compact view (Note [Compact boxes]) lays out only the live Functions,
// and they are mostly parameters' AccumulateGrads holding hooks: dozens of
// one-box components that a layered layout puts on one row, far wider than
// the canvas. pack_layout() moves each connected component as a whole (its
// boxes and edge routes by one offset, so nothing inside it changes) onto
// shelves: per rank (LayoutGraph::cluster), its components in their old
// left-to-right order fill rows no wider than a limit, and the ranks' blocks
// stand side by side, so rank columns stay disjoint. The limit is the one of
// a few dozen tried that lets the whole fit the canvas at the largest zoom.
// Layer bands are rebuilt from the moved boxes (overlapping bands merged),
// so culling and hit tests work unchanged; the layout is no longer a seed.
struct PackOptions {
  float aspect = 1.6f;  // canvas width / height
  float gap_x = 24.f;   // between components on a shelf
  float gap_y = 24.f;   // between shelves
  float rank_gap = 36.f;
};

// Returns whether anything moved (false: one component per rank, or none).
bool pack_layout(Layout& layout, const LayoutGraph& graph, const PackOptions& options = {});

}  // namespace hookscope::render
