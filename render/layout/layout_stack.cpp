// Note [Stacked leaves]: a parent's leaf children in one column, around the
// layered layout (layout.cpp).

#include <algorithm>
#include <cmath>
#include <map>

#include "render/layout/layout_internal.h"

namespace hookscope::render {

namespace {

// One parent's leaves, top to bottom, and the input edge to each.
struct Stack {
  int parent = -1;
  std::vector<int> leaves;
  std::vector<size_t> edges;
};

std::vector<Stack> find_stacks(const LayoutGraph& g) {
  const int n = g.num_nodes;
  std::vector<int> in(static_cast<size_t>(n), 0), out(static_cast<size_t>(n), 0);
  std::vector<size_t> in_edge(static_cast<size_t>(n), 0);
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const auto [a, b] = g.edges[e];
    if (a < 0 || b < 0 || a >= n || b >= n) return {};  // compute_layered says what is wrong
    ++out[a];
    ++in[b];
    in_edge[b] = e;
  }
  auto cluster = [&](int v) { return static_cast<size_t>(v) < g.cluster.size() ? g.cluster[v] : 0; };
  std::vector<int> stack_of(static_cast<size_t>(n), -1);
  std::vector<Stack> stacks;
  for (int v = 0; v < n; ++v) {  // by index: a module's copies in creation order
    if (out[v] != 0 || in[v] != 1) continue;
    const int p = g.edges[in_edge[v]].first;
    if (p == v || cluster(p) != cluster(v)) continue;
    if (stack_of[p] < 0) {
      stack_of[p] = static_cast<int>(stacks.size());
      stacks.push_back({p, {}, {}});
    }
    stacks[stack_of[p]].leaves.push_back(v);
    stacks[stack_of[p]].edges.push_back(in_edge[v]);
  }
  std::erase_if(stacks, [](const Stack& s) { return s.leaves.size() < 2; });
  return stacks;
}

// Whether a box of `width` centred at x in `leaf`'s layer, its lane on the
// left included, keeps clear of every other box and of the edges passing.
bool free_at(const Layout& l, int leaf, float x, float width, const LayoutOptions& o) {
  const float x0 = x - width * 0.5f - o.node_gap * 0.75f, x1 = x + width * 0.5f + o.node_gap * 0.25f;
  const Vec2 c = l.center[leaf], s = l.size[leaf];
  const int k = l.layer[leaf];
  for (uint32_t i = l.layer_begin[k]; i < l.layer_begin[k + 1]; ++i) {
    const int u = l.layer_nodes[i];
    if (u != leaf && x1 > l.center[u].x - l.size[u].x * 0.5f && x0 < l.center[u].x + l.size[u].x * 0.5f) return false;
  }
  for (const Vec2& p : l.route) {  // a long edge's joints in this band
    if (p.x > x0 && p.x < x1 && p.y > c.y - s.y * 0.5f && p.y < c.y + s.y * 0.5f) return false;
  }
  return true;
}

// The column in line: every leaf at the one x (of those they have) where
// they and their lane keep clear of the rest, nearest to where they are. The
// first leaf's edge follows it. False (nothing moved) when there is none.
bool align_stack(const Stack& s, const LayoutOptions& o, Layout& l) {
  float width = 0.f;
  for (int v : s.leaves) width = std::max(width, l.size[v].x);
  float best = NAN, cost = INFINITY;
  for (int candidate : s.leaves) {
    const float x = l.center[candidate].x;
    float moved = 0.f;
    bool ok = true;
    for (int v : s.leaves) {
      moved += std::abs(l.center[v].x - x);
      ok = ok && (l.center[v].x == x || free_at(l, v, x, width, o));
    }
    if (ok && moved < cost) {
      best = x;
      cost = moved;
    }
  }
  if (std::isnan(best)) return false;
  const float dx = best - l.center[s.leaves[0]].x;
  const uint32_t end = l.route_begin[s.edges[0] + 1];
  if (dx != 0.f && end >= l.route_begin[s.edges[0]] + 4) {  // the curve's end and its last control
    l.route[end - 1].x += dx;
    l.route[end - 2].x += dx;
  }
  for (int v : s.leaves) {
    if (l.center[v].x == best) continue;
    l.center[v].x = best;
    const int k = l.layer[v];  // layer_nodes stay sorted by x (culling, hit tests)
    std::stable_sort(l.layer_nodes.begin() + l.layer_begin[k], l.layer_nodes.begin() + l.layer_begin[k + 1],
                     [&](int a, int b) { return l.center[a].x < l.center[b].x; });
  }
  return true;
}

void straight(std::vector<Vec2>& r, Vec2 to) {
  const Vec2 from = r.back();
  r.push_back({from.x + (to.x - from.x) / 3.f, from.y + (to.y - from.y) / 3.f});
  r.push_back({from.x + (to.x - from.x) * 2.f / 3.f, from.y + (to.y - from.y) * 2.f / 3.f});
  r.push_back(to);
}

// The routes of a stack's later leaves (Note [Stacked leaves]). Each leaf's
// lane runs down the left of its slot (as wide as the widest leaf; the
// layout keeps node_gap free around it), so it crosses no box even where the
// column is not in line; between bands it bends within the gap. False when a
// seed kept the leaves side by side or a long edge spans the column.
bool route_stack(const Stack& s, const LayoutOptions& o, Layout& l, std::vector<std::vector<Vec2>>& routes) {
  float width = 0.f;
  for (int v : s.leaves) width = std::max(width, l.size[v].x);
  for (size_t j = 1; j < s.leaves.size(); ++j) {
    if (l.layer[s.leaves[j]] != l.layer[s.leaves[j - 1]] + 1) return false;
  }
  auto lane = [&](size_t j) { return l.center[s.leaves[j]].x - width * 0.5f - o.node_gap * 0.5f; };
  auto top = [&](size_t j) { return l.layer_top[l.layer[s.leaves[j]]]; };
  auto bottom = [&](size_t j) { return top(j) + l.layer_height[l.layer[s.leaves[j]]]; };
  auto bend = [](std::vector<Vec2>& r, Vec2 to) {  // vertical tangents at both ends
    const Vec2 from = r.back();
    const float mid = (from.y + to.y) * 0.5f;
    r.push_back({from.x, mid});
    r.push_back({to.x, mid});
    r.push_back(to);
  };
  // The first leaf's route up to its last curve (from its parent's port, or
  // the last dummy of a long edge), then a curve to the first lane.
  const uint32_t b = l.route_begin[s.edges[0]], e = l.route_begin[s.edges[0] + 1];
  if (e - b < 4) return false;
  std::vector<Vec2> path(l.route.begin() + b, l.route.begin() + (e - 3));
  bend(path, {lane(0), top(0)});
  for (size_t j = 1; j < s.leaves.size(); ++j) {
    const int v = s.leaves[j];
    const float y = l.center[v].y, left = l.center[v].x - l.size[v].x * 0.5f;
    straight(path, {lane(j - 1), bottom(j - 1)});
    bend(path, {lane(j), top(j)});
    std::vector<Vec2>& r = routes[s.edges[j]] = path;
    straight(r, {lane(j), y});
    straight(r, {left, y});
  }
  return true;
}

// Each cluster's (rank's) width, from its boxes.
std::map<int, float> cluster_widths(const Layout& l, const LayoutGraph& g) {
  std::map<int, std::pair<float, float>> x;
  for (size_t v = 0; v < l.center.size(); ++v) {
    const int c = v < g.cluster.size() ? g.cluster[v] : 0;
    auto [it, fresh] = x.try_emplace(c, INFINITY, -INFINITY);
    it->second.first = std::min(it->second.first, l.center[v].x - l.size[v].x * 0.5f);
    it->second.second = std::max(it->second.second, l.center[v].x + l.size[v].x * 0.5f);
  }
  std::map<int, float> w;
  for (const auto& [c, r] : x) w[c] = r.second - r.first;
  return w;
}

}  // namespace

