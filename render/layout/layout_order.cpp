// Step 4 of Note [Layered layout]: the order of items within each layer.

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <string>

#include "render/layout/layout_internal.h"

namespace hookscope::render::detail {

namespace {

std::vector<int> positions(const Layered& g) {
  std::vector<int> pos(static_cast<size_t>(g.num_items()));
  for (const auto& row : g.order) {
    for (size_t i = 0; i < row.size(); ++i) pos[row[i]] = static_cast<int>(i);
  }
  return pos;
}

// Crossings between layer l and l + 1 by counting inversions with an
// accumulator tree (Barth, Jünger, Mutzel 2002): O(segments log width).
size_t count_between(const Layered& g, int l, const std::vector<int>& pos,
                     std::vector<int>& lower, std::vector<size_t>& tree) {
  lower.clear();
  for (int a : g.order[l]) {
    const size_t first = lower.size();
    for (uint32_t i = g.down_begin[a]; i < g.down_begin[a + 1]; ++i) {
      lower.push_back(pos[g.down[i]]);
    }
    std::sort(lower.begin() + static_cast<std::ptrdiff_t>(first), lower.end());
  }
  size_t leaves = 1;
  while (leaves < g.order[l + 1].size()) leaves *= 2;
  tree.assign(2 * leaves - 1, 0);
  size_t crossings = 0;
  for (int p : lower) {
    size_t index = static_cast<size_t>(p) + leaves - 1;
    ++tree[index];
    while (index > 0) {
      if (index % 2) crossings += tree[index + 1];  // a left child: count its right sibling
      index = (index - 1) / 2;
      ++tree[index];
    }
  }
  return crossings;
}

// A DFS from the roots, component by component, each child in edge order:
// a tree comes out with no crossing, and components stay blocks.
void dfs_order(Layered& g) {
  const int items = g.num_items();
  std::vector<int> roots;
  for (int v = 0; v < items; ++v) {
    if (g.up_begin[v] == g.up_begin[v + 1]) roots.push_back(v);
  }
  std::stable_sort(roots.begin(), roots.end(),
                   [&](int a, int b) { return g.component[a] < g.component[b]; });
  std::vector<uint8_t> seen(static_cast<size_t>(items), 0);
  std::vector<int> stack;
  for (int r : roots) {
    stack.push_back(r);
    while (!stack.empty()) {
      const int v = stack.back();
      stack.pop_back();
      if (seen[v]) continue;
      seen[v] = 1;
      g.order[g.layer[v]].push_back(v);
      for (uint32_t i = g.down_begin[v + 1]; i-- > g.down_begin[v];) {
        if (!seen[g.down[i]]) stack.push_back(g.down[i]);
      }
    }
  }
}

// Reorders layer l by the barycenter of its neighbours in the layer given by
// (begin, nbr). Items with no such neighbour keep their slot, so a sweep
// never scatters them, and the sort keys start with the component.
void barycenter_layer(Layered& g, int l, const std::vector<uint32_t>& begin,
                      const std::vector<int>& nbr, std::vector<int>& pos,
                      std::vector<std::pair<float, int>>& scratch, std::vector<int>& slots) {
  auto& row = g.order[l];
  scratch.clear();
  slots.clear();
  for (size_t i = 0; i < row.size(); ++i) {
    const int v = row[i];
    const uint32_t b = begin[v], e = begin[v + 1];
    if (b == e) continue;
    float sum = 0.f;
    for (uint32_t k = b; k < e; ++k) sum += static_cast<float>(pos[nbr[k]]);
    scratch.push_back({sum / static_cast<float>(e - b), v});
    slots.push_back(static_cast<int>(i));
  }
  std::stable_sort(scratch.begin(), scratch.end(), [&](const auto& p, const auto& q) {
    if (g.component[p.second] != g.component[q.second]) {
      return g.component[p.second] < g.component[q.second];
    }
    return p.first < q.first;
  });
  for (size_t k = 0; k < slots.size(); ++k) row[slots[k]] = scratch[k].second;
  for (size_t i = 0; i < row.size(); ++i) pos[row[i]] = static_cast<int>(i);
}

// Crossings among the edges of u and v toward one neighbouring layer if u
// stays left of v.
size_t pair_crossings(const std::vector<uint32_t>& begin, const std::vector<int>& nbr,
                      const std::vector<int>& pos, int u, int v) {
  size_t c = 0;
  for (uint32_t i = begin[u]; i < begin[u + 1]; ++i) {
    for (uint32_t j = begin[v]; j < begin[v + 1]; ++j) c += pos[nbr[i]] > pos[nbr[j]];
  }
  return c;
}

// Swaps neighbours in a layer while that removes crossings (Gansner et al.'s
// "transpose"). Pairs whose degrees multiply past a cap are left alone: a
// hub's crossings are cheaper to leave than to count.
bool transpose(Layered& g, std::vector<int>& pos, const std::atomic<bool>* cancel) {
  bool any = false;
  for (int l = 0; l < g.num_layers; ++l) {
    if (cancelled(cancel)) return false;
    auto& row = g.order[l];
    for (size_t i = 0; i + 1 < row.size(); ++i) {
      const int u = row[i], v = row[i + 1];
      if (g.component[u] != g.component[v]) continue;
      const size_t du = (g.up_begin[u + 1] - g.up_begin[u]) + (g.down_begin[u + 1] - g.down_begin[u]);
      const size_t dv = (g.up_begin[v + 1] - g.up_begin[v]) + (g.down_begin[v + 1] - g.down_begin[v]);
      if (du * dv == 0 || du * dv > 256) continue;
      const size_t keep = pair_crossings(g.up_begin, g.up, pos, u, v) +
                          pair_crossings(g.down_begin, g.down, pos, u, v);
      const size_t swap = pair_crossings(g.up_begin, g.up, pos, v, u) +
                          pair_crossings(g.down_begin, g.down, pos, v, u);
      if (swap < keep) {
        std::swap(row[i], row[i + 1]);
        pos[u] = static_cast<int>(i + 1);
        pos[v] = static_cast<int>(i);
        any = true;
      }
    }
  }
  return any;
}

// Note [Stable layout]: seeded items keep their old x and order. A new
// item's target is the mean x of its neighbours that have one (looking
// down, then up); it goes into the gap of its layer that fits it and lies
// nearest its target, so no old box has to move to make room. Items with no
// target go to the right end.
void seeded_order(Layered& g, const SeedX& seed_x, const LayoutOptions& options) {
  std::vector<float> target = seed_x;
  auto fill = [&](const std::vector<uint32_t>& begin, const std::vector<int>& nbr, int v) {
    if (!std::isnan(target[v])) return;
    float sum = 0.f;
    int count = 0;
    for (uint32_t i = begin[v]; i < begin[v + 1]; ++i) {
      if (!std::isnan(target[nbr[i]])) {
        sum += target[nbr[i]];
        ++count;
      }
    }
    if (count) target[v] = sum / static_cast<float>(count);
  };
  std::vector<std::vector<int>> fresh(static_cast<size_t>(g.num_layers));
  for (int v = 0; v < g.num_items(); ++v) {
    (std::isnan(seed_x[v]) ? fresh : g.order)[g.layer[v]].push_back(v);
  }
  for (int l = 0; l < g.num_layers; ++l) {
    for (int v : fresh[l]) fill(g.up_begin, g.up, v);
  }
  for (int l = g.num_layers; l-- > 0;) {
    for (int v : fresh[l]) fill(g.down_begin, g.down, v);
  }
  g.start_x = seed_x;
  std::vector<float>& x = g.start_x;
  for (int l = 0; l < g.num_layers; ++l) {
    auto& row = g.order[l];
    std::stable_sort(row.begin(), row.end(), [&](int a, int b) { return x[a] < x[b]; });
    std::stable_sort(fresh[l].begin(), fresh[l].end(), [&](int a, int b) {
      const bool na = std::isnan(target[a]), nb = std::isnan(target[b]);
      return na != nb ? nb : !na && target[a] < target[b];
    });
    // Note [Large graphs]: inserting one by one costs the row's length per
    // item; past a budget the new items line up at the right end instead.
    if (fresh[l].size() * (row.size() + fresh[l].size()) > (size_t{1} << 26)) {
      for (int v : fresh[l]) {
        x[v] = row.empty() ? 0.f : x[row.back()] + separation(g, options, row.back(), v);
        row.push_back(v);
      }
      continue;
    }
    for (int v : fresh[l]) {
      const size_t k = row.size();
      // Gap i lies between row[i - 1] and row[i]; v fits there when the
      // range [lo, hi] of centres that keep both separations is not empty.
      auto range = [&](size_t i) {
        const float lo = i > 0 ? x[row[i - 1]] + separation(g, options, row[i - 1], v) : -INFINITY;
        const float hi = i < k ? x[row[i]] - separation(g, options, v, row[i]) : INFINITY;
        return std::pair(lo, hi);
      };
      size_t best = k;
      float best_x = k ? range(k).first : 0.f, best_cost = INFINITY;
      if (!std::isnan(target[v])) {
        const float t = target[v];
        auto consider = [&](size_t i) {
          auto [lo, hi] = range(i);
          if (lo > hi) return;
          const float at = std::clamp(t, lo, hi), cost = std::abs(at - t);
          if (cost < best_cost) {
            best = i;
            best_x = at;
            best_cost = cost;
          }
        };
        const size_t mid = static_cast<size_t>(
            std::lower_bound(row.begin(), row.end(), t, [&](int a, float value) { return x[a] < value; }) -
            row.begin());
        // Outward from the target; a gap farther than the best found cannot win.
        for (size_t i = mid + 1; i-- > 0;) {
          if (i < k && t - x[row[i]] > best_cost) break;
          consider(i);
        }
        for (size_t i = mid + 1; i <= k; ++i) {
          if (i > 0 && x[row[i - 1]] - t > best_cost) break;
          consider(i);
        }
      }
      x[v] = best_x;
      row.insert(row.begin() + static_cast<std::ptrdiff_t>(best), v);
    }
  }
}

}  // namespace

size_t count_crossings(const Layered& g) {
  const std::vector<int> pos = positions(g);
  std::vector<int> lower;
  std::vector<size_t> tree;
  size_t total = 0;
  for (int l = 0; l + 1 < g.num_layers; ++l) total += count_between(g, l, pos, lower, tree);
  return total;
}

size_t order_layers(Layered& g, const LayoutOptions& options, const SeedX* seed_x,
                    const std::atomic<bool>* cancel) {
  g.order.assign(static_cast<size_t>(g.num_layers), {});
  if (seed_x) {
    seeded_order(g, *seed_x, options);
    return count_crossings(g);
  }
  dfs_order(g);
  std::vector<int> pos = positions(g);
  size_t best = count_crossings(g);
  std::vector<std::vector<int>> best_order = g.order;
  std::vector<std::pair<float, int>> scratch;
  std::vector<int> slots;
  int stale = 0;
  const bool large = is_large(g, options);  // Note [Large graphs]
  const int sweeps = large ? std::min(options.max_sweeps, options.large_sweeps) : options.max_sweeps;
  for (int sweep = 0; sweep < sweeps && best > 0; ++sweep) {
    if (sweep % 2 == 0) {
      for (int l = 1; l < g.num_layers; ++l) {
        if (cancelled(cancel)) return best;
        barycenter_layer(g, l, g.up_begin, g.up, pos, scratch, slots);
      }
    } else {
      for (int l = g.num_layers - 1; l-- > 0;) {
        if (cancelled(cancel)) return best;
        barycenter_layer(g, l, g.down_begin, g.down, pos, scratch, slots);
      }
    }
    for (int pass = 0; pass < 4 && !large && transpose(g, pos, cancel); ++pass) {
    }
    const size_t c = count_crossings(g);
    if (c < best) {
      best = c;
      best_order = g.order;
      stale = 0;
    } else if (++stale >= 4) {
      break;
    }
  }
  g.order = std::move(best_order);
  return best;
}

}  // namespace hookscope::render::detail

