// Layered layout (render/layout/layout.h): layers, overlap, crossings, routes,
// determinism, stability and cancellation, on random DAGs and on the
// autograd-shaped sample graphs.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <random>

#include "render/layout/layout.h"
#include "render/layout/layout_job.h"
#include "render/sample_graphs.h"

using namespace hookscope::render;

namespace {

LayoutGraph random_dag(std::mt19937& gen, int n, int m) {
  LayoutGraph g;
  g.num_nodes = n;
  for (int e = 0; e < m; ++e) {
    int a = static_cast<int>(gen() % n), b = static_cast<int>(gen() % n);
    if (a == b) continue;
    g.edges.emplace_back(std::min(a, b), std::max(a, b));
  }
  return g;
}

// Every pair of boxes, in a sweep over x: the boxes' interiors are disjoint.
size_t count_overlaps(const Layout& l) {
  std::vector<int> by_left(l.center.size());
  for (size_t v = 0; v < by_left.size(); ++v) by_left[v] = static_cast<int>(v);
  auto left = [&](int v) { return l.center[v].x - l.size[v].x * 0.5f; };
  std::sort(by_left.begin(), by_left.end(), [&](int a, int b) { return left(a) < left(b); });
  size_t overlaps = 0;
  for (size_t i = 0; i < by_left.size(); ++i) {
    const int a = by_left[i];
    const float right = l.center[a].x + l.size[a].x * 0.5f;
    for (size_t j = i + 1; j < by_left.size() && left(by_left[j]) < right; ++j) {
      const int b = by_left[j];
      if (std::abs(l.center[a].y - l.center[b].y) < 0.5f * (l.size[a].y + l.size[b].y)) {
        ++overlaps;
      }
    }
  }
  return overlaps;
}

void check_layout(const LayoutGraph& g, const Layout& l) {
  REQUIRE(!l.cancelled);
  REQUIRE(l.center.size() == static_cast<size_t>(g.num_nodes));
  CHECK(count_overlaps(l) == 0);
  for (size_t e = 0; e < g.edges.size(); ++e) {
    auto [a, b] = g.edges[e];
    CHECK(l.layer[a] < l.layer[b]);
    // The route starts on the bottom of its source and ends on the top of
    // its target, as a chain of cubic Béziers.
    const uint32_t rb = l.route_begin[e], re = l.route_begin[e + 1];
    REQUIRE(re - rb >= 4);
    CHECK((re - rb - 1) % 3 == 0);
    const Vec2 p0 = l.route[rb], p1 = l.route[re - 1];
    CHECK(p0.y == doctest::Approx(l.center[a].y + l.size[a].y * 0.5f));
    CHECK(std::abs(p0.x - l.center[a].x) <= l.size[a].x * 0.5f);
    CHECK(p1.y == doctest::Approx(l.center[b].y - l.size[b].y * 0.5f));
    CHECK(std::abs(p1.x - l.center[b].x) <= l.size[b].x * 0.5f);
  }
}

LayoutInput input(LayoutGraph g, std::vector<Vec2> sizes = {}) {
  LayoutInput in;
  in.graph = std::move(g);
  in.sizes = std::move(sizes);
  return in;
}

bool same(const Layout& a, const Layout& b) {
  auto eq = [](const std::vector<Vec2>& p, const std::vector<Vec2>& q) {
    return std::equal(p.begin(), p.end(), q.begin(), q.end(),
                      [](Vec2 u, Vec2 v) { return u.x == v.x && u.y == v.y; });
  };
  return eq(a.center, b.center) && eq(a.route, b.route) && a.layer == b.layer &&
         a.crossings == b.crossings;
}

}  // namespace

TEST_CASE("layering: every edge goes from a lower to a higher layer, on random DAGs") {
  std::mt19937 gen(42);
  for (int trial = 0; trial < 20; ++trial) {
    LayoutGraph g = random_dag(gen, 50, 120);
    auto layer = assign_layers(g);
    for (auto [a, b] : g.edges) CHECK(layer[a] < layer[b]);
  }
}

TEST_CASE("layering rejects cycles and bad edges") {
  CHECK_THROWS_WITH(assign_layers({3, {{0, 1}, {1, 2}, {2, 0}}}), doctest::Contains("cycle"));
  CHECK_THROWS_WITH(assign_layers({2, {{0, 5}}}), doctest::Contains("outside"));
  CHECK_THROWS_WITH(compute_layout(input({2, {{0, 5}}})), doctest::Contains("outside"));
  CHECK_THROWS_WITH(compute_layout(input({2, {}}, {{1, 1}})), doctest::Contains("one size per node"));
}

TEST_CASE("layout of random DAGs: no overlap, edges go down, routes join the boxes, deterministic") {
  std::mt19937 gen(7);
  for (int trial = 0; trial < 30; ++trial) {
    CAPTURE(trial);
    const int n = 10 + static_cast<int>(gen() % 120);
    LayoutInput in = input(random_dag(gen, n, n * 2));
    for (int v = 0; v < n; ++v) {  // boxes of different sizes, as text makes them
      in.sizes.push_back({40.f + static_cast<float>(gen() % 160), 24.f + static_cast<float>(gen() % 30)});
    }
    const Layout l = compute_layout(in);
    check_layout(in.graph, l);
    CHECK(same(l, compute_layout(in)));
  }
}

