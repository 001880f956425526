// `hookscope-cli diff` on many hooked Functions (it once grew faster
// than linear in hooks; 300k stale lanes took 112 s and 1.2 GB).
//
// Figures: BM_Diff/SHAPE/N, s for what `diff A A` does after reading the
// files: load both models, diagnose both (B on a second thread, as the CLI
// does), diff them and format the text. Its CPU column is the main thread's:
// on a loaded machine, what the wall clock would read on an idle one.
// Run with repetitions (bench/run.sh does) for medians. Shapes, N hooks each:
//  * /0/N  stale lanes: N AccumulateGrads with one hook of one owner, which
//          is destroyed with its hooks left on; then every hook fires (stale)
//  * /1/N  N owners, one hook each on its own AccumulateGrad, all destroyed
//          and fired after (a leak per owner)
//  * /2/N  a chain of N Functions (deep signatures), a hook on each
// Before the fix (a scan of every Function per row named): /0/40000 took
// 4.7 s, /0/300000 minutes; linear now (docs/performance.md).
// `bench_diff --write SHAPE N OUT.hstrace` writes a shape's trace instead,
// for timing `hookscope-cli diff OUT OUT` (reading the files included).

#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <future>
#include <string>
#include <utility>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "testing/write_trace.h"

namespace an = hookscope::analysis;
using hookscope::trace::HookKind;
using hookscope::trace::OwnerKind;

namespace {

hookscope::trace::TraceData make(int shape, uint32_t n) {
  an::TraceBuilder b;
  std::vector<uint64_t> nodes;
  std::vector<uint32_t> owners;
  std::vector<uint64_t> keys;
  const uint32_t shared = shape == 1 ? 0 : b.owner(OwnerKind::kUser, "probe");
  for (uint32_t k = 0; k < n; ++k) {
    const uint64_t node = shape == 2 ? b.function("AddBackward0")
                                     : b.accumulator("p" + std::to_string(k) + ".weight [64]");
    if (shape == 2 && k > 0) b.edge(node, nodes.back());
    const uint32_t owner = shape == 1 ? b.owner(OwnerKind::kUser, "probe " + std::to_string(k)) : shared;
    nodes.push_back(node);
    owners.push_back(owner);
    keys.push_back(b.add_hook(node, HookKind::kPost, owner));
  }
  if (shape == 1) {
    for (uint32_t o : owners) b.destroy_owner(o);
  } else {
    b.destroy_owner(shared);
  }
  for (uint32_t k = 0; k < n; ++k) b.fire(nodes[k], keys[k], HookKind::kPost, owners[k]);
  return b.take();
}

void BM_Diff(benchmark::State& state) {
  const int shape = static_cast<int>(state.range(0));
  const auto n = static_cast<uint32_t>(state.range(1));
  const hookscope::trace::TraceData trace = make(shape, n);
  size_t rows = 0;
  for (auto _ : state) {
    // As `hookscope-cli diff` does: B loaded and diagnosed on a second thread.
    auto pending_b = std::async(std::launch::async, [&] {
      an::Model m{hookscope::trace::TraceData(trace)};
      std::vector<an::Finding> findings = an::diagnose(m);
      return std::make_pair(std::move(m), std::move(findings));
    });
    const an::Model a{hookscope::trace::TraceData(trace)};
    const std::vector<an::Finding> findings_a = an::diagnose(a);
    const auto [b, findings_b] = pending_b.get();
    const an::ModelDiff d = an::diff_models(a, findings_a, b, findings_b);
    const std::string text = an::format_diff(d, "a", "b");
    benchmark::DoNotOptimize(text.data());
    rows = d.functions.size();
  }
  state.counters["hooks"] = n;
  state.counters["rows"] = static_cast<double>(rows);
}

}  // namespace

BENCHMARK(BM_Diff)
    ->ArgsProduct({{0, 1, 2}, {10'000, 20'000, 40'000}})
    ->ArgsProduct({{0, 1, 2}, {300'000}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->Iterations(1);

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "--write") == 0) {
    if (argc != 5) {
      std::fprintf(stderr, "usage: bench_diff --write SHAPE(0-2) N OUT.hstrace\n");
      return 2;
    }
    const int shape = std::atoi(argv[2]);
    const auto n = static_cast<uint32_t>(std::atol(argv[3]));
    hookscope::trace::TraceData data = make(shape, n);
    const size_t events = data.events.size();
    hookscope::testing::write_trace_file(std::move(data), argv[4], "bench_diff shape " + std::string(argv[2]));
    std::printf("wrote %s: shape %d, %u hooks, %zu events\n", argv[4], shape, n, events);
    return 0;
  }
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
