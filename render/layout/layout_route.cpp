// Step 6 of Note [Layered layout] (routes) and Note [Stable layout]'s
// make_seed, which reads routes' dummies back.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "render/layout/layout_internal.h"

namespace hookscope::render {

using detail::Layered;
using detail::Oriented;

// Step 6. Ports spread over the middle 80% of a box's bottom (top), in the
// order of the items they lead to, so edges leave a box without crossing.
void detail::build_routes(const Layered& g, const Oriented& oriented, const std::vector<float>& x,
                  Layout& out) {
  const int n = g.num_nodes;
  std::vector<float> out_port(g.down.size()), in_port(g.up.size());
  std::vector<uint32_t> idx;
  auto spread = [&](int v, const std::vector<uint32_t>& begin, const std::vector<int>& nbr,
                    std::vector<float>& port) {
    const uint32_t b = begin[v], k = begin[v + 1] - b;
    idx.resize(k);
    std::iota(idx.begin(), idx.end(), b);
    std::stable_sort(idx.begin(), idx.end(),
                     [&](uint32_t i, uint32_t j) { return x[nbr[i]] < x[nbr[j]]; });
    const float w = out.size[v].x * 0.8f;
    for (uint32_t i = 0; i < k; ++i) {
      port[idx[i]] = x[v] - w * 0.5f + w * static_cast<float>(i + 1) / static_cast<float>(k + 1);
    }
  };
  for (int v = 0; v < n; ++v) {
    spread(v, g.down_begin, g.down, out_port);
    spread(v, g.up_begin, g.up, in_port);
  }
  // Routes per unique edge, then copied to every input edge that maps there.
  std::vector<uint32_t> ubegin(1, 0);
  std::vector<Vec2> upts;
  auto bend = [&](Vec2 p, Vec2 q) {  // vertical tangents at both ends
    const float h = (q.y - p.y) * 0.5f;
    upts.push_back({p.x, p.y + h});
    upts.push_back({q.x, q.y - h});
    upts.push_back(q);
  };
  std::vector<uint32_t> dbegin(1, 0);
  std::vector<float> dx;
  for (size_t e = 0; e < oriented.edges.size(); ++e) {
    const uint32_t b = g.chain_begin[e], end = g.chain_begin[e + 1];
    const int from = g.chain[b], to = g.chain[end - 1];
    const bool direct = g.first_down[e] == Layered::kDirect;  // Note [Large graphs]
    Vec2 p{direct ? x[from] : out_port[g.first_down[e]], out.center[from].y + out.size[from].y * 0.5f};
    upts.push_back(p);
    for (uint32_t i = b + 1; i + 1 < end; ++i) {
      const int d = g.chain[i];
      const float t = out.layer_top[g.layer[d]], h = out.layer_height[g.layer[d]];
      const Vec2 top{x[d], t}, bottom{x[d], t + h};
      bend(p, top);
      upts.push_back({x[d], t + h / 3.f});
      upts.push_back({x[d], t + 2.f * h / 3.f});
      upts.push_back(bottom);
      p = bottom;
      dx.push_back(x[d]);
    }
    bend(p, {direct ? x[to] : in_port[g.last_up[e]], out.center[to].y - out.size[to].y * 0.5f});
    ubegin.push_back(static_cast<uint32_t>(upts.size()));
    dbegin.push_back(static_cast<uint32_t>(dx.size()));
  }
  const size_t m = oriented.of_input.size();
  out.route_begin.assign(1, 0);
  out.dummy_begin.assign(1, 0);
  out.reversed = oriented.reversed;
  for (size_t i = 0; i < m; ++i) {
    const int e = oriented.of_input[i];
    if (e >= 0) {
      const size_t first = out.route.size();
      out.route.insert(out.route.end(), upts.begin() + ubegin[e], upts.begin() + ubegin[e + 1]);
      if (oriented.reversed[i]) std::reverse(out.route.begin() + first, out.route.end());
      out.dummy_x.insert(out.dummy_x.end(), dx.begin() + dbegin[e], dx.begin() + dbegin[e + 1]);
    }
    out.route_begin.push_back(static_cast<uint32_t>(out.route.size()));
    out.dummy_begin.push_back(static_cast<uint32_t>(out.dummy_x.size()));
  }
  out.min = {INFINITY, INFINITY};
  out.max = {-INFINITY, -INFINITY};
  auto grow = [&](Vec2 lo, Vec2 hi) {
    out.min = {std::min(out.min.x, lo.x), std::min(out.min.y, lo.y)};
    out.max = {std::max(out.max.x, hi.x), std::max(out.max.y, hi.y)};
  };
  for (int v = 0; v < n; ++v) {
    const Vec2 c = out.center[v], s = out.size[v];
    grow({c.x - s.x * 0.5f, c.y - s.y * 0.5f}, {c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  }
  for (const Vec2& p : upts) grow(p, p);
  if (n == 0) out.min = out.max = {0.f, 0.f};
}

LayoutSeed make_seed(const Layout& previous, const LayoutGraph& previous_graph,
                     const LayoutGraph& graph, std::span<const int> old_of_new) {
  if (old_of_new.size() != static_cast<size_t>(graph.num_nodes)) {
    throw std::invalid_argument("make_seed: old_of_new has " + std::to_string(old_of_new.size()) +
                                " entries for " + std::to_string(graph.num_nodes) + " nodes");
  }
  LayoutSeed seed;
  seed.layer.assign(old_of_new.size(), -1);
  seed.x.assign(old_of_new.size(), 0.f);
  seed.layer_height = previous.layer_height;
  for (size_t v = 0; v < old_of_new.size(); ++v) {
    const int o = old_of_new[v];
    if (o < 0 || static_cast<size_t>(o) >= previous.center.size()) continue;
    seed.layer[v] = previous.layer[o];
    seed.x[v] = previous.center[o].x;
  }
  std::vector<std::pair<uint64_t, uint32_t>> old_edges;
  for (size_t e = 0; e < previous_graph.edges.size(); ++e) {
    auto [a, b] = previous_graph.edges[e];
    old_edges.push_back({detail::edge_key(a, b), static_cast<uint32_t>(e)});
  }
  std::sort(old_edges.begin(), old_edges.end());
  seed.dummy_begin.assign(1, 0);
  const bool has_dummies = previous.dummy_begin.size() == previous_graph.edges.size() + 1;
  for (auto [a, b] : graph.edges) {
    const int oa = old_of_new[a], ob = old_of_new[b];
    if (has_dummies && oa >= 0 && ob >= 0) {
      const auto it = std::lower_bound(old_edges.begin(), old_edges.end(),
                                       std::make_pair(detail::edge_key(oa, ob), 0u));
      if (it != old_edges.end() && it->first == detail::edge_key(oa, ob)) {
        seed.dummy_x.insert(seed.dummy_x.end(),
                            previous.dummy_x.begin() + previous.dummy_begin[it->second],
                            previous.dummy_x.begin() + previous.dummy_begin[it->second + 1]);
      }
    }
    seed.dummy_begin.push_back(static_cast<uint32_t>(seed.dummy_x.size()));
  }
  return seed;
}

}  // namespace hookscope::render
