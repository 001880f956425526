// Trace files (Note [Trace file format]).
//
//  * BM_RecordToFile/threads:N       emit() with a FileRecorder attached: the hot
//                                    path plus whatever back-pressure the writer
//                                    thread (encode + zstd + write) applies.
//                                    Time per iteration = ns per event per thread.
//  * BM_ReferenceClockPlusStore32    reference: steady_clock::now() + a 32-byte
//                                    store into a ring (target: record <= 1.5x)
//  * BM_DemoBytesPerEvent            a training run's trace (autograd demo,
//                                    200 steps) on disk: counter bytes_per_event
//                                    (target <= 16)
//  * BM_LoadTrace_.../T              read_trace with T decoding threads (0: the
//                                    reader's choice): counter events/s (targets
//                                    on TwoThreads4M: >= 50M with 1 thread, >=
//                                    90M with 2); CPU is the whole process's
//                                    (all decoding threads), so on a busy
//                                    machine CPU / T bounds the wall time
//  * BM_LoadTracePacked_.../T        the same with ReadOptions::packed (what the
//                                    GUI and CLI load: Note [Packed events]);
//                                    counter packed_B_per_event
//
// Files go to $TMPDIR (default /dev/shm when present, to time CPU, not disk).

#include <benchmark/benchmark.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "scenarios/autograd_demo.h"
#include "bench_reference.h"
#include "trace/emit.h"
#include "trace/reader.h"
#include "trace/writer.h"

namespace tr = hookscope::trace;
namespace fs = std::filesystem;

