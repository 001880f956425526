// GUI playback: what a frame's move costs the analysis.
//
// On the GUI figures' trace (bench/gui_trace.h: 20k Functions, Reducer hooks
// and probes, then hook fires; HOOKSCOPE_BENCH_EVENTS events, default 10M),
// playback moves the Cursor F events a frame (app::Session::go_to: a move past
// 64 events is a Cursor::seek):
//  * BM_PlaybackSeek/F               one Cursor::seek(current + F), played on
//                                    from a random place (Note [Seeking by steps])
//  * BM_PlaybackStateAtReference/F   the same moves by Model::state_at (what
//                                    every seek cost before)
// Each also reports median_ms, the median of its single timed moves.

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <random>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "gui_trace.h"

namespace an = hookscope::analysis;

namespace {

constexpr int kFunctions = 20000;

const an::Model& gui_model() {
  static const std::unique_ptr<an::Model> model = [] {
    const char* env = std::getenv("HOOKSCOPE_BENCH_EVENTS");
    const size_t events = env ? std::strtoull(env, nullptr, 10) : 10'000'000;
    return std::make_unique<an::Model>(hookscope::bench::make_gui_trace_data(kFunctions, events));
  }();
  return *model;
}

// Plays from random places, `frame` events a move; move(index) goes there.
template <class Move>
void play(benchmark::State& state, Move&& move, size_t& at) {
  const an::Model& m = gui_model();
  const auto frame = static_cast<size_t>(state.range(0));
  std::mt19937_64 rng(42);
  std::vector<double> ms;
  for (auto _ : state) {
    if (at + frame >= m.num_events()) {
      state.PauseTiming();
      at = rng() % (m.num_events() / 2);
      move(at);
      state.ResumeTiming();
    }
    at += frame;
    const auto t0 = std::chrono::steady_clock::now();
    move(at);
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                     .count());
  }
  std::sort(ms.begin(), ms.end());
  state.counters["median_ms"] = ms.empty() ? 0.0 : ms[ms.size() / 2];
  state.counters["events_per_move"] = static_cast<double>(frame);
  state.counters["functions"] = static_cast<double>(m.functions().size());
}

void BM_PlaybackSeek(benchmark::State& state) {
  const an::Model& m = gui_model();
  size_t at = m.num_events();  // the first iteration picks a place
  an::Cursor cursor(m, 0);
  play(state, [&](size_t index) {
    cursor.seek(index);
    benchmark::DoNotOptimize(cursor.state().functions.size());
  }, at);
}

void BM_PlaybackStateAtReference(benchmark::State& state) {
  const an::Model& m = gui_model();
  size_t at = m.num_events();
  play(state, [&](size_t index) {
    const an::State s = m.state_at(index);
    benchmark::DoNotOptimize(s.functions.size());
  }, at);
}

}  // namespace

BENCHMARK(BM_PlaybackSeek)->Arg(200)->Arg(2000)->Arg(20000)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_PlaybackStateAtReference)->Arg(200)->Arg(2000)->Arg(20000)->Unit(benchmark::kMillisecond);

BENCHMARK_MAIN();
