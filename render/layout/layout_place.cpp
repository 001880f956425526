// Step 5 of Note [Layered layout]: x coordinates.

#include <algorithm>
#include <cmath>

#include "render/layout/layout_internal.h"

namespace hookscope::render::detail {

float separation(const Layered& g, const LayoutOptions& o, int a, int b) {
  float gap;
  if (g.component[a] != g.component[b]) {
    gap = 2.f * o.node_gap;
  } else if (g.is_dummy(a) && g.is_dummy(b)) {
    gap = o.dummy_gap;
  } else if (g.is_dummy(a) || g.is_dummy(b)) {
    gap = std::max(o.dummy_gap, 0.5f * o.node_gap);
  } else {
    gap = o.node_gap;
  }
  return 0.5f * (g.width[a] + g.width[b]) + gap;
}

namespace {

// Minimises sum w_i (x_i - t_i)^2 subject to x_{i+1} - x_i >= s_i, exactly,
// in O(n): with y_i = x_i - (s_0 + .. + s_{i-1}) the constraint reads
// "y is nondecreasing", a weighted isotonic regression that
// pool-adjacent-violators solves by merging blocks whose means are out of
// order.
class IsotonicSolver {
 public:
  void solve(const std::vector<double>& target, const std::vector<double>& weight,
             const std::vector<double>& offset, std::vector<double>& result) {
    blocks_.clear();
    const size_t n = target.size();
    for (size_t i = 0; i < n; ++i) {
      Block b{weight[i], weight[i] * (target[i] - offset[i]), i, i + 1};
      while (!blocks_.empty() && blocks_.back().mean() >= b.mean()) {
        const Block& p = blocks_.back();
        b = {p.w + b.w, p.wt + b.wt, p.begin, b.end};
        blocks_.pop_back();
      }
      blocks_.push_back(b);
    }
    result.resize(n);
    for (const Block& b : blocks_) {
      const double y = b.mean();
      for (size_t i = b.begin; i < b.end; ++i) result[i] = y + offset[i];
    }
  }

