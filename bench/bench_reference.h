#pragma once
// The reference the trace hot path is measured against (bench_emit: emit()
// alone; bench_trace: emit() with a file writer): a steady_clock::now() plus
// a 32-byte store into a ring, per event. Each bench registers it with its
// own threads (the targets are ratios to it).

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <vector>

struct Record32 {
  uint64_t t_ns;
  uint64_t node;
  uint64_t key;
  uint32_t owner;
  uint8_t kind;
  uint8_t sub;
  uint16_t rank;
};
static_assert(sizeof(Record32) == 32);

inline void BM_ReferenceClockPlusStore32(benchmark::State& state) {
  constexpr size_t kRing = 4096;  // as many records as a trace Chunk holds
  std::vector<Record32> ring(kRing);
  Record32* buf = ring.data();
  benchmark::DoNotOptimize(buf);
  uint64_t i = 0;
  for (auto _ : state) {
    Record32& r = buf[i & (kRing - 1)];
    r.t_ns = static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                       std::chrono::steady_clock::now().time_since_epoch())
                                       .count());
    r.node = i;
    r.key = i + 1;
    r.owner = 7;
    r.kind = 8;
    r.sub = 3;
    r.rank = 0;
    ++i;
    benchmark::ClobberMemory();  // the stores must happen every iteration
  }
  benchmark::DoNotOptimize(ring.data());
  state.SetItemsProcessed(state.iterations());
}
