#pragma once
// Packing a compact layout into the canvas's shape (Note [Packed ranks]).
// No ImGui: the graph view calls it on a finished layout, tests call it
// headless.

#include <cstdint>
#include <vector>

#include "render/layout/graph_scene.h"
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
// Within a rank, components go by module generation (Note [Module
// generations]; PackOptions::generation) and each generation starts a
// shelf: a rebuilt rank reads as blocks, gen 0 (the old module, its leaked
// hooks) above gen 1 above gen 2, not interleaved. With max_width the limit
// is the best of those that keep the whole that narrow (a transformer's
// backward mid-way: its pieces on shelves below each other, not a row).
struct PackOptions {
  float aspect = 1.6f;  // canvas width / height
  float gap_x = 16.f;   // between components on a shelf (compact gaps: Note [Compact boxes])
  float gap_y = 16.f;   // between shelves
  float rank_gap = 16.f;  // as compact_layout_options().cluster_gap
  // The widest the whole may be (world units; 0: no limit): the canvas's
  // width at the readable zoom. A graph too tall to fit at that zoom is
  // fitted by width (Note [Fit shows every rank]), so an arrangement this
  // narrow is preferred to one that fits smaller but wider.
  float max_width = 0.f;
  // Per node of the graph: its module generation (unit_generations()); a
  // component's is its lowest. Empty: one generation.
  std::vector<uint32_t> generation;
};

// Returns whether anything moved (false: one component per rank, or none).
bool pack_layout(Layout& layout, const LayoutGraph& graph, const PackOptions& options = {});

// Per unit of `folded`: the module generation of the Function its slot
// holds right after event `at` (live, else the last one created by then); a
// folded group's lowest. For PackOptions::generation.
std::vector<uint32_t> unit_generations(const GraphScene& scene, const FoldedGraph& folded, analysis::EventIndex at);

}  // namespace hookscope::render