 private:
  struct Block {
    double w, wt;
    size_t begin, end;
    double mean() const { return wt / w; }
  };
  std::vector<Block> blocks_;
};

// Note [Narrow columns]: per component, the mean x of its real nodes.
std::vector<double> component_centers(const Layered& g, const std::vector<float>& x) {
  int components = 0;
  for (int v = 0; v < g.num_nodes; ++v) components = std::max(components, g.component[v] + 1);
  std::vector<double> center(static_cast<size_t>(components), 0.0), count(center.size(), 0.0);
  for (int v = 0; v < g.num_nodes; ++v) {
    center[g.component[v]] += x[v];
    count[g.component[v]] += 1.0;
  }
  for (size_t c = 0; c < center.size(); ++c) center[c] /= std::max(count[c], 1.0);
  return center;
}

// Note [Narrow columns]: each layer's run of a component (its items there
// are contiguous) moved whole into a band as wide as the component's widest
// run, around its centre, as far as its neighbours in the layer allow.
void bound_columns(const Layered& g, const LayoutOptions& o, std::vector<float>& x) {
  const std::vector<double> center = component_centers(g, x);
  std::vector<double> widest(center.size(), 0.0);
  auto runs = [&](auto&& each) {
    for (int l = 0; l < g.num_layers; ++l) {
      const auto& row = g.order[l];
      for (size_t b = 0, e; b < row.size(); b = e) {
        for (e = b + 1; e < row.size() && g.component[row[e]] == g.component[row[b]];) ++e;
        each(row, b, e, x[row[b]] - 0.5 * g.width[row[b]], x[row[e - 1]] + 0.5 * g.width[row[e - 1]]);
      }
    }
  };
  runs([&](const auto& row, size_t b, size_t, double lo, double hi) {
    double& w = widest[g.component[row[b]]];
    w = std::max(w, hi - lo);
  });
  runs([&](const auto& row, size_t b, size_t e, double lo, double hi) {
    const int c = g.component[row[b]];
    const double left = center[c] - 0.5 * widest[c], right = center[c] + 0.5 * widest[c];
    double shift = lo < left ? left - lo : hi > right ? right - hi : 0.0;
    if (shift < 0.0 && b > 0) shift = std::max<double>(shift, x[row[b - 1]] + separation(g, o, row[b - 1], row[b]) - x[row[b]]);
    if (shift > 0.0 && e < row.size()) shift = std::min<double>(shift, x[row[e]] - separation(g, o, row[e - 1], row[e]) - x[row[e - 1]]);
    if (std::abs(shift) < 1e-3) return;
    for (size_t i = b; i < e; ++i) x[row[i]] += static_cast<float>(shift);
  });
}

}  // namespace

std::vector<float> place_x(const Layered& g, const LayoutOptions& options, const SeedX* seed_x,
                           const std::atomic<bool>* cancel) {
  const int items = g.num_items();
  std::vector<float> x(static_cast<size_t>(items), 0.f);
  auto anchored = [&](int v) { return seed_x && !std::isnan((*seed_x)[v]); };
  // An old item outweighs any pull of edges: it moves only when its layer
  // cannot be packed otherwise (a box grew, say).
  constexpr double kAnchor = 1e6;

  std::vector<double> target, weight, offset, result;
  IsotonicSolver solver;
  // Solves one layer toward `pull(v, &t, &w)`'s targets.
  auto solve_layer = [&](int l, auto&& pull) {
    const auto& row = g.order[l];
    const size_t n = row.size();
    target.resize(n);
    weight.resize(n);
    offset.resize(n);
    double o = 0.0;
    for (size_t i = 0; i < n; ++i) {
      if (i > 0) o += separation(g, options, row[i - 1], row[i]);
      offset[i] = o;
      pull(row[i], target[i], weight[i]);
    }
    solver.solve(target, weight, offset, result);
    for (size_t i = 0; i < n; ++i) x[row[i]] = static_cast<float>(result[i]);
  };
  // The weighted mean of the neighbours' x (and of its component's centre,
  // Note [Narrow columns]); an anchored item is pulled to its old x only, so
  // it moves only when pushed (Note [Stable layout]).
  std::vector<double> center;  // per component, this sweep's
  auto neighbours = [&](int v, double& t, double& w) {
    if (anchored(v)) {
      t = (*seed_x)[v];
      w = kAnchor;
      return;
    }
    double sum = 0.0, total = 0.0;
    for (uint32_t i = g.up_begin[v]; i < g.up_begin[v + 1]; ++i) {
      sum += g.up_weight[i] * x[g.up[i]];
      total += g.up_weight[i];
    }
    for (uint32_t i = g.down_begin[v]; i < g.down_begin[v + 1]; ++i) {
      sum += g.down_weight[i] * x[g.down[i]];
      total += g.down_weight[i];
    }
    if (!center.empty()) {
      sum += options.center_pull * center[g.component[v]];
      total += options.center_pull;
    }
    if (total > 0.0) {
      t = sum / total;
      w = total;
    } else {
      t = x[v];
      w = 1e-3;
    }
  };

  // Start: every layer packed from 0 (unseeded), or the old x where known
  // and the first neighbour's x (in order of the sweep) for new items.
  for (int l = 0; l < g.num_layers; ++l) {
    const auto& row = g.order[l];
    float left = 0.f;
    for (size_t i = 0; i < row.size(); ++i) {
      const int v = row[i];
      if (i > 0) left += separation(g, options, row[i - 1], v);
      x[v] = seed_x ? g.start_x[v] : left;
    }
  }
  if (seed_x) {
    for (int l = 0; l < g.num_layers; ++l) {
      solve_layer(l, [&](int v, double& t, double& w) {
        t = x[v];
        w = anchored(v) ? kAnchor : 1e-3;
      });
    }
  }
  const int sweeps = is_large(g, options) ? std::min(options.placement_sweeps, 2 * options.large_sweeps)
                                          : options.placement_sweeps;  // Note [Large graphs]
  for (int sweep = 0; sweep < sweeps; ++sweep) {
    if (options.center_pull > 0.f) center = component_centers(g, x);
    if (sweep % 2 == 0) {
      for (int l = 0; l < g.num_layers; ++l) {
        if (cancelled(cancel)) return x;
        solve_layer(l, neighbours);
      }
    } else {
      for (int l = g.num_layers; l-- > 0;) {
        if (cancelled(cancel)) return x;
        solve_layer(l, neighbours);
      }
    }
  }
  if (!seed_x && options.center_pull > 0.f) bound_columns(g, options, x);
  if (!seed_x) {
    float lo = INFINITY;
    for (int v = 0; v < items; ++v) lo = std::min(lo, x[v] - 0.5f * g.width[v]);
    if (items > 0) {
      for (float& value : x) value -= lo;
    }
  }
  return x;
}

}  // namespace hookscope::render::detail
