// The analysis model on long traces (Note [Replay by intervals]).
//
// Figures (issue "analysis model"), on a synthetic trace of
// HOOKSCOPE_BENCH_EVENTS events (default 10M) that reads like DDP training
// (analysis/synthetic.h), for two shapes: /64/0 = 64 parameters, policy
// by-key (small live state); /1024/1 = 1024 parameters, policy none (hooks
// pile up: a large live state and many stale fires):
//  * BM_Load/P/policy/T     s to load and index the trace on T threads (events_per_s per CPU
//                           second, events_per_wall_s per wall second),
//                           checkpoint and model memory (ckpt_MiB, model_MiB,
//                           model_B_per_event: besides the events, event_B_per_event:
//                           the events packed); from Event arrays, packed before the walk
//                           (one thread) or beside it (two: Note [Packing beside the walk])
//  * BM_LoadPacked/P/policy/T  the same from events read packed (as files load)
//  * BM_Pack/P/policy       PackedEvents::pack of the trace's events alone (ns_per_event)
//  * BM_SeekRandom/P/policy one state_at() to a random event; also the median
//                           and p99 of 1000 single timed seeks (median_ms, p99_ms)
//  * BM_CursorStep/P/policy one Cursor::next() then prev() at a random place
//  * BM_Diagnose/P/policy   every diagnostic over the whole trace

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_table.h"
#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"

namespace an = hookscope::analysis;

namespace {

size_t bench_events() {
  const char* env = std::getenv("HOOKSCOPE_BENCH_EVENTS");
  return env ? std::strtoull(env, nullptr, 10) : 10'000'000;
}

an::SyntheticOptions options_for(const benchmark::State& state) {
  an::SyntheticOptions o;
  o.events = bench_events();
  o.parameters = static_cast<uint32_t>(state.range(0));
  o.policy = state.range(1) ? hookscope::trace::DestroyPolicy::kNone
                            : hookscope::trace::DestroyPolicy::kByKey;
  o.rebuild_every = 50;
  return o;
}

// One trace (and its model) at a time: 10M events are ~480 MB.
struct Cached {
  int64_t parameters = -1, policy = -1;
  std::unique_ptr<an::Model> model;
};
Cached& cache() {
  static Cached c;
  return c;
}

const an::Model& model_for(const benchmark::State& state) {
  Cached& c = cache();
  if (c.parameters != state.range(0) || c.policy != state.range(1)) {
    c.model.reset();
    c.model = std::make_unique<an::Model>(an::make_synthetic_trace(options_for(state)));
    c.parameters = state.range(0);
    c.policy = state.range(1);
  }
  return *c.model;
}

// BM_Load: the model built from Event arrays (tests, live runs), which it
// packs (Note [Packing beside the walk]). BM_LoadPacked: from events already packed, as the
// GUI and CLI read files (ReadOptions::packed; Note [Packed events]).
void load(benchmark::State& state, bool packed) {
  cache() = Cached{};
  hookscope::trace::TraceData trace = an::make_synthetic_trace(options_for(state));
  const size_t n_events = trace.events.size();
  if (packed) {
    trace.packed = hookscope::trace::PackedEvents::pack(trace.events);
    std::vector<hookscope::trace::Event>().swap(trace.events);
  }
  size_t ckpt = 0, mem = 0, blocks = 0, event_bytes = 0;
  double wall_s = 0;
  for (auto _ : state) {
    state.PauseTiming();
    hookscope::trace::TraceData copy = trace;
    state.ResumeTiming();
    const auto t0 = std::chrono::steady_clock::now();
    an::ModelOptions options;
    options.threads = static_cast<uint32_t>(state.range(2));
    an::Model m(std::move(copy), options);
    wall_s += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ckpt = m.checkpoint_bytes();
    mem = m.memory_bytes();
    event_bytes = m.event_bytes();
    blocks = m.num_checkpoints();
    benchmark::DoNotOptimize(m.num_events());
    state.PauseTiming();  // freeing the model is not loading it
    { an::Model gone = std::move(m); }
    state.ResumeTiming();
  }
  state.counters["events"] = static_cast<double>(n_events);
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(n_events), benchmark::Counter::kIsIterationInvariantRate);
  // events_per_s is per CPU second (the machine may be shared); this one per wall second.
  state.counters["events_per_wall_s"] =
      static_cast<double>(n_events) * static_cast<double>(state.iterations()) / wall_s;
  state.counters["ckpt_MiB"] = static_cast<double>(ckpt) / (1 << 20);
  state.counters["model_MiB"] = static_cast<double>(mem) / (1 << 20);
  // Model memory per event besides the events themselves (<= 12, Note [Model memory bound]).
  state.counters["model_B_per_event"] = static_cast<double>(mem) / n_events;
  state.counters["checkpoints"] = static_cast<double>(blocks);
  state.counters["event_B_per_event"] = static_cast<double>(event_bytes) / n_events;
}

