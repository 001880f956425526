#include "render/layout.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace hookscope::render {

std::vector<int> assign_layers(const LayoutGraph& g) {
  const int n = g.num_nodes;
  std::vector<int> indegree(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> out(static_cast<size_t>(n));
  for (auto [a, b] : g.edges) {
    if (a < 0 || a >= n || b < 0 || b >= n) {
      throw std::invalid_argument("layout: edge (" + std::to_string(a) + ", " +
                                  std::to_string(b) + ") names a node outside 0.." +
                                  std::to_string(n - 1));
    }
    out[static_cast<size_t>(a)].push_back(b);
    ++indegree[static_cast<size_t>(b)];
  }
  std::vector<int> layer(static_cast<size_t>(n), 0);
  std::vector<int> queue;
  for (int v = 0; v < n; ++v) {
    if (indegree[static_cast<size_t>(v)] == 0) queue.push_back(v);
  }
  size_t head = 0;
  while (head < queue.size()) {
    int v = queue[head++];
    for (int w : out[static_cast<size_t>(v)]) {
      layer[static_cast<size_t>(w)] =
          std::max(layer[static_cast<size_t>(w)], layer[static_cast<size_t>(v)] + 1);
      if (--indegree[static_cast<size_t>(w)] == 0) queue.push_back(w);
    }
  }
  if (static_cast<int>(queue.size()) != n) {
    throw std::invalid_argument("layout: the graph has a cycle; autograd graphs are acyclic");
  }
  return layer;
}

}  // namespace hookscope::render
