// The graph's LiveIndex at scale (Note [Liveness by intervals], Note [Alarms
// by intervals]) on the scale trace's graph (make_scale_trace's: transformer
// blocks, every leaf's "Reducer 1" hook leaked when it is destroyed):
//
//  * BM_LiveIndexBuild/<n>    LiveIndex::build off the UI thread, once per
//                             layout (compare BM_LayoutScale/transformer/<n>).
//  * BM_LiveIndexCells/<n>    count_cells at an event after the leak: what
//                             every new event costs a frame above the threshold.
//  * BM_LiveIndexAlarms/<n>   alarm_units at that event: what a frame drawing
//                             density cells or fitting asks when an alarm may
//                             have changed.
// Counters: units, alarm units (checked one by one), crowded cells.

#include <benchmark/benchmark.h>

#include <atomic>
#include <memory>
#include <string_view>
#include <vector>

#include "analysis/model.h"
#include "render/draw/graph_view_live.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/sample_graphs.h"

namespace hs = hookscope;
namespace hr = hookscope::render;

namespace {

struct Built {
  std::unique_ptr<hs::analysis::Model> model;
  std::unique_ptr<hr::GraphScene> scene;
  hr::FoldedGraph folded;
  hr::Layout layout;
};

const Built& built(int n) {
  static std::unique_ptr<Built> b;
  static int built_n = -1;
  if (built_n != n) {
    b = std::make_unique<Built>();
    b->model = std::make_unique<hs::analysis::Model>(hr::make_sample_trace(hr::make_transformer_graph(n)));
    b->scene = std::make_unique<hr::GraphScene>(*b->model);
    b->folded = b->scene->fold(std::vector<uint8_t>(b->scene->groups().size(), 0));
    hr::LayoutInput in;
    in.graph = b->folded.graph;
    in.sizes = b->scene->box_sizes(b->folded, [](std::string_view s) { return 7.f * static_cast<float>(s.size()); });
    b->layout = hr::compute_layout(in);
    built_n = n;
  }
  return *b;
}

std::unique_ptr<hr::LiveIndex> index_of(const Built& b) {
  const std::atomic<bool> cancel{false};
  return hr::LiveIndex::build(*b.model, *b.scene, b.folded, b.layout, cancel);
}

void BM_LiveIndexBuild(benchmark::State& state) {
  const Built& b = built(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto x = index_of(b);
    benchmark::DoNotOptimize(x.get());
  }
  state.counters["units"] = static_cast<double>(b.layout.center.size());
}

void BM_LiveIndexCells(benchmark::State& state) {
  const Built& b = built(static_cast<int>(state.range(0)));
  const auto x = index_of(b);
  const auto e = static_cast<hs::analysis::EventIndex>(b.model->num_events() - 1);
  std::vector<uint32_t> counts;
  for (auto _ : state) {
    x->count_cells(e, counts);
    benchmark::DoNotOptimize(counts.data());
  }
}

void BM_LiveIndexAlarms(benchmark::State& state) {
  const Built& b = built(static_cast<int>(state.range(0)));
  const auto x = index_of(b);
  const auto e = static_cast<hs::analysis::EventIndex>(b.model->num_events() - 1);
  std::vector<uint32_t> units, crowded;
  for (auto _ : state) {
    x->alarm_units(e, units, crowded);
    benchmark::DoNotOptimize(units.data());
  }
  state.counters["alarm_units"] = static_cast<double>(units.size());
  state.counters["crowded_cells"] = static_cast<double>(crowded.size());
}

BENCHMARK(BM_LiveIndexBuild)->Arg(200'000)->Arg(1'000'000)->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_LiveIndexCells)->Arg(200'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_LiveIndexAlarms)->Arg(200'000)->Arg(1'000'000)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
