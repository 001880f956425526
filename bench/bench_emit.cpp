// Cost of one trace::emit (Note [Cost of emission]), linked into bench_engine.
//
//  * BM_EmitNoRecorder             nothing attached: one relaxed load + branch
//  * BM_EmitRecorderDropSink       a Recorder attached whose sink drops every
//                                  chunk (memory stays bounded)
//  * BM_EmitMemoryRecorder         a MemoryRecorder keeping every event; fixed
//                                  iteration count so memory stays bounded
//  * BM_ReferenceClockPlusStore32  reference: steady_clock::now() + store of a
//                                  32-byte record into a preallocated ring
//  * BM_ReferenceClockOnly         steady_clock::now() alone, for context

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <vector>

#include "bench_reference.h"
#include "trace/emit.h"
#include "trace/recorder.h"

namespace tr = hookscope::trace;

namespace {

// The arguments of a typical emission point (kHookFired with node and key).
inline void emit_one(uint64_t i) {
  tr::emit(tr::EventKind::kHookFired, 3, i, i + 1, 0, 7);
}

// One emission per iteration of `state`.
inline void emit_loop(benchmark::State& state) {
  uint64_t i = 0;
  for (auto _ : state) {
    emit_one(i);
    ++i;
    benchmark::DoNotOptimize(i);  // also a compiler memory barrier: the flag is reloaded
  }
}

void BM_EmitNoRecorder(benchmark::State& state) {
  if (tr::recording()) {
    state.SkipWithError("a recorder is attached");
    return;
  }
  emit_loop(state);
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmitNoRecorder);

class DropSink : public tr::ChunkSink {
 public:
  void on_chunk(std::unique_ptr<tr::Chunk> chunk) override {
    events += chunk->count;
    ++chunks;
  }  // the chunk is freed here
  uint64_t events = 0;
  uint64_t chunks = 0;
};

void BM_EmitRecorderDropSink(benchmark::State& state) {
  DropSink sink;
  tr::Recorder recorder(sink);
  recorder.start();
  emit_loop(state);
  recorder.finish();
  if (sink.events != static_cast<uint64_t>(state.iterations())) {
    state.SkipWithError("the sink did not receive every event");
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EmitRecorderDropSink);

void BM_EmitMemoryRecorder(benchmark::State& state) {
  tr::MemoryRecorder recorder;
  recorder.start();
  emit_loop(state);
  recorder.finish();
  state.SetItemsProcessed(state.iterations());
}
// 2^20 events = 48 MiB kept per run.
BENCHMARK(BM_EmitMemoryRecorder)->Iterations(1 << 20);

BENCHMARK(BM_ReferenceClockPlusStore32);

void BM_ReferenceClockOnly(benchmark::State& state) {
  for (auto _ : state) {
    auto t = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_ReferenceClockOnly);

}  // namespace
