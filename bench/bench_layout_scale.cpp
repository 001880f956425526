// The graph layout at scale (Note [Large graphs]):
//
//  * BM_LayoutScale/transformer/<n>  compute_layout on n Functions of
//                                    transformer blocks (the scale trace's
//                                    graph). Target: 1M <= 2 s.
//  * BM_LayoutScale/chain/<n>        n Functions in one chain (the crafted
//                                    "many_functions" file: n layers).
//  * BM_LayoutScale/hub/<n>          a chain whose every Function also has an
//                                    edge to the first (a hub; long edges
//                                    over every layer go direct).
// Counters: items (nodes), layers, dummies, direct edges, crossings.

#include <benchmark/benchmark.h>

#include <string>

#include "render/layout/layout.h"
#include "render/sample_graphs.h"

namespace hr = hookscope::render;

namespace {

hr::LayoutInput scale_input(int shape, int n) {
  hr::LayoutInput in;
  if (shape == 0) {
    hr::SampleGraph s = hr::make_transformer_graph(n);
    in.graph = std::move(s.graph);
    in.sizes = std::move(s.sizes);
    return in;
  }
  in.graph.num_nodes = n;
  for (int v = 1; v < n; ++v) {
    in.graph.edges.emplace_back(v, v - 1);
    if (shape == 2 && v > 1) in.graph.edges.emplace_back(v, 0);
  }
  return in;
}

void BM_LayoutScale(benchmark::State& state) {
  const int shape = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  const hr::LayoutInput in = scale_input(shape, n);
  hr::Layout l;
  for (auto _ : state) {
    l = hr::compute_layout(in);
    benchmark::DoNotOptimize(l.center.data());
  }
  state.SetLabel(shape == 0 ? "transformer" : shape == 1 ? "chain" : "hub");
  state.counters["nodes"] = static_cast<double>(in.graph.num_nodes);
  state.counters["layers"] = l.num_layers;
  state.counters["dummies"] = static_cast<double>(l.num_dummies);
  state.counters["direct"] = static_cast<double>(l.direct_edges);
  state.counters["crossings"] = static_cast<double>(l.crossings);
}
BENCHMARK(BM_LayoutScale)
    ->ArgNames({"shape", "n"})
    ->Args({0, 200'000})
    ->Args({0, 1'000'000})
    ->Args({1, 100'000})
    ->Args({2, 100'000})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace

BENCHMARK_MAIN();
