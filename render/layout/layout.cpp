// Steps 1-3 of Note [Layered layout] (cycles, layers, dummies) and the
// pipeline that runs all of them; routes (step 6) are in layout_route.cpp.

#include "render/layout/layout.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>
#include <tuple>

#include "render/layout/layout_internal.h"

namespace hookscope::render {

using detail::Layered;
using detail::Oriented;
using detail::UniqueEdge;
using detail::check_edges;
using detail::edge_key;

namespace {

// Step 1: a DFS from every node in index order; an edge into a node still on
// the stack closes a cycle and is reversed. With a seed (Note [Stable
// layout]) the old layers decide first: every node gets a rank, its old
// layer, or for a new node the mean of the layers its old neighbours ask for
// (one below a parent, one above a child); an edge touching a ranked node
// points from the lower (rank, index) to the higher, which no cycle can do,
// and only edges among unranked new nodes go through the DFS. So a folded
// group that is not convex reverses one edge instead of pushing half the
// graph down a layer.
Oriented orient(const LayoutGraph& g, const LayoutSeed* seed) {
  const int n = g.num_nodes;
  std::vector<uint64_t> keys;
  keys.reserve(g.edges.size());
  for (auto [a, b] : g.edges) {
    if (a != b) keys.push_back(edge_key(a, b));
  }
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  std::vector<uint32_t> begin(static_cast<size_t>(n) + 1, 0);
  for (uint64_t k : keys) ++begin[(k >> 32) + 1];
  std::partial_sum(begin.begin(), begin.end(), begin.begin());

  std::vector<float> rank(static_cast<size_t>(n), NAN);
  if (seed) {
    std::vector<float> sum(static_cast<size_t>(n), 0.f);
    std::vector<int> count(static_cast<size_t>(n), 0);
    for (uint64_t k : keys) {
      const int a = static_cast<int>(k >> 32), b = static_cast<int>(k & 0xffffffffu);
      if (seed->layer[a] >= 0 && seed->layer[b] < 0) {
        sum[b] += static_cast<float>(seed->layer[a] + 1);
        ++count[b];
      } else if (seed->layer[b] >= 0 && seed->layer[a] < 0) {
        sum[a] += static_cast<float>(seed->layer[b] - 1);
        ++count[a];
      }
    }
    for (int v = 0; v < n; ++v) {
      if (seed->layer[v] >= 0) {
        rank[v] = static_cast<float>(seed->layer[v]);
      } else if (count[v]) {
        rank[v] = sum[v] / static_cast<float>(count[v]);
      }
    }
  }
  auto ranked = [&](int v) { return !std::isnan(rank[v]); };
  std::vector<uint8_t> color(static_cast<size_t>(n), 0);  // 0 new, 1 on stack, 2 done
  std::vector<uint8_t> back(keys.size(), 0);
  for (size_t e = 0; e < keys.size(); ++e) {
    const int a = static_cast<int>(keys[e] >> 32), b = static_cast<int>(keys[e] & 0xffffffffu);
    if (!ranked(a) && !ranked(b)) continue;
    const float ra = ranked(a) ? rank[a] : INFINITY, rb = ranked(b) ? rank[b] : INFINITY;
    back[e] = std::pair(ra, a) > std::pair(rb, b);
  }
  std::vector<std::pair<int, uint32_t>> stack;  // (node, next edge to look at)
  for (int root = 0; root < n; ++root) {
    if (color[root]) continue;
    color[root] = 1;
    stack.push_back({root, begin[root]});
    while (!stack.empty()) {
      auto& [v, next] = stack.back();
      if (next == begin[v + 1]) {
        color[v] = 2;
        stack.pop_back();
        continue;
      }
      const uint32_t e = next++;
      const int w = static_cast<int>(keys[e] & 0xffffffffu);
      if (ranked(v) || ranked(w)) continue;  // decided by rank above
      if (color[w] == 1) {
        back[e] = 1;
      } else if (color[w] == 0) {
        color[w] = 1;
        stack.push_back({w, begin[w]});
      }
    }
  }
  std::vector<uint64_t> oriented(keys.size());
  for (size_t e = 0; e < keys.size(); ++e) {
    oriented[e] = back[e] ? edge_key(static_cast<int>(keys[e] & 0xffffffffu),
                                     static_cast<int>(keys[e] >> 32))
                          : keys[e];
  }
  std::sort(oriented.begin(), oriented.end());

  Oriented out;
  out.of_input.assign(g.edges.size(), -1);
  out.reversed.assign(g.edges.size(), 0);
  for (size_t i = 0; i < oriented.size();) {
    size_t j = i;
    while (j < oriented.size() && oriented[j] == oriented[i]) ++j;
    out.edges.push_back({static_cast<int>(oriented[i] >> 32),
                         static_cast<int>(oriented[i] & 0xffffffffu), 0.f, -1});
    i = j;
  }
  auto find = [&](uint64_t k) {
    auto it = std::lower_bound(oriented.begin(), oriented.end(), k);
    return it != oriented.end() && *it == k;
  };
  std::vector<uint64_t> unique_keys(out.edges.size());
  for (size_t e = 0; e < out.edges.size(); ++e) {
    unique_keys[e] = edge_key(out.edges[e].from, out.edges[e].to);
  }
  for (size_t i = 0; i < g.edges.size(); ++i) {
    auto [a, b] = g.edges[i];
    if (a == b) continue;
    uint64_t k = edge_key(a, b);
    if (!find(k)) {  // only the reversed direction survived
      k = edge_key(b, a);
      out.reversed[i] = 1;
    }
    const auto e = static_cast<size_t>(
        std::lower_bound(unique_keys.begin(), unique_keys.end(), k) - unique_keys.begin());
    out.of_input[i] = static_cast<int>(e);
    out.edges[e].multiplicity += 1.f;
    if (out.edges[e].first_input < 0) out.edges[e].first_input = static_cast<int>(i);
  }
  return out;
}

// Step 2: longest path from the roots (seeded nodes keep their old layer
// unless an edge forces them down), then, children first, every new node
// with more edges down than up moves down next to its highest child: its
// edges down get shorter by more than its edges up get longer.
std::vector<int> layer_nodes(int n, const std::vector<UniqueEdge>& edges, const LayoutSeed* seed,
                             std::vector<uint8_t>& isolated) {
  std::vector<uint32_t> out_begin(static_cast<size_t>(n) + 1, 0);
  std::vector<int> indegree(static_cast<size_t>(n), 0);
  for (const auto& e : edges) {  // sorted by from
    ++out_begin[e.from + 1];
    ++indegree[e.to];
  }
  std::partial_sum(out_begin.begin(), out_begin.end(), out_begin.begin());
  isolated.assign(static_cast<size_t>(n), 0);
  for (int v = 0; v < n; ++v) {
    isolated[v] = indegree[v] == 0 && out_begin[v + 1] == out_begin[v];
  }
  std::vector<int> layer(static_cast<size_t>(n), 0);
  auto seeded = [&](int v) { return seed && seed->layer[v] >= 0; };
  std::vector<int> topo;
  topo.reserve(static_cast<size_t>(n));
  std::vector<int> pending = indegree;
  for (int v = 0; v < n; ++v) {
    if (pending[v] == 0) topo.push_back(v);
  }
  for (size_t head = 0; head < topo.size(); ++head) {
    const int v = topo[head];
    if (seeded(v)) {
      layer[v] = std::max(layer[v], seed->layer[v]);
    } else if (seed) {
      // A new node goes right above its highest old child when it can, so
      // that its edges do not push old nodes down.
      int hint = INT32_MAX;
      for (uint32_t e = out_begin[v]; e < out_begin[v + 1]; ++e) {
        if (seeded(edges[e].to)) hint = std::min(hint, seed->layer[edges[e].to] - 1);
      }
      if (hint != INT32_MAX) layer[v] = std::max(layer[v], hint);
    }
    for (uint32_t e = out_begin[v]; e < out_begin[v + 1]; ++e) {
      const int w = edges[e].to;
      layer[w] = std::max(layer[w], layer[v] + 1);
      if (--pending[w] == 0) topo.push_back(w);
    }
  }
  for (size_t i = topo.size(); i-- > 0;) {
    const int v = topo[i];
    const uint32_t outs = out_begin[v + 1] - out_begin[v];
    if (seeded(v) || outs == 0 || static_cast<int>(outs) <= indegree[v]) continue;
    int lowest = INT32_MAX;
    for (uint32_t e = out_begin[v]; e < out_begin[v + 1]; ++e) {
      lowest = std::min(lowest, layer[edges[e].to]);
    }
    layer[v] = std::max(layer[v], lowest - 1);
  }
  if (!seed) {
    int lo = INT32_MAX;
    for (int v = 0; v < n; ++v) {
      if (!isolated[v]) lo = std::min(lo, layer[v]);
    }
    if (lo != INT32_MAX) {
      for (int v = 0; v < n; ++v) layer[v] -= lo;
    }
  }
  return layer;
}

// Nodes with no edge at all form a block at the right end of the picture,
// a grid roughly as tall as wide on screen, within the layers that exist.
void layer_isolated(std::vector<int>& layer, const std::vector<uint8_t>& isolated,
                    const LayoutSeed* seed, const LayoutOptions& options) {
  int num_layers = 0, count = 0;
  for (size_t v = 0; v < layer.size(); ++v) {
    if (isolated[v]) {
      ++count;
    } else {
      num_layers = std::max(num_layers, layer[v] + 1);
    }
  }
  if (count == 0) return;
  const float aspect = (options.default_size.x + options.node_gap) /
                       (options.default_size.y + options.layer_gap);
  int rows = std::max(1, static_cast<int>(std::ceil(std::sqrt(count * aspect))));
  if (num_layers > 0) rows = std::min(rows, num_layers);
  int k = 0;
  for (size_t v = 0; v < layer.size(); ++v) {
    if (!isolated[v]) continue;
    if (seed && seed->layer[v] >= 0) {
      layer[v] = seed->layer[v];
    } else {
      layer[v] = k++ % rows;
    }
  }
}

// Components in order of their smallest node; isolated nodes form the last.
// With clusters: by cluster first, and each cluster's isolated nodes form
// its last component.
std::vector<int> find_components(int n, const std::vector<UniqueEdge>& edges,
                                 const std::vector<uint8_t>& isolated, const std::vector<int>& cluster) {
  std::vector<int> parent(static_cast<size_t>(n));
  std::iota(parent.begin(), parent.end(), 0);
  auto root = [&](int v) {
    while (parent[v] != v) v = parent[v] = parent[parent[v]];
    return v;
  };
  for (const auto& e : edges) {
    const int a = root(e.from), b = root(e.to);
    if (a != b) parent[std::max(a, b)] = std::min(a, b);  // the root is the smallest node
  }
  const bool clustered = cluster.size() == static_cast<size_t>(n);
  std::vector<int> component(static_cast<size_t>(n));
  if (!clustered) {
    // The root is a component's smallest node, so numbering roots as v
    // reaches them orders components as the sort below would, in O(n).
    std::vector<int> id(static_cast<size_t>(n), -1);
    int next = 0;
    for (int v = 0; v < n; ++v) {
      if (isolated[v]) continue;
      const int r = root(v);
      if (id[r] < 0) id[r] = next++;
      component[v] = id[r];
    }
    for (int v = 0; v < n; ++v) {
      if (isolated[v]) component[v] = next;
    }
    return component;
  }
  // (cluster, isolated?, root) orders the components.
  std::vector<std::tuple<int, int, int>> keys(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) {
    const int c = cluster[v];
    keys[v] = isolated[v] ? std::tuple(c, 1, 0) : std::tuple(c, 0, root(v));
  }
  std::vector<std::tuple<int, int, int>> distinct = keys;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  for (int v = 0; v < n; ++v) {
    component[v] = static_cast<int>(std::lower_bound(distinct.begin(), distinct.end(), keys[v]) - distinct.begin());
  }
  return component;
}

// Clusters as disjoint columns: each cluster (in increasing order) moves
// right until its leftmost item clears the previous cluster's rightmost by
// `gap`. Components are blocks in cluster order in every layer, so moving a
// whole cluster right keeps every layer's order and separations.
void separate_clusters(const Layered& g, const std::vector<int>& cluster, int n, float gap,
                       std::vector<float>& x) {
  if (cluster.size() != static_cast<size_t>(n) || n == 0) return;
  std::vector<int> cluster_of_component(static_cast<size_t>(g.num_items()), 0);
  for (int v = 0; v < n; ++v) cluster_of_component[g.component[v]] = cluster[v];
  std::vector<int> order(cluster.begin(), cluster.end());
  std::sort(order.begin(), order.end());
  order.erase(std::unique(order.begin(), order.end()), order.end());
  if (order.size() < 2) return;
  std::vector<float> lo(order.size(), INFINITY), hi(order.size(), -INFINITY);
  std::vector<int> which(static_cast<size_t>(g.num_items()));
  for (int i = 0; i < g.num_items(); ++i) {
    const int c = cluster_of_component[g.component[i]];
    const size_t k = static_cast<size_t>(std::lower_bound(order.begin(), order.end(), c) - order.begin());
    which[i] = static_cast<int>(k);
    lo[k] = std::min(lo[k], x[i] - g.width[i] * 0.5f);
    hi[k] = std::max(hi[k], x[i] + g.width[i] * 0.5f);
  }
  std::vector<float> shift(order.size(), 0.f);
  float right = hi[0];
  for (size_t k = 1; k < order.size(); ++k) {
    if (!std::isfinite(lo[k])) continue;
    shift[k] = std::max(0.f, right + gap - lo[k]);
    right = hi[k] + shift[k];
  }
  for (int i = 0; i < g.num_items(); ++i) x[i] += shift[which[i]];
}

}  // namespace

// Step 3: dummies, chains, and the weighted segments between layers.
// Note [Large graphs]: when the dummies would pass `max_dummies`, the edges
// spanning the most layers go direct instead (no dummies, no segments, a
// single bend when routed), so a graph whose long edges span thousands of
// layers costs memory and time linear in its size.
Layered detail::build_layered(int n, const std::vector<UniqueEdge>& edges, const std::vector<int>& layer,
                      const std::vector<int>& component, const std::vector<Vec2>& sizes,
                      const LayoutOptions& options, size_t max_dummies) {
  Layered g;
  g.num_nodes = n;
  g.layer = layer;
  g.component = component;
  g.width.resize(static_cast<size_t>(n));
  for (int v = 0; v < n; ++v) g.width[v] = sizes[v].x;
  // The longest span that still gets dummies.
  int longest = INT32_MAX;
  {
    size_t total = 0;
    std::vector<int> spans;
    spans.reserve(edges.size());
    for (const auto& e : edges) {
      const int span = std::max(1, layer[e.to] - layer[e.from]);
      spans.push_back(span);
      total += static_cast<size_t>(span - 1);
    }
    if (total > max_dummies) {
      std::sort(spans.begin(), spans.end());
      size_t used = 0;
      longest = 1;
      for (int span : spans) {
        if (used + static_cast<size_t>(span - 1) > max_dummies) break;
        used += static_cast<size_t>(span - 1);
        longest = span;
      }
      // Ties at `longest` may overflow the budget a little; the next span
      // up is cut, so the total stays within budget + edges.
    }
  }
  std::vector<uint8_t> direct(edges.size(), 0);
  g.chain_begin.reserve(edges.size() + 1);
  g.chain_begin.push_back(0);
  for (size_t k = 0; k < edges.size(); ++k) {
    const auto& e = edges[k];
    g.chain.push_back(e.from);
    if (layer[e.to] - layer[e.from] > longest) {
      direct[k] = 1;
    } else {
      for (int l = layer[e.from] + 1; l < layer[e.to]; ++l) {
        g.chain.push_back(g.num_items());
        g.layer.push_back(l);
        g.width.push_back(options.dummy_width);
        g.component.push_back(component[e.from]);
      }
    }
    g.chain.push_back(e.to);
    g.chain_begin.push_back(static_cast<uint32_t>(g.chain.size()));
  }
  const size_t items = g.layer.size();
  g.up_begin.assign(items + 1, 0);
  g.down_begin.assign(items + 1, 0);
  auto for_segments = [&](auto&& fn) {
    for (size_t e = 0; e < edges.size(); ++e) {
      if (direct[e]) continue;
      for (uint32_t i = g.chain_begin[e]; i + 1 < g.chain_begin[e + 1]; ++i) {
        const int a = g.chain[i], b = g.chain[i + 1];
        const float straight = g.is_dummy(a) && g.is_dummy(b) ? 8.f
                               : g.is_dummy(a) || g.is_dummy(b) ? 2.f
                                                                : 1.f;
        fn(e, i, a, b, straight * edges[e].multiplicity);
      }
    }
  };
  for_segments([&](size_t, uint32_t, int a, int b, float) {
    ++g.down_begin[a + 1];
    ++g.up_begin[b + 1];
  });
  std::partial_sum(g.up_begin.begin(), g.up_begin.end(), g.up_begin.begin());
  std::partial_sum(g.down_begin.begin(), g.down_begin.end(), g.down_begin.begin());
  g.up.resize(g.up_begin.back());
  g.up_weight.resize(g.up_begin.back());
  g.down.resize(g.down_begin.back());
  g.down_weight.resize(g.down_begin.back());
  g.first_down.assign(edges.size(), Layered::kDirect);
  g.last_up.assign(edges.size(), Layered::kDirect);
  std::vector<uint32_t> up_fill(g.up_begin.begin(), g.up_begin.end() - 1);
  std::vector<uint32_t> down_fill(g.down_begin.begin(), g.down_begin.end() - 1);
  for_segments([&](size_t e, uint32_t i, int a, int b, float w) {
    if (i == g.chain_begin[e]) g.first_down[e] = down_fill[a];
    if (i + 2 == g.chain_begin[e + 1]) g.last_up[e] = up_fill[b];
    g.down[down_fill[a]] = b;
    g.down_weight[down_fill[a]++] = w;
    g.up[up_fill[b]] = a;
    g.up_weight[up_fill[b]++] = w;
  });
  for (int l : g.layer) g.num_layers = std::max(g.num_layers, l + 1);
  return g;
}

size_t detail::dummy_budget(int n, const LayoutOptions& options) {
  return options.max_dummies ? options.max_dummies : 4 * static_cast<size_t>(n) + 100'000;
}

bool detail::is_large(const Layered& g, const LayoutOptions& options) {
  return static_cast<size_t>(g.num_items()) > options.large_graph;
}

void detail::check_edges(const LayoutGraph& g) {
  const int n = g.num_nodes;
  for (auto [a, b] : g.edges) {
    if (a < 0 || a >= n || b < 0 || b >= n) {
      throw std::invalid_argument("layout: edge (" + std::to_string(a) + ", " +
                                  std::to_string(b) + ") names a node outside 0.." +
                                  std::to_string(n - 1));
    }
  }
}

std::vector<int> assign_layers(const LayoutGraph& g) {
  check_edges(g);
  const int n = g.num_nodes;
  std::vector<int> indegree(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> out(static_cast<size_t>(n));
  for (auto [a, b] : g.edges) {
    out[a].push_back(b);
    ++indegree[b];
  }
  std::vector<int> layer(static_cast<size_t>(n), 0);
  std::vector<int> queue;
  for (int v = 0; v < n; ++v) {
    if (indegree[v] == 0) queue.push_back(v);
  }
  for (size_t head = 0; head < queue.size(); ++head) {
    const int v = queue[head];
    for (int w : out[v]) {
      layer[w] = std::max(layer[w], layer[v] + 1);
      if (--indegree[w] == 0) queue.push_back(w);
    }
  }
  if (static_cast<int>(queue.size()) != n) {
    throw std::invalid_argument("layout: the graph has a cycle; autograd graphs are acyclic");
  }
  return layer;
}

Layout detail::compute_layered(const LayoutInput& input, const LayoutOptions& options,
                               const std::atomic<bool>* cancel) {
  const LayoutGraph& graph = input.graph;
  const int n = graph.num_nodes;
  check_edges(graph);
  if (!input.sizes.empty() && input.sizes.size() != static_cast<size_t>(n)) {
    throw std::invalid_argument("layout: " + std::to_string(input.sizes.size()) +
                                " sizes for " + std::to_string(n) +
                                " nodes; give one size per node or none");
  }
  const LayoutSeed* seed = input.seed;
  if (seed && (seed->layer.size() != static_cast<size_t>(n) || seed->x.size() != seed->layer.size())) {
    throw std::invalid_argument("layout: the seed describes " + std::to_string(seed->layer.size()) +
                                " nodes, the graph has " + std::to_string(n) +
                                "; build it with make_seed() for this graph");
  }
  std::vector<Vec2> sizes = input.sizes;
  if (sizes.empty()) sizes.assign(static_cast<size_t>(n), options.default_size);

  Layout out;
  auto stop = [&] {
    out.cancelled = true;
    return out;
  };
  const Oriented oriented = orient(graph, seed);
  if (detail::cancelled(cancel)) return stop();
  std::vector<uint8_t> isolated;
  std::vector<int> layer = layer_nodes(n, oriented.edges, seed, isolated);
  layer_isolated(layer, isolated, seed, options);
  const std::vector<int> component = find_components(n, oriented.edges, isolated, graph.cluster);
  Layered g = build_layered(n, oriented.edges, layer, component, sizes, options, detail::dummy_budget(n, options));
  if (detail::cancelled(cancel)) return stop();
  for (uint32_t d : g.first_down) out.direct_edges += d == Layered::kDirect;
  out.simplified = out.direct_edges > 0 || detail::is_large(g, options);

  detail::SeedX seed_x;
  if (seed) {
    seed_x.assign(static_cast<size_t>(g.num_items()), NAN);
    for (int v = 0; v < n; ++v) {
      if (seed->layer[v] >= 0) seed_x[v] = seed->x[v];
    }
    const bool has_dummies = seed->dummy_begin.size() == graph.edges.size() + 1;
    for (size_t e = 0; has_dummies && e < oriented.edges.size(); ++e) {
      const int input_edge = oriented.edges[e].first_input;
      const uint32_t b = g.chain_begin[e] + 1, count = g.chain_begin[e + 1] - 1 - b;
      const uint32_t sb = seed->dummy_begin[input_edge];
      if (seed->dummy_begin[input_edge + 1] - sb != count) continue;  // spans other layers now
      for (uint32_t i = 0; i < count; ++i) seed_x[g.chain[b + i]] = seed->dummy_x[sb + i];
    }
  }
  out.crossings = detail::order_layers(g, options, seed ? &seed_x : nullptr, cancel);
  if (detail::cancelled(cancel)) return stop();
  std::vector<float> x = detail::place_x(g, options, seed ? &seed_x : nullptr, cancel);
  if (detail::cancelled(cancel)) return stop();
  separate_clusters(g, graph.cluster, n, options.cluster_gap > 0.f ? options.cluster_gap : 3.f * options.node_gap, x);

  // Layer bands: as tall as their tallest box; a band of dummies only is
  // half the default height, so long edges do not stretch the picture.
  out.num_layers = g.num_layers;
  out.num_dummies = static_cast<size_t>(g.num_items() - n);
  out.layer_height.assign(static_cast<size_t>(g.num_layers), 0.f);
  for (int v = 0; v < n; ++v) {
    out.layer_height[layer[v]] = std::max(out.layer_height[layer[v]], sizes[v].y);
  }
  if (seed) {
    for (size_t l = 0; l < out.layer_height.size() && l < seed->layer_height.size(); ++l) {
      out.layer_height[l] = std::max(out.layer_height[l], seed->layer_height[l]);
    }
  }
  out.layer_top.resize(static_cast<size_t>(g.num_layers));
  float top = 0.f;
  for (int l = 0; l < g.num_layers; ++l) {
    if (out.layer_height[l] == 0.f) out.layer_height[l] = options.default_size.y * 0.5f;
    out.layer_top[l] = top;
    top += out.layer_height[l] + options.layer_gap;
  }
  out.center.resize(static_cast<size_t>(n));
  out.size = sizes;
  out.layer = layer;
  for (int v = 0; v < n; ++v) {
    out.center[v] = {x[v], out.layer_top[layer[v]] + out.layer_height[layer[v]] * 0.5f};
  }
  out.layer_begin.assign(1, 0);
  for (int l = 0; l < g.num_layers; ++l) {
    for (int item : g.order[l]) {
      if (!g.is_dummy(item)) out.layer_nodes.push_back(item);
    }
    out.layer_begin.push_back(static_cast<uint32_t>(out.layer_nodes.size()));
  }
  detail::build_routes(g, oriented, x, out);
  return out;
}

}  // namespace hookscope::render
