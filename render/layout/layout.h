#pragma once
// Layered (Sugiyama-style) layout of the autograd graph. No ImGui here: the
// layout is computed and tested headless, and runs off the UI thread
// (render/layout/layout_job.h). See Note [Layered layout].

#include <atomic>
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace hookscope::render {

// Note [Layered layout]
// ~~~~~~~~~~~~~~~~~~~~~
// compute_layout() runs the classic pipeline, each step in its own file:
//   1. cycle removal (layout.cpp): a DFS reverses back edges, so a folded
//      graph whose groups are not convex still lays out; autograd graphs are
//      DAGs and lose nothing;
//   2. layering (layout.cpp): longest path from the roots, then every root
//      is pulled down next to its highest child, so a Function created late
//      does not hang at the top with one long edge;
//   3. long edges are split by one dummy per layer they cross;
//   4. crossing reduction (layout_order.cpp): a DFS order, then barycenter
//      sweeps down and up, keeping the order with the fewest crossings;
//   5. coordinates (layout_place.cpp): per layer, x minimises the weighted
//      squared length of the edges (dummy chains weigh more, so long edges
//      run straight) under the rule that neighbours keep `node_gap` between
//      them; each layer is solved exactly by pool-adjacent-violators and the
//      layers are swept down and up. The result is compact (edges pull
//      boxes together), balanced (a parent sits at its children's mean) and
//      overlap-free (layers are disjoint bands, boxes in a band keep gaps);
//   6. routes (layout_place.cpp): a chain of cubic Béziers per edge, from a
//      port on the bottom of its source box through its dummies to a port
//      on the top of its target, with vertical tangents at every joint.
// Everything is deterministic: no hash-order iteration, stable sorts, ties
// broken by index.
//
// Stability (Note [Stable layout]) is the caller's choice of a seed: with a
// LayoutSeed, nodes and long edges that were in the previous layout keep
// their layer and order and are pulled to their old x; only new things are
// placed, and old ones move only as far as they must to make room.

// Note [Large graphs]
// ~~~~~~~~~~~~~~~~~~~
// The pipeline stays near-linear at a million Functions (bench_layout_scale):
// every step is O(items log items) except the sweeps, which are cut to
// LayoutOptions::large_sweeps (no transposition) past large_graph items, and
// the dummies, which grow with the layers an edge spans (a chain of 100k
// Functions with one edge from top to bottom would need 100k): past the
// budget, the edges spanning the most layers are drawn direct, one curve
// that crosses boxes, and take no part in ordering or placement. Ports are
// found by index, never by a search through a hub's edges. Layout::simplified
// tells the view to say so.

struct Vec2 {
  float x = 0.f;
  float y = 0.f;
};

// A directed graph of n nodes as (from, to) pairs, nodes numbered 0..n-1.
struct LayoutGraph {
  int num_nodes = 0;
  std::vector<std::pair<int, int>> edges;
  // Optional, per node: its cluster (the graph view's rank). Clusters lay out
  // as columns left to right by number whose bounding boxes never overlap;
  // edges between clusters are allowed but pull nothing across.
  std::vector<int> cluster;
};

// Longest-path layering: every edge goes from a lower to a strictly higher
// layer, roots (no incoming edge) sit on layer 0. Throws std::invalid_argument
// on a cycle or an edge naming a node out of range.
std::vector<int> assign_layers(const LayoutGraph& graph);

struct LayoutOptions {
  Vec2 default_size{120.f, 40.f};  // for nodes without a size
  float node_gap = 20.f;   // horizontal space between neighbours in a layer
  float dummy_gap = 6.f;   // between two long edges passing through a layer
  float dummy_width = 2.f;
  float layer_gap = 44.f;  // vertical space between layers, where edges bend
  int max_sweeps = 24;     // crossing-reduction sweeps (each down or up)
  int placement_sweeps = 16;
  // Note [Large graphs]: past `large_graph` items (nodes and dummies) the
  // sweeps are cut to `large_sweeps` each and neighbours are not transposed;
  // past `max_dummies` dummies (0: 4 per node + 100k) the longest edges go
  // direct. Layout::simplified says when either happened.
  size_t large_graph = 200'000;
  int large_sweeps = 2;
  size_t max_dummies = 0;
  // Note [Stacked leaves]: a parent's leaf children one below the other.
  bool stack_leaves = false;
  // Note [Narrow columns]: the pull of every item toward its component's
  // centre, against the edges' pull (weights 1 to 8 per edge); 0: none.
  float center_pull = 0.f;
  // Between two clusters (ranks) side by side; 0: 3 node_gaps.
  float cluster_gap = 0.f;
};

// Note [Stacked leaves]
// ~~~~~~~~~~~~~~~~~~~~~
// In the compact view (Note [Compact boxes]) most boxes are parameters'
// AccumulateGrads: leaves, and a rank rebuilt on the same module holds two or
// three copies of each, all children of one Function. A layered layout puts
// siblings side by side, so one layer of a rebuilt rank is three leaves and
// the backbone wide, wider than the canvas at a readable zoom. With
// stack_leaves, the leaves (no out-edge, one in-edge) of one parent stand in
// one column below each other instead: the layout runs on a graph where the
// parent's edge to its second leaf comes from the first, to the third from
// the second, each as wide as the widest of them, so the column keeps a free
// lane on its left; then the boxes get their own widths back and the edge
// from the parent to each later leaf is routed as a tree's: with the first
// leaf's edge to above its band, down that lane, and right into the leaf's
// side. When a lane would cross a box (a seeded layout that put the column
// out of line), the layout is made again without stacking: never an edge
// through a box. The input graph's edges keep their indices and meaning.

// Note [Narrow columns]
// ~~~~~~~~~~~~~~~~~~~~~~
// Step 5 alone puts a parent at its children's mean, and a child at its
// parents' and children's: a chain whose every layer has its wide box on
// the same side (a transformer's blocks: a long parameter name left of
// View and T, the weight's leaf right of T) drifts that way layer after
// layer, a sideways staircase twice as wide as its widest layer. With
// center_pull every item is also pulled toward its component's centre (the
// mean x of its boxes, taken anew each sweep), so the layers stack around
// one axis and a rank's column is about as wide as its widest layer (the
// 2-rank nn.TransformerEncoder trace: 863 -> 571 units for rank 1,
// recovery-none after two rebuilds 1147 -> 1040). The pull is soft: a
// few layers whose wide box sits on one side still stick out (the
// transformer's rank columns 574 units wide, their widest layer 456). So
// after the sweeps each layer's run of a component is moved, whole, into a
// band as wide as the component's widest run around its centre, as far as
// its neighbours in the layer allow (bound_columns, layout_place.cpp): the
// transformer's two columns 1151 -> 1044 units, inside the 1280x800
// window's canvas at 10 px text beside the minimap. Edges slant a little
// more; the compact view (Note [Compact boxes]) sets it, the full view
// (center_pull 0) and seeded layouts keep their placement.

// Note [Stable layout]
// ~~~~~~~~~~~~~~~~~~~~
// Per node of the new graph, where it was in the previous layout (layer -1:
// a new node); per edge (by index in the new graph) the x of each of its
// dummies if the same edge spanned the same layers before. make_seed()
// builds this from a previous Layout and the new-to-old node map.
// Per layer, its previous height: a band never shrinks under a seed, so
// folding a group that emptied some layers does not pull everything below
// up (empty: no memory of heights).
struct LayoutSeed {
  std::vector<int> layer;
  std::vector<float> x;
  std::vector<float> layer_height;
  std::vector<uint32_t> dummy_begin;  // CSR over dummy_x, size edges + 1 (or empty)
  std::vector<float> dummy_x;
};

struct LayoutInput {
  LayoutGraph graph;
  std::vector<Vec2> sizes;  // per node (width, height); empty: default_size for all
  const LayoutSeed* seed = nullptr;
};

struct Layout {
  // Per node: centre, size and layer (every edge goes from a lower to a
  // higher layer, except those reversed to break a cycle).
  std::vector<Vec2> center;
  std::vector<Vec2> size;
  std::vector<int> layer;
  // Per layer: the band [layer_top, layer_top + layer_height) holds its boxes,
  // and its nodes sorted by x (CSR into layer_nodes): the view culls and hit
  // tests with two binary searches.
  std::vector<float> layer_top;
  std::vector<float> layer_height;
  std::vector<uint32_t> layer_begin;
  std::vector<int> layer_nodes;
  // Per input edge, a chain of cubic Béziers: points route[route_begin[e]] ..
  // route[route_begin[e + 1] - 1] read P0 C C P1 C C P2 ... (3k + 1 points;
  // none for a self loop). reversed[e]: the edge points up (a broken cycle).
  std::vector<uint32_t> route_begin;
  std::vector<Vec2> route;
  std::vector<uint8_t> reversed;
  // Per input edge, the x of its dummies, top to bottom (for make_seed()).
  std::vector<uint32_t> dummy_begin;
  std::vector<float> dummy_x;
  Vec2 min, max;  // bounding box of boxes and routes
  int num_layers = 0;
  size_t num_dummies = 0;
  size_t crossings = 0;  // edge crossings between adjacent layers, after ordering
  bool cancelled = false;
  // Note [Large graphs]: fewer sweeps, or long edges drawn direct; the view
  // says so ("simplified layout").
  bool simplified = false;
  size_t direct_edges = 0;
};

// Lays `input` out. `cancel` (may be null) is polled in every loop; when it
// turns true the result comes back early with `cancelled` set and nothing
// else meaningful. Throws std::invalid_argument on an edge naming a node out
// of range or sizes/seed of the wrong length.
Layout compute_layout(const LayoutInput& input, const LayoutOptions& options = {},
                      const std::atomic<bool>* cancel = nullptr);

// Note [Stable layout]: `old_of_new[v]` is node v's index in `previous`, or -1.
LayoutSeed make_seed(const Layout& previous, const LayoutGraph& previous_graph,
                     const LayoutGraph& graph, std::span<const int> old_of_new);

// Crossings of `layer` (every edge going down it) when each layer lists its
// nodes in input order and a long edge's dummies sit where its source would:
// the naive order crossing reduction is measured against (tests, benchmarks).
size_t count_crossings_naive(const LayoutGraph& graph, std::span<const int> layer);

}  // namespace hookscope::render
