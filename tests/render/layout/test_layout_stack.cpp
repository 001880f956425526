// Note [Stacked leaves] headless, on the recovery-none sample mid-backward
// after rank 1 was rebuilt (two and three copies of each parameter live): a
// parent's leaves stand in one column, the rank is narrower, no box overlaps
// another and no edge runs through a box.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "trace/reader.h"

using namespace hookscope;
using namespace hookscope::render;

namespace {

float measure(std::string_view s) { return 7.f * static_cast<float>(s.size()); }

struct Compact {
  FoldedGraph folded;
  LayoutInput input;
};

Compact compact_at(const GraphScene& scene, const analysis::Model& m, size_t at) {
  analysis::Cursor cursor(m);
  cursor.seek(at);
  std::vector<uint8_t> keep(scene.nodes().size(), 0);
  for (const auto& f : cursor.state().functions) keep[scene.slot_of(f.function)] = 1;
  Compact c;
  c.folded = scene.fold({}, &keep);
  c.input.graph = c.folded.graph;
  c.input.sizes = scene.box_sizes(c.folded, measure, compact_metrics({}));
  return c;
}

std::map<int, float> rank_widths(const Layout& l, const LayoutGraph& g) {
  std::map<int, std::pair<float, float>> x;
  for (size_t u = 0; u < l.center.size(); ++u) {
    auto [it, fresh] = x.try_emplace(g.cluster[u], INFINITY, -INFINITY);
    it->second.first = std::min(it->second.first, l.center[u].x - l.size[u].x * 0.5f);
    it->second.second = std::max(it->second.second, l.center[u].x + l.size[u].x * 0.5f);
  }
  std::map<int, float> w;
  for (auto [rank, r] : x) w[rank] = r.second - r.first;
  return w;
}

bool inside(const Layout& l, size_t u, Vec2 p, float inset) {
  return std::abs(p.x - l.center[u].x) < l.size[u].x * 0.5f - inset &&
         std::abs(p.y - l.center[u].y) < l.size[u].y * 0.5f - inset;
}

Vec2 bezier(const Vec2* p, float t) {
  const float s = 1.f - t, a = s * s * s, b = 3 * s * s * t, c = 3 * s * t * t, d = t * t * t;
  return {a * p[0].x + b * p[1].x + c * p[2].x + d * p[3].x, a * p[0].y + b * p[1].y + c * p[2].y + d * p[3].y};
}

// What a reader of the picture checks: boxes apart, no edge through a box
// (its own ends excepted), every edge from its source's bottom to its target.
void check_readable(const Layout& l, const LayoutGraph& g, const std::string& where) {
  INFO(where);
  const size_t n = l.center.size();
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) {
      const bool apart = std::abs(l.center[a].x - l.center[b].x) >= 0.5f * (l.size[a].x + l.size[b].x) ||
                         std::abs(l.center[a].y - l.center[b].y) >= 0.5f * (l.size[a].y + l.size[b].y);
      CHECK_MESSAGE(apart, "boxes ", a, " and ", b, " overlap");
    }
  }
  size_t through = 0;
  for (size_t e = 0; e < g.edges.size(); ++e) {
    const auto [from, to] = g.edges[e];
    const uint32_t b = l.route_begin[e], end = l.route_begin[e + 1];
    REQUIRE((end - b) % 3 == 1);
    const Vec2 first = l.route[b], last = l.route[end - 1];
    CHECK(std::abs(first.y - (l.center[from].y + l.size[from].y * 0.5f)) < 0.5f);
    // The end on the target's outline (top, or a stacked leaf's left side).
    const float dx = std::abs(last.x - l.center[to].x) - l.size[to].x * 0.5f;
    const float dy = std::abs(last.y - l.center[to].y) - l.size[to].y * 0.5f;
    CHECK(std::max(dx, dy) == doctest::Approx(0.f).epsilon(0.01).scale(1.f));
    for (uint32_t i = b; i + 3 < end; i += 3) {
      for (int k = 0; k <= 16; ++k) {
        const Vec2 p = bezier(&l.route[i], static_cast<float>(k) / 16.f);
        for (size_t u = 0; u < n; ++u) {
          if (static_cast<int>(u) != from && static_cast<int>(u) != to && inside(l, u, p, 1.f)) ++through;
        }
      }
    }
  }
  CHECK_MESSAGE(through == 0, through, " points of edges inside boxes");
}

}  // namespace