void detail::update_bounds(Layout& l) {
  l.min = {INFINITY, INFINITY};
  l.max = {-INFINITY, -INFINITY};
  auto grow = [&](Vec2 lo, Vec2 hi) {
    l.min = {std::min(l.min.x, lo.x), std::min(l.min.y, lo.y)};
    l.max = {std::max(l.max.x, hi.x), std::max(l.max.y, hi.y)};
  };
  for (size_t v = 0; v < l.center.size(); ++v) {
    const Vec2 c = l.center[v], s = l.size[v];
    grow({c.x - s.x * 0.5f, c.y - s.y * 0.5f}, {c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  }
  for (const Vec2& p : l.route) grow(p, p);
  if (l.center.empty() && l.route.empty()) l.min = l.max = {0.f, 0.f};
}

Layout compute_layout(const LayoutInput& input, const LayoutOptions& options, const std::atomic<bool>* cancel) {
  const size_t n = static_cast<size_t>(std::max(input.graph.num_nodes, 0));
  // Aligning a column checks every edge's joints: quadratic, so a graph too
  // big to read at once anyway (the view scrolls it) is left side by side.
  constexpr size_t kMostStacked = 3000;
  if (!options.stack_leaves || n > kMostStacked || (!input.sizes.empty() && input.sizes.size() != n)) {
    return detail::compute_layered(input, options, cancel);
  }
  const std::vector<Stack> stacks = find_stacks(input.graph);
  if (stacks.empty()) return detail::compute_layered(input, options, cancel);
  // Each later leaf hangs from the one above it, the column as wide as its widest.
  LayoutInput chained;
  chained.graph = input.graph;
  chained.sizes = input.sizes;
  if (chained.sizes.empty()) chained.sizes.assign(n, options.default_size);
  chained.seed = input.seed;
  for (const Stack& s : stacks) {
    float w = 0.f;
    for (int v : s.leaves) w = std::max(w, chained.sizes[v].x);
    for (int v : s.leaves) chained.sizes[v].x = w;
    for (size_t j = 1; j < s.leaves.size(); ++j) chained.graph.edges[s.edges[j]].first = s.leaves[j - 1];
  }
  Layout l = detail::compute_layered(chained, options, cancel);
  if (l.cancelled) return l;
  for (int v = 0; v < static_cast<int>(n); ++v) {
    l.size[v] = input.sizes.empty() ? options.default_size : input.sizes[v];
  }
  std::vector<std::vector<Vec2>> routes(input.graph.edges.size());
  std::vector<uint8_t> rerouted(input.graph.edges.size(), 0);
  for (const Stack& s : stacks) {
    align_stack(s, options, l);  // in line where there is room; else each lane follows its leaf
    if (!route_stack(s, options, l, routes)) {
      return detail::compute_layered(input, options, cancel);
    }
    for (size_t j = 1; j < s.edges.size(); ++j) rerouted[s.edges[j]] = 1;
  }
  // Rebuild the routes (and the dummies a seed reads: none for a rerouted edge).
  std::vector<Vec2> route;
  std::vector<uint32_t> route_begin(1, 0), dummy_begin(1, 0);
  std::vector<float> dummy_x;
  for (size_t e = 0; e < input.graph.edges.size(); ++e) {
    if (rerouted[e]) {
      route.insert(route.end(), routes[e].begin(), routes[e].end());
    } else {
      route.insert(route.end(), l.route.begin() + l.route_begin[e], l.route.begin() + l.route_begin[e + 1]);
      if (l.dummy_begin.size() == input.graph.edges.size() + 1) {
        dummy_x.insert(dummy_x.end(), l.dummy_x.begin() + l.dummy_begin[e], l.dummy_x.begin() + l.dummy_begin[e + 1]);
      }
    }
    route_begin.push_back(static_cast<uint32_t>(route.size()));
    dummy_begin.push_back(static_cast<uint32_t>(dummy_x.size()));
  }
  l.route = std::move(route);
  l.route_begin = std::move(route_begin);
  l.dummy_begin = std::move(dummy_begin);
  l.dummy_x = std::move(dummy_x);
  detail::update_bounds(l);
  // Stacking is there to make ranks narrower: where it made one wider (the
  // layering placed a column's lane badly; seen once in a sample recorded by
  // the ASan build), the side-by-side layout is kept. Pulled to their
  // centres and bound to their widest layer (Note [Narrow columns]) both
  // come out about as narrow, a few units apart either way (the stack's lane
  // and its leaves' common width cost up to ~2 gaps): within 2 node_gaps the
  // stack is kept, it reads better (a parameter's copies one below the other).
  Layout wide = detail::compute_layered(input, options, cancel);
  if (wide.cancelled) return wide;
  const std::map<int, float> stacked_w = cluster_widths(l, input.graph), wide_w = cluster_widths(wide, input.graph);
  for (const auto& [c, w] : stacked_w) {
    if (w > wide_w.at(c) + 2.f * options.node_gap) return wide;
  }
  return l;
}

}  // namespace hookscope::render