// Packing alone (Note [Packing by records]): what a load from arrays adds.
void BM_Pack(benchmark::State& state) {
  cache() = Cached{};
  const hookscope::trace::TraceData trace = an::make_synthetic_trace(options_for(state));
  size_t bytes = 0;
  for (auto _ : state) {
    const auto packed = hookscope::trace::PackedEvents::pack(trace.events);
    bytes = packed.memory_bytes();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["events_per_s"] = benchmark::Counter(
      static_cast<double>(trace.events.size()), benchmark::Counter::kIsIterationInvariantRate);
  state.counters["ns_per_event"] = benchmark::Counter(
      static_cast<double>(trace.events.size()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["event_B_per_event"] = static_cast<double>(bytes) / trace.events.size();
}

void BM_Load(benchmark::State& state) { load(state, false); }
void BM_LoadPacked(benchmark::State& state) { load(state, true); }

void BM_SeekRandom(benchmark::State& state) {
  const an::Model& m = model_for(state);
  std::mt19937_64 rng(42);
  size_t hooks = 0;
  for (auto _ : state) {
    const an::State s = m.state_at(rng() % m.num_events());
    hooks = s.num_hooks();
    benchmark::DoNotOptimize(hooks);
  }
  // Single seeks timed one by one, for the median the issue asks about.
  std::vector<double> ms;
  for (int k = 0; k < 1000; ++k) {
    const size_t at = rng() % m.num_events();
    const auto t0 = std::chrono::steady_clock::now();
    const an::State s = m.state_at(at);
    benchmark::DoNotOptimize(s.functions.size());
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  state.counters["median_ms"] = ms[ms.size() / 2];
  state.counters["p99_ms"] = ms[ms.size() * 99 / 100];
  state.counters["hooks_at_end"] = static_cast<double>(m.state_at(m.num_events() - 1).num_hooks());
  state.counters["functions_at_end"] =
      static_cast<double>(m.state_at(m.num_events() - 1).functions.size());
}

void BM_CursorStep(benchmark::State& state) {
  const an::Model& m = model_for(state);
  std::mt19937_64 rng(7);
  an::Cursor c(m, 1 + rng() % (m.num_events() - 2));
  size_t steps = 0;
  for (auto _ : state) {
    if (++steps % 4096 == 0) {
      state.PauseTiming();
      c.seek(1 + rng() % (m.num_events() - 2));
      state.ResumeTiming();
    }
    c.next();
    c.prev();
    benchmark::DoNotOptimize(c.state().index);
  }
}

void BM_Diagnose(benchmark::State& state) {
  const an::Model& m = model_for(state);
  size_t n = 0;
  for (auto _ : state) {
    n = an::diagnose(m).size();
    benchmark::DoNotOptimize(n);
  }
  state.counters["findings"] = static_cast<double>(n);
}

}  // namespace

// Grouped by trace shape, so that each synthetic trace is built once.
// BM_Load/P/policy/threads: the load pass on 1 or 2 threads (Note [Finishing on two
// threads]); CPU time is the process's, both threads.
// Figures at 10M events, one thread, each run a fresh process, medians of 5 runs
// interleaved with the other build (2 shared cores, load average 4-5), before and
// after ids below a bound went to a flat array (Note [Id maps]):
//   BM_Load/64/0/1     368 -> 204 ms CPU (27 -> 49M events/s), 448 -> 240 ms wall
//   BM_Load/1024/1/1   245 -> 197 ms CPU (41 -> 51M events/s), 294 -> 241 ms wall
// After events were kept packed: medians of 5 interleaved runs against
// the build before (load average ~10: every helper building), CPU time:
//   BM_CursorStep/64/0    6.15 us -> 389 ns, /1024/1 10.5 us -> 845 ns (Note [Reducers
//                         in a step]; 0.97 and 2.77 us before packing)
//   BM_Load/64/0/1        535 -> 454 ms (18.7 -> 22.0M events/s), /1024/1/1 364 -> 320 ms;
//                         BM_Pack 23.2 -> 14.4 ns per event (Note [Packing by records])
// Branch h18l: medians of 3 interleaved runs against the build before (load
// average 8-10, every helper building), CPU time:
//   BM_Load/64/0/1        480 -> 353 ms (20.8 -> 28.3M events/s; Notes [Packing by
//                         columns], [Tables populated at once], [Packing beside the walk])
//   BM_Load/64/0/2        407 -> 325 ms;  BM_LoadPacked/64/0/1 297 -> 276 ms
//   BM_Pack/64/0          22.3 -> 13.8 ns per event (events read from memory)
//   BM_SeekRandom/64/0    26.1 -> 17.4 us (16.3 before packing; ReducerInfo::
//                         prepare_backwards), median single seek 22.4 -> 15.1 us
// The Diagnostics panel's rows in one frame (Note [Compact findings]): up to
// 2000 findings of a group unpacked, consecutive rows of a 100k-finding table
// (a stale fire's message and its evidence each). A row used to re-read its
// block from the start (get_varint was 17.7% of the panel's samples); now
// the kept block knows where each finding starts.
void BM_FindingRows(benchmark::State& state) {
  an::FindingTable table;
  for (size_t i = 0; i < 100'000; ++i) {
    an::Finding f;
    f.kind = an::FindingKind::kStaleFire;
    f.at = i * 7;
    f.message = "hook key " + std::to_string(1000 + i) + " of Reducer 3 (destroyed at #" + std::to_string(i * 5) +
                ") fired on AccumulateGrad for parameter layers." + std::to_string(i % 64) + ".weight";
    f.detail = "the hook was never removed: its owner's destructor kept it (policy none)";
    f.events = {i * 5, i * 6, i * 7};
    table.add(std::move(f));
  }
  table.finish();
  const auto rows = static_cast<size_t>(state.range(0));
  size_t from = 0, bytes = 0;
  for (auto _ : state) {
    for (size_t k = 0; k < rows; ++k) bytes += table[(from + k) % table.size()].message.size();
    from = (from + 37) % table.size();  // a scroll
  }
  benchmark::DoNotOptimize(bytes);
  state.counters["rows_per_frame"] = static_cast<double>(rows);
}

BENCHMARK(BM_FindingRows)->Arg(2000)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Load)->Args({64, 0, 1})->Args({64, 0, 2})->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime();
BENCHMARK(BM_LoadPacked)->Args({64, 0, 1})->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime();
BENCHMARK(BM_Pack)->Args({64, 0})->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK(BM_SeekRandom)->Args({64, 0})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CursorStep)->Args({64, 0})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Diagnose)->Args({64, 0})->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK(BM_Load)->Args({1024, 1, 1})->Args({1024, 1, 2})->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime();
BENCHMARK(BM_LoadPacked)->Args({1024, 1, 1})->Unit(benchmark::kMillisecond)->Iterations(1)->MeasureProcessCPUTime();
BENCHMARK(BM_SeekRandom)->Args({1024, 1})->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CursorStep)->Args({1024, 1})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Diagnose)->Args({1024, 1})->Unit(benchmark::kMillisecond)->Iterations(1);

BENCHMARK_MAIN();
