#pragma once
// Graph layout for the autograd graph view. No ImGui here: layout is
// computed and tested headless.

#include <cstdint>
#include <utility>
#include <vector>

namespace hookscope::render {

// A directed graph of n nodes as (from, to) pairs, nodes numbered 0..n-1.
struct LayoutGraph {
  int num_nodes = 0;
  std::vector<std::pair<int, int>> edges;
};

// Longest-path layering: every edge goes from a lower to a strictly higher
// layer, roots (no incoming edge) sit on layer 0. Throws std::invalid_argument
// on a cycle or an edge naming a node out of range.
std::vector<int> assign_layers(const LayoutGraph& graph);

}  // namespace hookscope::render
