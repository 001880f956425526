// Export speed: Chrome Trace Event JSON and JSON Lines of a synthetic
// training trace (a realistic mix of Function, hook and DDP events), written
// to /dev/null so only the exporter is measured.
#include <benchmark/benchmark.h>

#include <cstdio>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "export/export.h"

using namespace hookscope;

namespace {

const analysis::Model& model_1m() {
  static const analysis::Model* m = [] {
    analysis::SyntheticOptions o;
    o.events = 1'000'000;
    return new analysis::Model(analysis::make_synthetic_trace(o));
  }();
  return *m;
}

void BM_ExportChrome_1MEvents(benchmark::State& state) {
  const auto& m = model_1m();
  std::FILE* out = std::fopen("/dev/null", "w");
  for (auto _ : state) exporters::write_chrome_trace(m, out);
  std::fclose(out);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * m.num_events()));
}
BENCHMARK(BM_ExportChrome_1MEvents)->Unit(benchmark::kMillisecond)->Iterations(3);

void BM_ExportJsonl_1MEvents(benchmark::State& state) {
  const auto& m = model_1m();
  std::FILE* out = std::fopen("/dev/null", "w");
  for (auto _ : state) exporters::write_jsonl(m, out);
  std::fclose(out);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * m.num_events()));
}
BENCHMARK(BM_ExportJsonl_1MEvents)->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

BENCHMARK_MAIN();
