// Note [Packed ranks]: components of a compact layout on shelves, per rank.

#include "render/layout/graph_pack.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "render/layout/layout_internal.h"

namespace hookscope::render {

namespace {

struct Component {
  Vec2 min{INFINITY, INFINITY}, max{-INFINITY, -INFINITY};
  int cluster = 0;
  uint32_t generation = UINT32_MAX;  // its nodes' lowest
  Vec2 pos;  // where its min goes
};

uint32_t find(std::vector<uint32_t>& parent, uint32_t v) {
  while (parent[v] != v) v = parent[v] = parent[parent[v]];
  return v;
}

// Shelves of at most `limit` wide per cluster (or its widest component),
// clusters side by side; a cluster's generations start new shelves, or with
// `gen_columns` stand side by side as blocks of their own. Sets each
// component's pos and returns the whole's size.
Vec2 place(std::vector<Component>& comps, const std::vector<uint32_t>& order, float limit, const PackOptions& o,
           bool gen_columns) {
  float block_x = 0.f, total_h = 0.f;
  for (size_t i = 0; i < order.size();) {
    const int cluster = comps[order[i]].cluster;
    float x = 0.f, y = 0.f, shelf_h = 0.f, block_w = 0.f;
    // A cluster's limit is never below its widest component: a big graph on
    // one rank leaves the others their own shelves.
    for (; i < order.size() && comps[order[i]].cluster == cluster; ++i) {
      Component& c = comps[order[i]];
      const float w = c.max.x - c.min.x, h = c.max.y - c.min.y;
      const bool new_generation = x > 0.f && c.generation != comps[order[i - 1]].generation;
      if (new_generation && gen_columns) {
        total_h = std::max(total_h, y + shelf_h);
        block_x += block_w + 2.f * o.gap_x;
        x = y = shelf_h = block_w = 0.f;
      } else if (x > 0.f && (x + w > limit || new_generation)) {
        y += shelf_h + o.gap_y;
        x = 0.f;
        shelf_h = 0.f;
      }
      c.pos = {block_x + x, y};
      x += w + o.gap_x;
      shelf_h = std::max(shelf_h, h);
      block_w = std::max(block_w, x - o.gap_x);
    }
    total_h = std::max(total_h, y + shelf_h);
    block_x += block_w + o.rank_gap;
  }
  return {std::max(block_x - o.rank_gap, 1.f), std::max(total_h, 1.f)};
}

float fit_scale(Vec2 size, float aspect) { return std::min(aspect / size.x, 1.f / size.y); }

}  // namespace

bool pack_layout(Layout& l, const LayoutGraph& graph, const PackOptions& o) {
  const size_t n = l.center.size();
  if (n < 2 || l.num_layers == 0) return false;
  std::vector<uint32_t> parent(n);
  std::iota(parent.begin(), parent.end(), 0u);
  for (auto [a, b] : graph.edges) {
    if (a < 0 || b < 0 || static_cast<size_t>(a) >= n || static_cast<size_t>(b) >= n) continue;
    const uint32_t ra = find(parent, static_cast<uint32_t>(a)), rb = find(parent, static_cast<uint32_t>(b));
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
  std::vector<uint32_t> comp_of(n, UINT32_MAX), root_comp(n, UINT32_MAX);
  std::vector<Component> comps;
  for (uint32_t u = 0; u < n; ++u) {
    const uint32_t r = find(parent, u);
    if (root_comp[r] == UINT32_MAX) {
      root_comp[r] = static_cast<uint32_t>(comps.size());
      comps.push_back({});
      comps.back().cluster = u < graph.cluster.size() ? graph.cluster[u] : 0;
    }
    Component& c = comps[comp_of[u] = root_comp[r]];
    if (u < graph.cluster.size()) c.cluster = std::min(c.cluster, graph.cluster[u]);
    c.generation = std::min(c.generation, u < o.generation.size() ? o.generation[u] : 0u);
    const Vec2 p = l.center[u], s = l.size[u];
    c.min = {std::min(c.min.x, p.x - s.x * 0.5f), std::min(c.min.y, p.y - s.y * 0.5f)};
    c.max = {std::max(c.max.x, p.x + s.x * 0.5f), std::max(c.max.y, p.y + s.y * 0.5f)};
  }
  for (size_t e = 0; e < graph.edges.size() && e + 1 < l.route_begin.size(); ++e) {
    const int a = graph.edges[e].first;
    if (a < 0 || static_cast<size_t>(a) >= n) continue;
    Component& c = comps[comp_of[a]];
    for (uint32_t i = l.route_begin[e]; i < l.route_begin[e + 1]; ++i) {
      c.min = {std::min(c.min.x, l.route[i].x), std::min(c.min.y, l.route[i].y)};
      c.max = {std::max(c.max.x, l.route[i].x), std::max(c.max.y, l.route[i].y)};
    }
  }
  // Per cluster, as many components as clusters: nothing to pack.
  std::vector<int> clusters;
  for (const Component& c : comps) clusters.push_back(c.cluster);
  std::sort(clusters.begin(), clusters.end());
  if (std::unique(clusters.begin(), clusters.end()) - clusters.begin() == static_cast<long>(comps.size())) return false;
  // A rank with components of several generations (a rebuilt rank whose
  // layered layout interleaves them in its grid of loose boxes).
  std::vector<std::pair<int, uint32_t>> gens;
  for (const Component& c : comps) gens.emplace_back(c.cluster, c.generation);
  std::sort(gens.begin(), gens.end());
  gens.erase(std::unique(gens.begin(), gens.end()), gens.end());
  bool mixed = false;
  for (size_t i = 1; i < gens.size(); ++i) mixed |= gens[i].first == gens[i - 1].first;
  // Components keep their left-to-right order; by generation their creation
  // order (the index of their first node), so each generation's block lists
  // a module's parameters alike.
  std::vector<uint32_t> order(comps.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    if (comps[a].cluster != comps[b].cluster) return comps[a].cluster < comps[b].cluster;
    if (comps[a].generation != comps[b].generation) return comps[a].generation < comps[b].generation;
    return mixed ? a < b : comps[a].min.x < comps[b].min.x;
  });
  // The shelf limit: from the narrowest cluster's widest component up to
  // every cluster on one shelf.
  float narrowest = INFINITY, one_row = 1.f;
  for (size_t i = 0; i < order.size();) {
    float widest = 1.f;
    for (const int cluster = comps[order[i]].cluster; i < order.size() && comps[order[i]].cluster == cluster; ++i) {
      widest = std::max(widest, comps[order[i]].max.x - comps[order[i]].min.x);
      one_row += comps[order[i]].max.x - comps[order[i]].min.x + o.gap_x;
    }
    narrowest = std::min(narrowest, widest);
  }
  // Generations of one rank as shelves below each other, or (when that fits
  // larger) as blocks side by side: older above or left of newer.
  float best_limit = narrowest, best = 0.f;
  bool best_columns = false, best_narrow = false;
  auto narrow = [&](float width) { return o.max_width <= 0.f || width <= o.max_width; };
  for (const bool columns : {false, true}) {
    if (columns && !mixed) break;
    for (float limit = narrowest;; limit *= 1.15f) {
      const Vec2 size = place(comps, order, limit, o, columns);
      const float s = fit_scale(size, o.aspect);
      const bool n = narrow(size.x);
      if ((n && !best_narrow) || (n == best_narrow && s > best * 1.0001f)) {
        best = s;
        best_limit = limit;
        best_columns = columns;
        best_narrow = n;
      }
      if (limit >= one_row) break;
    }
  }
  const float before = fit_scale({std::max(l.max.x - l.min.x, 1.f), std::max(l.max.y - l.min.y, 1.f)}, o.aspect);
  // Worth it when it fits notably larger, or keeps within max_width what
  // was wider; a rank whose generations the layered layout interleaves is
  // packed unless that fits notably smaller.
  const bool narrower = best_narrow && !narrow(l.max.x - l.min.x);
  if (!narrower && best <= before * (mixed ? 0.8f : 1.05f)) return false;
  place(comps, order, best_limit, o, best_columns);

  // Move boxes and routes; remember each box's moved band.
  std::vector<Vec2> shift(comps.size());
  for (size_t c = 0; c < comps.size(); ++c) shift[c] = {comps[c].pos.x - comps[c].min.x, comps[c].pos.y - comps[c].min.y};
  std::vector<float> top(n), bottom(n);
  for (uint32_t u = 0; u < n; ++u) {
    const Vec2 d = shift[comp_of[u]];
    l.center[u] = {l.center[u].x + d.x, l.center[u].y + d.y};
    const int k = l.layer[u];
    top[u] = l.layer_top[k] + d.y;
    bottom[u] = top[u] + l.layer_height[k];
  }
  for (size_t e = 0; e < graph.edges.size() && e + 1 < l.route_begin.size(); ++e) {
    const int a = graph.edges[e].first;
    if (a < 0 || static_cast<size_t>(a) >= n) continue;
    const Vec2 d = shift[comp_of[a]];
    for (uint32_t i = l.route_begin[e]; i < l.route_begin[e + 1]; ++i) l.route[i] = {l.route[i].x + d.x, l.route[i].y + d.y};
  }
  // Bands: the moved ones, merged where they overlap, so they stay disjoint.
  std::vector<uint32_t> by_top(n);
  std::iota(by_top.begin(), by_top.end(), 0u);
  std::stable_sort(by_top.begin(), by_top.end(), [&](uint32_t a, uint32_t b) { return top[a] < top[b]; });
  l.layer_top.clear();
  l.layer_height.clear();
  float band_end = -INFINITY;
  for (uint32_t u : by_top) {
    if (l.layer_top.empty() || top[u] >= band_end) {
      l.layer_top.push_back(top[u]);
      l.layer_height.push_back(0.f);
    }
    band_end = std::max(band_end, bottom[u]);
    l.layer_height.back() = band_end - l.layer_top.back();
    l.layer[u] = static_cast<int>(l.layer_top.size()) - 1;
  }
  l.num_layers = static_cast<int>(l.layer_top.size());
  l.layer_begin.assign(static_cast<size_t>(l.num_layers) + 1, 0);
  for (uint32_t u = 0; u < n; ++u) ++l.layer_begin[static_cast<size_t>(l.layer[u]) + 1];
  for (int k = 0; k < l.num_layers; ++k) l.layer_begin[k + 1] += l.layer_begin[k];
  l.layer_nodes.assign(n, 0);
  std::vector<uint32_t> fill(l.layer_begin.begin(), l.layer_begin.end() - 1);
  for (uint32_t u = 0; u < n; ++u) l.layer_nodes[fill[l.layer[u]]++] = static_cast<int>(u);
  for (int k = 0; k < l.num_layers; ++k) {
    std::stable_sort(l.layer_nodes.begin() + l.layer_begin[k], l.layer_nodes.begin() + l.layer_begin[k + 1],
                     [&](int a, int b) { return l.center[a].x < l.center[b].x; });
  }
  detail::update_bounds(l);
  // Not a seed any more (Note [Stable layout]): no dummies to keep.
  l.dummy_begin.assign(graph.edges.size() + 1, 0);
  l.dummy_x.clear();
  return true;
}

std::vector<uint32_t> unit_generations(const GraphScene& scene, const FoldedGraph& folded, analysis::EventIndex at) {
  const analysis::Model& m = scene.model();
  const Generations& gens = scene.generations();
  const size_t slots = scene.nodes().size();
  std::vector<uint32_t> live(slots, UINT32_MAX), last(slots, UINT32_MAX);
  const auto& fs = m.functions();
  for (analysis::FunctionIndex f = 0; f < fs.size(); ++f) {  // in creation order
    if (fs[f].created_at > at) continue;
    const uint32_t slot = scene.slot_of(f);
    if (slot >= slots) continue;
    last[slot] = gens.of_function(f);
    if (fs[f].released_at == analysis::kNever || fs[f].released_at > at) live[slot] = last[slot];
  }
  auto of_slot = [&](uint32_t slot) -> uint32_t {
    if (slot >= slots) return 0;
    return live[slot] != UINT32_MAX ? live[slot] : last[slot] != UINT32_MAX ? last[slot] : 0;
  };
  std::vector<uint32_t> out(folded.group_of_unit.size(), 0);
  for (size_t u = 0; u < out.size(); ++u) {
    const uint32_t g = folded.group_of_unit[u];
    if (g == kNoGroup) {
      out[u] = of_slot(folded.node_of_unit[u]);
      continue;
    }
    uint32_t lowest = UINT32_MAX;
    for (uint32_t slot : scene.groups()[g].nodes) lowest = std::min(lowest, of_slot(slot));
    out[u] = lowest == UINT32_MAX ? 0 : lowest;
  }
  return out;
}

}  // namespace hookscope::render
