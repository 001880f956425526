#include <doctest/doctest.h>

#include <random>

#include "render/layout.h"

using namespace hookscope::render;

TEST_CASE("layering: every edge goes from a lower to a higher layer, on random DAGs") {
  std::mt19937 gen(42);
  for (int trial = 0; trial < 20; ++trial) {
    LayoutGraph g;
    g.num_nodes = 50;
    for (int e = 0; e < 120; ++e) {
      int a = static_cast<int>(gen() % 50), b = static_cast<int>(gen() % 50);
      if (a == b) continue;
      g.edges.emplace_back(std::min(a, b), std::max(a, b));
    }
    auto layer = assign_layers(g);
    for (auto [a, b] : g.edges) CHECK(layer[a] < layer[b]);
  }
}

TEST_CASE("layering rejects cycles and bad edges") {
  CHECK_THROWS_WITH(assign_layers({3, {{0, 1}, {1, 2}, {2, 0}}}), doctest::Contains("cycle"));
  CHECK_THROWS_WITH(assign_layers({2, {{0, 5}}}), doctest::Contains("outside"));
}