TEST_CASE("layout of the autograd-shaped graphs: no overlap, edges go down, compact") {
  for (const SampleGraph& s : {make_mlp_graph(400), make_residual_graph(400),
                               make_transformer_graph(400)}) {
    const Layout l = compute_layout(input(s.graph, s.sizes));
    check_layout(s.graph, l);
    // Compact: the picture is not much wider than its widest layer packed tight.
    float widest = 0.f;
    for (int k = 0; k < l.num_layers; ++k) {
      float w = 0.f;
      for (uint32_t i = l.layer_begin[k]; i < l.layer_begin[k + 1]; ++i) {
        w += l.size[l.layer_nodes[i]].x + LayoutOptions{}.node_gap;
      }
      widest = std::max(widest, w);
    }
    CHECK(l.max.x - l.min.x <= 2.5f * widest);
  }
}

TEST_CASE("a folded graph with a cycle still lays out: the closing edge is reversed") {
  const LayoutGraph g{4, {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {2, 2}}};
  const Layout l = compute_layout(input(g));
  CHECK(l.reversed == std::vector<uint8_t>{0, 0, 0, 1, 0});
  CHECK(l.route_begin[5] == l.route_begin[4]);  // no route for a self loop
  CHECK(l.layer[1] < l.layer[2]);
  CHECK(l.layer[2] < l.layer[3]);
  CHECK(count_overlaps(l) == 0);
}

TEST_CASE("crossing reduction: at most half the crossings of the naive order, on fixed graphs") {
  // Random DAGs in shuffled node order and the autograd shapes, laid out
  // with the same layers; naive = nodes in input order (count_crossings_naive).
  size_t ours = 0, naive = 0;
  std::vector<SampleGraph> graphs;
  for (uint64_t seed = 1; seed <= 8; ++seed) graphs.push_back(make_random_dag(150, 1.3, seed));
  graphs.push_back(make_residual_graph(600));
  graphs.push_back(make_transformer_graph(600));
  for (const SampleGraph& s : graphs) {
    const Layout l = compute_layout(input(s.graph, s.sizes));
    const size_t base = count_crossings_naive(s.graph, l.layer);
    CAPTURE(s.graph.num_nodes);
    CHECK(l.crossings <= base / 2);
    ours += l.crossings;
    naive += base;
  }
  MESSAGE("crossings: ", ours, " vs naive ", naive);
  CHECK(ours * 2 <= naive);
}

TEST_CASE("stable layout: adding one Function moves few boxes") {
  // Note [Stable layout]. Stated bound: with the seed, at most 2% of the
  // old boxes move by more than half a pixel when one Function is added,
  // and none moves to another layer. (A new root above a layer-0 Function
  // would push the whole graph down one layer; not covered.)
  for (uint64_t seed = 1; seed <= 6; ++seed) {
    CAPTURE(seed);
    SampleGraph s = seed % 2 ? make_transformer_graph(300) : make_random_dag(200, 1.2, seed);
    const Layout old = compute_layout(input(s.graph, s.sizes));
    // A new Function: a new op on an existing output (its next edge goes to
    // an existing Function below layer 0), or a new input an existing
    // Function reads (an edge into it).
    std::mt19937 gen(static_cast<unsigned>(seed));
    const int n = s.graph.num_nodes;
    int other = static_cast<int>(gen() % n);
    SampleGraph grown = s;
    const int added = grown.add("MulBackward0");
    if (seed % 3 == 0) {
      while (old.layer[other] == 0) other = static_cast<int>(gen() % n);
      grown.edge(added, other);
    } else {
      grown.edge(other, added);
    }
    std::vector<int> old_of_new(static_cast<size_t>(n + 1));
    for (int v = 0; v < n; ++v) old_of_new[v] = v;
    old_of_new[n] = -1;
    const LayoutSeed layout_seed = make_seed(old, s.graph, grown.graph, old_of_new);
    LayoutInput after = input(grown.graph, grown.sizes);
    after.seed = &layout_seed;
    const Layout now = compute_layout(after);
    check_layout(grown.graph, now);
    int moved = 0;
    for (int v = 0; v < n; ++v) {
      CHECK(now.layer[v] == old.layer[v]);
      moved += std::abs(now.center[v].x - old.center[v].x) > 0.5f ||
               std::abs(now.center[v].y - old.center[v].y) > 0.5f;
    }
    CHECK(moved <= n / 50);
    // Without the seed, the same change may move everything: the seed is what helps.
  }
}

TEST_CASE("cancelling: a set flag stops the layout, a LayoutJob cancels on request") {
  const SampleGraph s = make_transformer_graph(20000);
  std::atomic<bool> cancel{true};
  const Layout l = compute_layout(input(s.graph, s.sizes), {}, &cancel);
  CHECK(l.cancelled);

  LayoutJob finished(input(make_mlp_graph(200).graph));
  const Layout done = finished.get();
  CHECK(!done.cancelled);
  CHECK(done.center.size() == make_mlp_graph(200).sizes.size());

  const auto t0 = std::chrono::steady_clock::now();
  LayoutJob job(input(s.graph, s.sizes));
  job.cancel();
  const Layout stopped = job.get();
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(stopped.cancelled);
#if defined(__SANITIZE_THREAD__)
  CHECK(ms < 800.0);  // TSan slows the layout between its checks of the flag: 240-570 ms at load 8-17
#else
  CHECK(ms < 200.0);
#endif
}

TEST_CASE("a LayoutJob rethrows what the layout threw") {
  LayoutJob job(input({2, {{0, 9}}}));
  CHECK_THROWS_WITH(job.get(), doctest::Contains("outside"));
}
