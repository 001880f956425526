#pragma once
// The layered graph the steps of Note [Layered layout] share: real nodes and
// dummies ("items") in layers, with adjacency between neighbouring layers.
// Internal to render/layout*.cpp.

#include <atomic>
#include <cstdint>
#include <vector>

#include "render/layout/layout.h"

namespace hookscope::render::detail {

inline bool cancelled(const std::atomic<bool>* cancel) {
  return cancel && cancel->load(std::memory_order_relaxed);
}

struct Layered {
  int num_nodes = 0;  // items [0, num_nodes) are the real nodes, dummies follow
  int num_layers = 0;
  std::vector<int> layer;       // per item
  std::vector<float> width;     // per item
  std::vector<int> component;   // per item; components are blocks of every layer
  // Neighbours in the layer above (up) and below (down), CSR per item, with
  // the weight of the segment (edge multiplicity times Note [Layered layout]'s
  // straightness factor).
  std::vector<uint32_t> up_begin, down_begin;
  std::vector<int> up, down;
  std::vector<float> up_weight, down_weight;
  // Per layer, the items in order (the crossing reduction writes this).
  std::vector<std::vector<int>> order;
  // Per unique edge, its chain of items top to bottom: source, dummies, target.
  std::vector<uint32_t> chain_begin;
  std::vector<int> chain;
  // Per unique edge: the index in `down` of its first segment and in `up` of
  // its last (the ports, without a search through a hub's neighbours), or
  // kDirect for an edge drawn without dummies (Note [Large graphs]).
  static constexpr uint32_t kDirect = UINT32_MAX;
  std::vector<uint32_t> first_down, last_up;
  // Note [Stable layout]: where the seeded ordering put every item (old
  // items at their old x, new ones in the nearest gap that fits); empty
  // without a seed.
  std::vector<float> start_x;

  int num_items() const { return static_cast<int>(layer.size()); }
  bool is_dummy(int item) const { return item >= num_nodes; }
};

// The least distance between the centres of neighbours a, b in a layer.
float separation(const Layered& g, const LayoutOptions& options, int a, int b);

// Per item, an x to start from (seeded items) or NaN (Note [Stable layout]).
using SeedX = std::vector<float>;

// Throws std::invalid_argument for an edge naming a node out of range.
void check_edges(const LayoutGraph& g);

inline uint64_t edge_key(int a, int b) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
}

// An edge of the acyclic graph the pipeline works on: duplicates merged.
struct UniqueEdge {
  int from;
  int to;
  float multiplicity;
  int first_input;  // an input edge that maps here (for seeded dummies)
};

struct Oriented {
  std::vector<UniqueEdge> edges;   // sorted by (from, to)
  std::vector<int> of_input;       // per input edge: unique edge, -1 for a self loop
  std::vector<uint8_t> reversed;   // per input edge
};

// Step 3: the layered graph of `edges` (which go down `layer`). Past
// `max_dummies` dummies the longest edges go direct (Note [Large graphs]).
Layered build_layered(int n, const std::vector<UniqueEdge>& edges, const std::vector<int>& layer,
                      const std::vector<int>& component, const std::vector<Vec2>& sizes,
                      const LayoutOptions& options, size_t max_dummies = SIZE_MAX);

// Note [Large graphs]: the dummy budget and whether the graph is large.
size_t dummy_budget(int n, const LayoutOptions& options);
bool is_large(const Layered& g, const LayoutOptions& options);

// Step 6: routes, dummy x, bounds into `out` (centres, sizes, layers set).
void build_routes(const Layered& g, const Oriented& oriented, const std::vector<float>& x, Layout& out);

// Steps 1-6 of Note [Layered layout]; compute_layout() adds Note [Stacked
// leaves] around it.
Layout compute_layered(const LayoutInput& input, const LayoutOptions& options, const std::atomic<bool>* cancel);

// Layout::min and max from its boxes and routes.
void update_bounds(Layout& l);

// Step 4: fills `g.order`; returns the crossings of the order kept. With a
// seed, orders by seeded x and places new items by barycenter, no sweeps.
size_t order_layers(Layered& g, const LayoutOptions& options, const SeedX* seed_x,
                    const std::atomic<bool>* cancel);

// Crossings between adjacent layers for the current `g.order`.
size_t count_crossings(const Layered& g);

// Step 5: x of every item (centre).
std::vector<float> place_x(const Layered& g, const LayoutOptions& options, const SeedX* seed_x,
                           const std::atomic<bool>* cancel);

}  // namespace hookscope::render::detail