namespace hookscope::render {

using detail::Layered;
using detail::UniqueEdge;

size_t count_crossings_naive(const LayoutGraph& graph, std::span<const int> layer) {
  detail::check_edges(graph);
  const int n = graph.num_nodes;
  std::vector<UniqueEdge> edges;
  for (auto [a, b] : graph.edges) {
    if (layer[a] >= layer[b]) {
      throw std::invalid_argument("count_crossings_naive: edge (" + std::to_string(a) + ", " +
                                  std::to_string(b) + ") does not go down the layers");
    }
    edges.push_back({a, b, 1.f, -1});
  }
  std::sort(edges.begin(), edges.end(), [](const UniqueEdge& p, const UniqueEdge& q) {
    return std::pair(p.from, p.to) < std::pair(q.from, q.to);
  });
  edges.erase(std::unique(edges.begin(), edges.end(),
                          [](const UniqueEdge& p, const UniqueEdge& q) {
                            return p.from == q.from && p.to == q.to;
                          }),
              edges.end());
  Layered g = detail::build_layered(n, edges, {layer.begin(), layer.end()},
                            std::vector<int>(static_cast<size_t>(n), 0),
                            std::vector<Vec2>(static_cast<size_t>(n)), LayoutOptions{});
  // Nodes in index order; a dummy sits where its edge's source would.
  std::vector<std::pair<int, int>> key(static_cast<size_t>(g.num_items()));
  for (int v = 0; v < n; ++v) key[v] = {v, -1};
  for (size_t e = 0; e < edges.size(); ++e) {
    for (uint32_t i = g.chain_begin[e] + 1; i + 1 < g.chain_begin[e + 1]; ++i) {
      key[g.chain[i]] = {edges[e].from, static_cast<int>(e)};
    }
  }
  g.order.assign(static_cast<size_t>(g.num_layers), {});
  for (int item = 0; item < g.num_items(); ++item) g.order[g.layer[item]].push_back(item);
  for (auto& row : g.order) {
    std::sort(row.begin(), row.end(), [&](int a, int b) { return key[a] < key[b]; });
  }
  return detail::count_crossings(g);
}

}  // namespace hookscope::render
