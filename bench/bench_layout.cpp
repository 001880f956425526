// The graph layout and the views' frames (render/).
//
//  * BM_Layout/<shape>/<n>     compute_layout on an autograd-shaped DAG of
//                              about n Functions (deep MLP, residual blocks,
//                              transformer blocks), boxes sized as text would
//                              be. Targets: 10k <= 100 ms, 100k <= 2 s.
//  * BM_VsDot/<shape>/<n>      the same graph written as DOT and laid out by
//                              Graphviz `dot -Tplain` in the same run;
//                              counters ours_ms, dot_ms and ratio = dot /
//                              ours (target >= 100 at 5k). dot is capped
//                              (kDotCapSeconds, `timeout`): when it hits the
//                              cap, dot_timed_out = 1 and the ratio is a lower
//                              bound. Also the quality of both drawings,
//                              measured the same way (Note [Crossings of a
//                              drawing], bench/layout_quality.h): counters
//                              ours_crossings / dot_crossings, ours_area /
//                              dot_area (Mpt^2, bounding box) and
//                              ours_fill / dot_fill (box area / drawing area).
//  * BM_GraphFrame/<view>      one ImGui frame of the graph view (NewFrame ..
//                              Render, no GPU) with 20k live Functions:
//                              fitted (density cells), zoomed to plain boxes,
//                              zoomed in with text, and 64 side-by-side towers
//                              zoomed to the most boxes on screen. Target <= 4 ms.
//  * BM_TimelineFrame/<view>   one frame of the timeline with 10M events on
//                              two tracks and 1M apply spans: fitted, 50 ms,
//                              100 us. Target <= 4 ms.
//  * BM_TimelineIndex/...      building the timeline index: from raw arrays
//                              (10M events) and from an analysis Model (1M).
//  * BM_GraphScene/<events>    slots and groups of a 1M-event training trace.

#include <benchmark/benchmark.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "analysis/model.h"
#include "layout_quality.h"
#include "analysis/synthetic.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/sample_graphs.h"
#include "render/layout/timeline_index.h"

#ifdef HOOKSCOPE_RENDER_DRAW
#include <imgui.h>

#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "render/draw/timeline_view.h"
#include "testing/headless_imgui.h"
#endif

namespace hr = hookscope::render;
namespace fs = std::filesystem;

