// Backward engine overhead per Node on long chains of scalar ops.
//
//  * BM_BackwardScalarChain/N           y = tanh(y) N times from a scalar leaf, then
//                                       y.backward(); only backward is timed
//  * BM_BackwardScalarChainMulScalar/N  the same with y = y * 0.999
// Counter `per_node`: backward time / Nodes executed (N ops + 1 AccumulateGrad).
// Building the chain and freeing the graph are outside the timed region
// (manual timing around backward()).
//
// The emission benchmarks of this binary are in bench_emit.cpp.

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>

#include "tensor/ops.h"
#include "tensor/tensor.h"

namespace hs = hookscope;

namespace {

hs::Tensor tanh_op(const hs::Tensor& t) { return hs::tanh(t); }
hs::Tensor mul_scalar_op(const hs::Tensor& t) { return hs::mul_scalar(t, 0.999f); }

template <hs::Tensor (*Op)(const hs::Tensor&)>
void chain_bench(benchmark::State& state) {
  const int64_t n = state.range(0);
  hs::Tensor x = hs::Tensor::scalar(0.5f);
  x.set_requires_grad(true);
  for (auto _ : state) {
    hs::Tensor y = x;
    for (int64_t i = 0; i < n; ++i) y = Op(y);
    x.zero_grad();
    auto t0 = std::chrono::steady_clock::now();
    y.backward();
    auto t1 = std::chrono::steady_clock::now();
    state.SetIterationTime(std::chrono::duration<double>(t1 - t0).count());
    if (!x.grad().defined()) {
      state.SkipWithError("backward produced no gradient for the leaf");
      break;
    }
    benchmark::DoNotOptimize(x.grad().item());
    // y (and with it the released graph) is freed here, untimed.
  }
  const double nodes = static_cast<double>(state.iterations()) * static_cast<double>(n + 1);
  state.SetItemsProcessed(static_cast<int64_t>(nodes));
  state.counters["per_node"] =
      benchmark::Counter(nodes, benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}

void BM_BackwardScalarChain(benchmark::State& state) { chain_bench<tanh_op>(state); }
void BM_BackwardScalarChainMulScalar(benchmark::State& state) {
  chain_bench<mul_scalar_op>(state);
}
BENCHMARK(BM_BackwardScalarChain)->Arg(10000)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_BackwardScalarChainMulScalar)
    ->Arg(10000)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