TEST_CASE("stacked leaves: a rebuilt rank's parameter copies stand in a column under their Function, "
          "the rank is narrower, nothing overlaps, no edge crosses a box") {
  const analysis::Model m(trace::read_trace(std::string(HOOKSCOPE_SAMPLES_DIR) + "/recovery-none.hstrace"));
  const GraphScene scene(m);
  // Mid-backward once rank 1 was rebuilt (the samples are recorded by two
  // threads at build time, so the events are found by what happens there).
  const auto& built = m.events_of_kind(trace::EventKind::kReducerConstructed);
  REQUIRE(built.size() > 2);
  size_t events = 0, stacked_events = 0;
  for (const size_t b : m.events_of_kind(trace::EventKind::kBackwardBegin)) {
    if (b < built[2] || b + 12 >= m.num_events()) continue;
    for (const size_t at : {b + 5, b + 12}) {
      ++events;
      const Compact c = compact_at(scene, m, at);
      const LayoutOptions stacked = compact_layout_options({});
      REQUIRE(stacked.stack_leaves);
      LayoutOptions side_by_side = stacked;
      side_by_side.stack_leaves = false;
      const Layout l = compute_layout(c.input, stacked), wide = compute_layout(c.input, side_by_side);
      const std::string where = "#" + std::to_string(at);
      check_readable(l, c.input.graph, where + " stacked");
      // Where stacking would widen a rank, compute_layout keeps the side-by-side layout whole.
      bool kept_wide = l.center.size() == wide.center.size();
      for (size_t v = 0; kept_wide && v < l.center.size(); ++v) {
        kept_wide = l.center[v].x == wide.center[v].x && l.center[v].y == wide.center[v].y;
      }
      if (kept_wide) continue;
      // A parent with several leaf children: they share a column, one below the other.
      const LayoutGraph& g = c.input.graph;
      std::vector<int> in(l.center.size(), 0), out(l.center.size(), 0);
      for (auto [a, b] : g.edges) ++out[a], ++in[b];
      std::map<int, std::vector<int>> leaves;
      for (auto [a, b] : g.edges) {
        if (out[b] == 0 && in[b] == 1 && g.cluster[a] == g.cluster[b]) leaves[a].push_back(b);
      }
      size_t stacks = 0;
      for (auto& [parent, ls] : leaves) {
        if (ls.size() < 2) continue;
        ++stacks;
        std::sort(ls.begin(), ls.end());
        for (size_t j = 1; j < ls.size(); ++j) {
          const float lo = std::max(l.center[ls[j]].x - l.size[ls[j]].x * 0.5f, l.center[ls[0]].x - l.size[ls[0]].x * 0.5f);
          const float hi = std::min(l.center[ls[j]].x + l.size[ls[j]].x * 0.5f, l.center[ls[0]].x + l.size[ls[0]].x * 0.5f);
          CHECK(lo < hi);  // one column
          CHECK(l.center[ls[j]].y > l.center[ls[j - 1]].y);  // below the one before
        }
      }
      // Never notably wider than side by side (Note [Narrow columns]: both
      // pulled to their centres and bound to their widest layer, within 2
      // gaps), far narrower than side by side as the layered layout alone
      // places it.
      LayoutOptions layered = side_by_side;
      layered.center_pull = 0.f;
      const std::map<int, float> narrow = rank_widths(l, g), pulled = rank_widths(wide, g),
                                 before = rank_widths(compute_layout(c.input, layered), g);
      for (auto [rank, w] : narrow) CHECK(w <= pulled.at(rank) + 2.f * stacked.node_gap);
      if (stacks < 3) continue;  // rank 1's parameters in two or three copies, each under one Function
      ++stacked_events;
      INFO(where << ": rank 1 " << before.at(1) << " wide side by side, " << narrow.at(1) << " stacked");
      CHECK(narrow.at(1) < 0.8f * before.at(1));
    }
  }
  CHECK(events >= 4);
  CHECK(stacked_events >= 2);
}