namespace {

constexpr int kDotCapSeconds = 120;

hr::SampleGraph make_shape(int shape, int n) {
  switch (shape) {
    case 0: return hr::make_mlp_graph(n);
    case 1: return hr::make_residual_graph(n);
    default: return hr::make_transformer_graph(n);
  }
}
const char* shape_name(int shape) { return shape == 0 ? "mlp" : shape == 1 ? "residual" : "transformer"; }

hr::LayoutInput input_of(const hr::SampleGraph& g) {
  hr::LayoutInput in;
  in.graph = g.graph;
  in.sizes = g.sizes;
  return in;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

void BM_Layout(benchmark::State& state) {
  const int shape = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  const hr::SampleGraph g = make_shape(shape, n);
  const hr::LayoutInput in = input_of(g);
  size_t crossings = 0, dummies = 0;
  for (auto _ : state) {
    hr::Layout l = hr::compute_layout(in);
    crossings = l.crossings;
    dummies = l.num_dummies;
    benchmark::DoNotOptimize(l.center.data());
  }
  state.SetLabel(shape_name(shape));
  state.counters["functions"] = g.graph.num_nodes;
  state.counters["edges"] = static_cast<double>(g.graph.edges.size());
  state.counters["dummies"] = static_cast<double>(dummies);
  state.counters["crossings"] = static_cast<double>(crossings);
}
BENCHMARK(BM_Layout)
    ->ArgsProduct({{0, 1, 2}, {1000, 10000, 50000, 100000}})
    ->Unit(benchmark::kMillisecond)
    ->MeasureProcessCPUTime()
    ->UseRealTime();

std::string temp_path(const std::string& name) {
  const fs::path base = fs::exists("/dev/shm") ? fs::path("/dev/shm") : fs::temp_directory_path();
  return (base / ("hookscope-bench-" + std::to_string(::getpid()) + "-" + name)).string();
}

void BM_VsDot(benchmark::State& state) {
  const int shape = static_cast<int>(state.range(0)), n = static_cast<int>(state.range(1));
  const hr::SampleGraph g = make_shape(shape, n);
  const hr::LayoutInput in = input_of(g);
  const std::string dot_file = temp_path("graph.dot");
  const std::string plain_file = temp_path("graph.plain");
  std::ofstream(dot_file) << hr::to_dot(g);
  double ours = 0, dot = 0;
  bool timed_out = false;
  for (auto _ : state) {
    // Ours: the median of 5 runs; dot: one run under the cap.
    std::vector<double> runs;
    for (int i = 0; i < 5; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(hr::compute_layout(in).center.data());
      runs.push_back(seconds_since(t0));
    }
    std::sort(runs.begin(), runs.end());
    ours = runs[2];
    const std::string cmd = "timeout " + std::to_string(kDotCapSeconds) + " dot -Tplain " + dot_file +
                            " -o " + plain_file + " 2>/dev/null";
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = std::system(cmd.c_str());
    dot = seconds_since(t0);
    timed_out = WIFEXITED(rc) && WEXITSTATUS(rc) == 124;
    if (rc != 0 && !timed_out) state.SkipWithError("dot failed (is graphviz installed?)");
    state.SetIterationTime(ours + dot);
  }
  fs::remove(dot_file);
  // Quality, outside the timed part.
  const hookscope::bench::Drawing ours_drawing = hookscope::bench::drawing_of(hr::compute_layout(in));
  const hookscope::bench::Drawing dot_drawing = hookscope::bench::parse_dot_plain(plain_file);
  fs::remove(plain_file);
  state.counters["ours_crossings"] = static_cast<double>(hookscope::bench::count_crossings(ours_drawing));
  state.counters["ours_area"] = ours_drawing.area() / 1e6;
  state.counters["ours_fill"] = ours_drawing.box_area / ours_drawing.area();
  if (dot_drawing.ok) {
    state.counters["dot_crossings"] = static_cast<double>(hookscope::bench::count_crossings(dot_drawing));
    state.counters["dot_area"] = dot_drawing.area() / 1e6;
    state.counters["dot_fill"] = dot_drawing.box_area / dot_drawing.area();
  }
  state.SetLabel(std::string(shape_name(shape)) + (timed_out ? " (dot hit the cap: ratio is a lower bound)" : ""));
  state.counters["functions"] = g.graph.num_nodes;
  state.counters["ours_ms"] = ours * 1e3;
  state.counters["dot_ms"] = dot * 1e3;
  state.counters["ratio"] = dot / ours;
  state.counters["dot_timed_out"] = timed_out;
}
BENCHMARK(BM_VsDot)
    ->ArgsProduct({{0, 1, 2}, {1000, 5000}})
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

#ifdef HOOKSCOPE_RENDER_DRAW

// 20k Functions as 64 side-by-side towers of transformer blocks (64
// components, as 64 ranks would be): a wide picture, so that zoomed out to
// plain boxes about half of them are on screen at once, the worst case of
// the level of detail.
hr::SampleGraph wide_graph(int functions) {
  const hr::SampleGraph tower = hr::make_transformer_graph(functions / 64);
  hr::SampleGraph g;
  while (g.graph.num_nodes < functions) {
    const int base = g.graph.num_nodes;
    for (int v = 0; v < tower.graph.num_nodes; ++v) g.add(tower.names[v], tower.labels[v]);
    for (auto [a, b] : tower.graph.edges) g.edge(base + a, base + b);
  }
  return g;
}

void BM_GraphFrame(benchmark::State& state) {
  hookscope::testing::HeadlessImGui imgui(1600.f, 1000.f);  // no renderer
  const bool wide = state.range(0) >= 3;
  const hookscope::analysis::Model model(
      hr::make_sample_trace(wide ? wide_graph(20000) : hr::make_transformer_graph(20000)));
  const hookscope::analysis::State st = model.state_at(model.num_events() - 1);
  hr::GraphView view;
  view.set_model(&model);
  view.wait_for_layout();
  imgui.frame([&] { view.draw(st); });  // fits
  const hr::Layout& l = *view.layout();
  const hr::Vec2 middle = l.center[l.center.size() / 2];
  if (state.range(0) == 1) view.set_view(middle, 0.3f);
  if (state.range(0) == 2) view.set_view(middle, 1.f);
  // The smallest zoom of plain boxes (11 px wide), and of text (6 px lines).
  if (wide) view.set_view({(l.min.x + l.max.x) * 0.5f, (l.min.y + l.max.y) * 0.5f}, 0.123f);
  if (state.range(0) == 4) view.set_view({(l.min.x + l.max.x) * 0.5f, (l.min.y + l.max.y) * 0.5f}, 0.4f);
  int vertices = 0;
  for (auto _ : state) vertices = imgui.frame([&] { view.draw(st); });
  static const char* kNames[] = {"fitted: 20k boxes as density cells", "zoom 0.3: plain boxes",
                                 "zoom 1: boxes with text and badges",
                                 "64 towers, zoom 0.123: the most plain boxes on screen",
                                 "64 towers, zoom 0.4: the most boxes with text on screen"};
  state.SetLabel(kNames[state.range(0)]);
  state.counters["live_functions"] = static_cast<double>(st.functions.size());
  state.counters["boxes"] = view.stats().boxes;
  state.counters["cells"] = view.stats().cells;
  state.counters["edges_drawn"] = view.stats().edges;
  state.counters["vertices"] = vertices;
}
BENCHMARK(BM_GraphFrame)->DenseRange(0, 4)->Unit(benchmark::kMillisecond);

#endif  // HOOKSCOPE_RENDER_DRAW

// Two tracks of 5M events each: steps of dense bursts (a backward pass, a
// few µs between events) and quiet gaps, and an apply span per 10 events.
hr::TimelineIndex ten_million_events() {
  hr::TimelineIndex index;
  std::mt19937_64 gen(1);
  for (int track = 0; track < 2; ++track) {
    const size_t n = 5'000'000;
    std::vector<int64_t> time(n);
    std::vector<uint32_t> event(n);
    std::vector<uint8_t> cls(n);
    int64_t t = 0;
    for (size_t i = 0; i < n; ++i) {
      t += (i % 20000 == 0) ? 5'000'000 : 500 + static_cast<int64_t>(gen() % 3000);
      time[i] = t;
      event[i] = static_cast<uint32_t>(2 * i + track);
      cls[i] = static_cast<uint8_t>(gen() % 6);
    }
    hr::TimelineTrack& tr = index.add_track("rank " + std::to_string(track), std::move(time), std::move(event),
                                            std::move(cls));
    std::vector<hr::TimelineSpan> apply, backward;
    for (size_t i = 0; i + 10 < n; i += 10) {
      apply.push_back({tr.time(i), tr.time(i + 5), tr.event(i), tr.event(i + 5), hr::SpanKind::kApply});
    }
    for (size_t i = 0; i + 20000 <= n; i += 20000) {
      backward.push_back({tr.time(i), tr.time(i + 19999), tr.event(i), tr.event(i + 19999), hr::SpanKind::kBackward});
    }
    tr.lanes.push_back(std::move(backward));
    tr.lanes.push_back(std::move(apply));
  }
  return index;
}

// Indexing only (copying the arrays in, the class summary), not making them.
void BM_TimelineIndex_Raw10M(benchmark::State& state) {
  const hr::TimelineIndex made = ten_million_events();
  struct Raw {
    std::vector<int64_t> time;
    std::vector<uint32_t> event;
    std::vector<uint8_t> cls;
  };
  std::vector<Raw> raw(made.tracks().size());
  for (size_t r = 0; r < raw.size(); ++r) {
    const hr::TimelineTrack& t = made.tracks()[r];
    for (size_t k = 0; k < t.size(); ++k) {
      raw[r].time.push_back(t.time(k));
      raw[r].event.push_back(t.event(k));
      raw[r].cls.push_back(t.cls(k));
    }
  }
  for (auto _ : state) {
    hr::TimelineIndex index;
    for (size_t r = 0; r < raw.size(); ++r) index.add_track(made.tracks()[r].name, raw[r].time, raw[r].event, raw[r].cls);
    benchmark::DoNotOptimize(index.tracks().data());
  }
  state.counters["events"] = 10e6;
}
BENCHMARK(BM_TimelineIndex_Raw10M)->Unit(benchmark::kMillisecond);

void BM_TimelineIndex_Model(benchmark::State& state) {
  hookscope::analysis::SyntheticOptions o;
  o.events = static_cast<size_t>(state.range(0));
  const hookscope::analysis::Model model(hookscope::analysis::make_synthetic_trace(o));
  size_t bytes = 0;
  for (auto _ : state) {
    hr::TimelineIndex index(model);
    bytes = index.memory_bytes();
    benchmark::DoNotOptimize(index.tracks().data());
  }
  state.counters["events"] = static_cast<double>(model.num_events());
  // What the build buys (Note [Compact timeline index]): bytes held per event.
  state.counters["index_bytes_per_event"] = static_cast<double>(bytes) / static_cast<double>(model.num_events());
  state.counters["ns_per_event"] = benchmark::Counter(static_cast<double>(model.num_events()),
                                                      benchmark::Counter::kIsIterationInvariantRate |
                                                          benchmark::Counter::kInvert);
}
BENCHMARK(BM_TimelineIndex_Model)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

// The graph view's model side: slots (signatures, first free slot per
// Function), groups, for a long training trace.
void BM_GraphScene(benchmark::State& state) {
  hookscope::analysis::SyntheticOptions o;
  o.events = static_cast<size_t>(state.range(0));
  const hookscope::analysis::Model model(hookscope::analysis::make_synthetic_trace(o));
  size_t slots = 0;
  for (auto _ : state) {
    hr::GraphScene scene(model);
    slots = scene.nodes().size();
    benchmark::DoNotOptimize(scene.nodes().data());
  }
  state.counters["events"] = static_cast<double>(model.num_events());
  state.counters["functions"] = static_cast<double>(model.functions().size());
  state.counters["slots"] = static_cast<double>(slots);
}
BENCHMARK(BM_GraphScene)->Arg(1'000'000)->Unit(benchmark::kMillisecond);

#ifdef HOOKSCOPE_RENDER_DRAW

void BM_TimelineFrame(benchmark::State& state) {
  hookscope::testing::HeadlessImGui imgui(1600.f, 1000.f);  // no renderer
  hr::TimelineView view;
  view.set_index(ten_million_events());
  imgui.frame([&] { view.draw(0); });  // fits
  const hr::TimelineTrack& first = view.index().tracks()[0];
  const auto mid = static_cast<double>(first.time(first.size() / 2));  // inside a burst
  if (state.range(0) == 1) view.set_window(mid, mid + 50e6);
  if (state.range(0) == 2) view.set_window(mid, mid + 100e3);
  int vertices = 0;
  for (auto _ : state) vertices = imgui.frame([&] { view.draw(0); });
  static const char* kNames[] = {"fitted: 10M events, 11 s in 1480 px", "50 ms: 25k events",
                                 "100 us: 50 events"};
  state.SetLabel(kNames[state.range(0)]);
  state.counters["events"] = static_cast<double>(view.index().num_events());
  state.counters["ticks"] = view.stats().ticks;
  state.counters["folds"] = view.stats().folds;
  state.counters["spans"] = view.stats().spans;
  state.counters["vertices"] = vertices;
}
BENCHMARK(BM_TimelineFrame)->DenseRange(0, 2)->Unit(benchmark::kMillisecond);

#endif  // HOOKSCOPE_RENDER_DRAW

}  // namespace

BENCHMARK_MAIN();