namespace {

std::string temp_path(const std::string& name) {
  const char* dir = std::getenv("TMPDIR");
  fs::path base = dir                      ? fs::path(dir)
                  : fs::exists("/dev/shm") ? fs::path("/dev/shm")
                                           : fs::temp_directory_path();
  return (base / ("hookscope-bench-" + std::to_string(::getpid()) + "-" + name)).string();
}

// The arguments of a typical emission point (kHookFired with node and key).
inline void emit_one(uint64_t i) { tr::emit(tr::EventKind::kHookFired, 3, i, i + 1, 0, 7); }

std::unique_ptr<tr::FileRecorder> g_recorder;
std::string g_record_path;

void BM_RecordToFile(benchmark::State& state) {
  if (state.thread_index() == 0) {
    g_record_path = temp_path("record.hstrace");
    g_recorder = std::make_unique<tr::FileRecorder>(g_record_path);
    g_recorder->start();
  }
  uint64_t i = static_cast<uint64_t>(state.thread_index()) << 40;
  for (auto _ : state) {
    emit_one(i);
    ++i;
    benchmark::DoNotOptimize(i);
  }
  state.SetItemsProcessed(state.iterations());
  if (state.thread_index() == 0) {
    g_recorder->finish();
    const auto stats = g_recorder->writer().stats();
    const auto events = static_cast<double>(stats.events_written);
    state.counters["file_bytes_per_event"] = static_cast<double>(stats.bytes_written) / events;
    // Time the emitting threads spent waiting for the writer thread, per event.
    state.counters["blocked_ns_per_event"] = static_cast<double>(stats.blocked_ns) / events;
    g_recorder.reset();
    fs::remove(g_record_path);
  }
}
BENCHMARK(BM_RecordToFile)->Threads(1)->UseRealTime();
BENCHMARK(BM_RecordToFile)->Threads(2)->UseRealTime();

BENCHMARK(BM_ReferenceClockPlusStore32)->Threads(1)->UseRealTime();
BENCHMARK(BM_ReferenceClockPlusStore32)->Threads(2)->UseRealTime();

// A trace of the autograd demo (a small MLP trained with SGD, hooks of every
// kind), recorded once per process and shared by the benchmarks below.
struct DemoTraces {
  std::map<int, std::string> paths;
  ~DemoTraces() {
    for (const auto& [steps, path] : paths) fs::remove(path);
  }
};

const std::string& demo_trace(int steps) {
  static DemoTraces traces;
  auto [it, fresh] = traces.paths.try_emplace(steps);
  if (fresh) {
    it->second = temp_path("demo-" + std::to_string(steps) + ".hstrace");
    tr::FileRecorder rec(it->second, {});
    rec.start();
    hookscope::scenarios::run_autograd_demo({.steps = steps});
    rec.finish();
  }
  return it->second;
}

void BM_DemoBytesPerEvent(benchmark::State& state) {
  const std::string path = demo_trace(200);
  uint64_t events = 0;
  for (auto _ : state) {
    events = tr::read_trace(path).events.size();
  }
  state.counters["events"] = static_cast<double>(events);
  state.counters["bytes_per_event"] = static_cast<double>(fs::file_size(path)) / events;
}
BENCHMARK(BM_DemoBytesPerEvent)->Iterations(1);

// Reads `path` with state.range(0) decoding threads (0: the reader's choice).
void load(benchmark::State& state, const std::string& path, bool packed = false) {
  tr::ReadOptions options;
  options.threads = static_cast<unsigned>(state.range(0));
  options.packed = packed;
  uint64_t events = 0;
  size_t packed_bytes = 0;
  for (auto _ : state) {
    tr::TraceData d = tr::read_trace(path, options);
    events += d.num_events();
    packed_bytes = d.packed.memory_bytes();
    benchmark::DoNotOptimize(d.events.data());
  }
  if (packed && events) {
    state.counters["packed_B_per_event"] =
        static_cast<double>(packed_bytes) * state.iterations() / static_cast<double>(events);
  }
  state.counters["events/s"] =
      benchmark::Counter(static_cast<double>(events), benchmark::Counter::kIsRate);
  state.counters["MB/s"] =
      benchmark::Counter(static_cast<double>(fs::file_size(path)) * state.iterations() / 1e6,
                         benchmark::Counter::kIsRate);
}

void BM_LoadTrace_Demo200(benchmark::State& state) { load(state, demo_trace(200)); }
BENCHMARK(BM_LoadTrace_Demo200)->Arg(1)->Unit(benchmark::kMillisecond);

void BM_LoadTrace_Demo2000(benchmark::State& state) { load(state, demo_trace(2000)); }
BENCHMARK(BM_LoadTrace_Demo2000)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// Two threads emitting 2M events each (synthetic, interleaved): exercises the
// k-way merge and the parallel decoder.
struct TwoThreadTrace {
  std::string path = temp_path("two-threads.hstrace");
  TwoThreadTrace() {
    tr::FileRecorder rec(path, {});
    rec.start();
    std::vector<std::thread> threads;
    for (uint64_t t = 0; t < 2; ++t) {
      threads.emplace_back([t] {
        for (uint64_t i = 0; i < (2u << 20); ++i) emit_one((t << 40) + i);
      });
    }
    for (auto& th : threads) th.join();
    rec.finish();
  }
  ~TwoThreadTrace() { fs::remove(path); }
};

const std::string& two_thread_trace() {
  static TwoThreadTrace trace;
  return trace.path;
}

void BM_LoadTrace_TwoThreads4M(benchmark::State& state) { load(state, two_thread_trace()); }
BENCHMARK(BM_LoadTrace_TwoThreads4M)
    ->Arg(1)
    ->Arg(2)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

void BM_LoadTracePacked_Demo2000(benchmark::State& state) { load(state, demo_trace(2000), true); }
BENCHMARK(BM_LoadTracePacked_Demo2000)
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

void BM_LoadTracePacked_TwoThreads4M(benchmark::State& state) {
  load(state, two_thread_trace(), true);
}
BENCHMARK(BM_LoadTracePacked_TwoThreads4M)
    ->Arg(1)
    ->Arg(2)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

}  // namespace
BENCHMARK_MAIN();