TEST_CASE("stacked leaves: only the compact view's layout stacks; the full layout is the layered one") {
  CHECK_FALSE(LayoutOptions{}.stack_leaves);
  CHECK(compact_layout_options({}).stack_leaves);
  // A parent with three leaves and a child with its own child.
  LayoutInput in;
  in.graph.num_nodes = 6;
  in.graph.edges = {{0, 1}, {0, 2}, {0, 3}, {0, 4}, {4, 5}};
  LayoutOptions o;
  const Layout full = compute_layout(in, o);
  for (int v = 1; v <= 4; ++v) CHECK(full.layer[v] == 1);  // siblings side by side
  o.stack_leaves = true;
  const Layout stacked = compute_layout(in, o);
  CHECK(stacked.layer[1] == 1);
  CHECK(stacked.layer[2] == 2);
  CHECK(stacked.layer[3] == 3);
  CHECK(stacked.max.x - stacked.min.x < full.max.x - full.min.x);
  check_readable(stacked, in.graph, "three leaves");
}

// Note [Narrow columns]: a transformer's backward as the compact view lays it
// out, per block a Function whose children are a long parameter name's leaf
// (left), the backbone's next Function and a TBackward whose leaf is the
// weight's (right). Without center_pull each block drifts right of the one
// above, a staircase; with it a rank is about as wide as its widest layer.
TEST_CASE("narrow columns: a transformer-like chain of blocks is about as wide as its widest layer") {
  constexpr int kBlocks = 8;
  LayoutInput in;
  auto add = [&](float width, int rank) {
    in.sizes.push_back({width, 23.f});
    in.graph.cluster.push_back(rank);
    return in.graph.num_nodes++;
  };
  float widest_layer = 0.f;
  for (int rank = 0; rank < 2; ++rank) {
    int top = add(110.f, rank);
    for (int b = 0; b < kBlocks; ++b) {
      const int bias = add(250.f, rank), view = add(100.f, rank), t = add(85.f, rank), weight = add(260.f, rank);
      in.graph.edges.insert(in.graph.edges.end(), {{top, bias}, {top, view}, {top, t}, {t, weight}});
      widest_layer = 250.f + 100.f + 85.f + 2.f * compact_layout_options({}).node_gap;
      const int next = add(110.f, rank);
      in.graph.edges.push_back({view, next});
      top = next;
    }
  }
  const LayoutOptions narrow = compact_layout_options({});
  REQUIRE(narrow.center_pull > 0.f);
  LayoutOptions drifting = narrow;
  drifting.center_pull = 0.f;
  const Layout l = compute_layout(in, narrow), d = compute_layout(in, drifting);
  check_readable(l, in.graph, "pulled to the centre");
  const std::map<int, float> w = rank_widths(l, in.graph), before = rank_widths(d, in.graph);
  for (const auto& entry : w) {
    // Not a structured binding: INFO captures it in a lambda, which clang 14
    // (the sanitizer build) refuses for bindings.
    const int rank = entry.first;
    const float width = entry.second;
    INFO("rank " << rank << ": " << width << " wide, " << before.at(rank) << " without the pull; widest layer "
                 << widest_layer);
    CHECK(width <= 1.25f * widest_layer);
    CHECK(width < before.at(rank));
  }
  CHECK(LayoutOptions{}.center_pull == 0.f);  // the full view keeps its layout
}
