// The layout and the app at scale (a million Functions): Note [Large
// graphs] keeps 200k Functions within a bound a 2-core CI box meets, a hub's
// long edges go direct, a newer layout request cancels an older one without
// waiting for it (Note [Layout jobs]), a newer load cancels the one in
// progress (Note [Cancelled loads]), and the crafted many-Functions file
// (tests/support/testing/crafted_traces.h) opens headless within a time limit.
#include <doctest/doctest.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <thread>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "testing/crafted_traces.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/layout/layout_job.h"
#include "render/sample_graphs.h"

#if HOOKSCOPE_APP_UI
#include <unistd.h>

#include "loader.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "testing/headless_imgui.h"
#endif

using namespace hookscope;
using namespace hookscope::render;

namespace {

// CPU seconds of this thread: what the layout costs, whatever else the
// machine runs.
double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Within each layer, boxes in x order keep apart.
void check_layers_disjoint(const Layout& l) {
  size_t overlaps = 0;
  for (int layer = 0; layer < l.num_layers; ++layer) {
    for (uint32_t i = l.layer_begin[layer] + 1; i < l.layer_begin[layer + 1]; ++i) {
      const int a = l.layer_nodes[i - 1], b = l.layer_nodes[i];
      overlaps += l.center[a].x + 0.5f * l.size[a].x > l.center[b].x - 0.5f * l.size[b].x + 1e-3f;
    }
  }
  CHECK(overlaps == 0);
}

LayoutInput hub(int n) {  // a chain, and every Function also points at the first
  LayoutInput in;
  in.graph.num_nodes = n;
  for (int v = 1; v < n; ++v) {
    in.graph.edges.emplace_back(v, v - 1);
    if (v > 1) in.graph.edges.emplace_back(v, 0);
  }
  return in;
}

}  // namespace

TEST_CASE("layout at scale: 200k Functions of transformer blocks lay out near-linearly") {
  SampleGraph s = make_transformer_graph(200'000);
  LayoutInput in;
  in.graph = s.graph;
  in.sizes = s.sizes;
  const double start = thread_cpu_seconds();
  const Layout l = compute_layout(in);
  const double cpu = thread_cpu_seconds() - start;
  MESSAGE("200k Functions: " << cpu << " s CPU, " << l.num_layers << " layers, " << l.num_dummies
                             << " dummies, " << l.crossings << " crossings");
  // ~0.15 s here; the bound allows a slow CI core ~20x (quadratic work would
  // take minutes).
  CHECK(cpu < 4.0);
  REQUIRE_FALSE(l.cancelled);
  CHECK(l.simplified);  // past LayoutOptions::large_graph
  REQUIRE(l.center.size() == static_cast<size_t>(in.graph.num_nodes));
  check_layers_disjoint(l);
  for (size_t e = 0; e < in.graph.edges.size(); ++e) {
    auto [a, b] = in.graph.edges[e];
    CHECK(l.layer[a] < l.layer[b]);
    CHECK(l.route_begin[e + 1] - l.route_begin[e] >= 4);
  }
}

TEST_CASE("layout at scale: past the dummy budget a hub's longest edges go direct, in linear time") {
  LayoutInput in = hub(20'000);  // all-dummies would be ~200M
  LayoutOptions o;
  o.max_dummies = 50'000;
  const double start = thread_cpu_seconds();
  const Layout l = compute_layout(in, o);
  const double cpu = thread_cpu_seconds() - start;
  CHECK(cpu < 4.0);
  CHECK(l.simplified);
  CHECK(l.direct_edges > 0);
  CHECK(l.num_dummies <= o.max_dummies + in.graph.edges.size());
  check_layers_disjoint(l);
  for (size_t e = 0; e < in.graph.edges.size(); ++e) {
    auto [a, b] = in.graph.edges[e];
    REQUIRE(l.layer[a] < l.layer[b]);
    const uint32_t rb = l.route_begin[e], re = l.route_begin[e + 1];
    REQUIRE(re - rb >= 4);
    // Every route, direct or not, runs from the bottom of its source to the top of its target.
    CHECK(l.route[rb].y == doctest::Approx(l.center[a].y + 0.5f * l.size[a].y));
    CHECK(l.route[re - 1].y == doctest::Approx(l.center[b].y - 0.5f * l.size[b].y));
  }
  // Small graphs are untouched: every edge gets its dummies.
  const Layout small = compute_layout(hub(60));
  CHECK(small.direct_edges == 0);
  CHECK_FALSE(small.simplified);
}

TEST_CASE("graph scene at scale: 300k live identical Functions get their slots in n log n") {
  // One signature for all (same name, no edges): slots were found by a scan
  // of the family, quadratic; the "1M live Functions take 180 s".
  analysis::TraceBuilder b;
  std::vector<uint64_t> ids;
  for (int k = 0; k < 300'000; ++k) ids.push_back(b.function("AddBackward0"));
  // Release every other one and create as many again: they reuse the freed
  // slots, lowest instance first.
  for (size_t k = 0; k < ids.size(); k += 2) b.release(ids[k]);
  for (int k = 0; k < 150'000; ++k) b.function("AddBackward0");
  const analysis::Model m(b.take());
  const double start = thread_cpu_seconds();
  const GraphScene scene(m);
  const double cpu = thread_cpu_seconds() - start;
  MESSAGE("300k identical Functions: scene in " << cpu << " s CPU");
  CHECK(cpu < 10.0);
  CHECK(scene.nodes().size() == 300'000);  // 450k Functions, at most 300k alive at once
  std::vector<uint8_t> seen(300'000, 0);
  for (const SceneNode& n : scene.nodes()) {
    REQUIRE(n.instance < seen.size());
    seen[n.instance] = 1;
  }
  CHECK(std::count(seen.begin(), seen.end(), 1) == 300'000);
}

TEST_CASE("layout jobs: a newer request cancels an older one without waiting for it") {
  SampleGraph s = make_transformer_graph(300'000);
  LayoutInput big;
  big.graph = s.graph;
  big.sizes = s.sizes;
  const int before = LayoutJob::running_jobs();
  auto job = std::make_unique<LayoutJob>(big);
  std::this_thread::sleep_for(std::chrono::milliseconds(20));  // let it get going
  CHECK(LayoutJob::running_jobs() == before + 1);
  // The graph view's pattern: the new job replaces the old one.
  const auto start = std::chrono::steady_clock::now();
  job = std::make_unique<LayoutJob>(hub(50));
  const double dropped = seconds_since(start);
  CHECK(dropped < 0.25);  // a flag and a thread start, not the old layout's remaining seconds
  const Layout l = job->get();
  CHECK_FALSE(l.cancelled);
  CHECK(l.center.size() == 50);
  // The cancelled thread stops soon (its current step), not after a whole layout.
  while (LayoutJob::running_jobs() > before && seconds_since(start) < 60.0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  CHECK(LayoutJob::running_jobs() == before);
  // A job cancelled by hand says so.
  LayoutJob again(big);
  again.cancel();
  CHECK(again.get().cancelled);
}

#if HOOKSCOPE_APP_UI

namespace {

std::filesystem::path scratch_dir() {
  const auto d = std::filesystem::temp_directory_path() / ("hookscope_scale_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace

TEST_CASE("loader: a newer load cancels the one in progress and is the one delivered") {
  namespace crafted = testing::crafted;
  const auto dir = scratch_dir();
  std::string big_path, small_path;
  for (const auto& c : crafted::catalogue(200'000)) {
    if (c.name == "many_functions") {
      big_path = (dir / "big.hstrace").string();
      std::ofstream(big_path, std::ios::binary) << c.bytes;
    }
  }
  for (const auto& c : crafted::catalogue(10)) {
    if (c.name == "many_functions") {
      small_path = (dir / "small.hstrace").string();
      std::ofstream(small_path, std::ios::binary) << c.bytes;
    }
  }
  REQUIRE(!big_path.empty());
  app::TraceLoader loader;
  loader.start({big_path});
  const auto start = std::chrono::steady_clock::now();
  loader.start({small_path});  // Note [Cancelled loads]: no waiting for the big one
  CHECK(seconds_since(start) < 0.25);
  auto r = loader.wait();
  REQUIRE(r.has_value());
  REQUIRE(r->model);
  CHECK(r->files == std::vector<std::string>{small_path});
  CHECK(r->model->functions().size() == 50);
  CHECK_FALSE(loader.busy());
  // A cancelled load reports it and yields no model.
  std::atomic<bool> cancel{true};
  const app::LoadResult cancelled = app::load_traces({big_path}, nullptr, &cancel);
  CHECK_FALSE(cancelled.model);
  CHECK(cancelled.errors == "cancelled\n");
  std::filesystem::remove_all(dir);
}

TEST_CASE("gui at scale: the crafted 18 KB many-Functions file opens headless in bounded time") {
  namespace crafted = testing::crafted;
  std::string bytes;
  for (const auto& c : crafted::catalogue(20'000)) {
    if (c.name == "many_functions") bytes = c.bytes;
  }
  REQUIRE(bytes.size() < 20'000);  // the 18 KB file: 100k Functions in one chain
  const auto dir = scratch_dir();
  const std::string path = (dir / "many_functions.hstrace").string();
  std::ofstream(path, std::ios::binary) << bytes;
  const auto start = std::chrono::steady_clock::now();
  app::TraceLoader loader;
  loader.start({path});
  auto r = loader.wait();
  REQUIRE(r.has_value());
  REQUIRE(r->model);
  CHECK(r->model->functions().size() == 100'000);
  // The scene and the story came built from the loader thread (Note [Scene
  // off the UI thread]), and the view takes them as they are.
  REQUIRE(r->scene);
  REQUIRE(r->story);
  CHECK(r->scene->nodes().size() == GraphScene(*r->model).nodes().size());
  const GraphScene* built = r->scene.get();
  testing::HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  view.set_model(r->model.get(), r->scene, r->story);
  CHECK(view.scene() == built);
  view.wait_for_layout();
  REQUIRE(view.layout_ready());
  const analysis::State state = r->model->state_at(r->model->num_events() - 1);
  for (int f = 0; f < 3; ++f) imgui.frame([&] { view.draw(state); });
  const double total = seconds_since(start);
  MESSAGE("100k-Function chain: loaded, laid out and drawn in " << total << " s");
  CHECK(total < 60.0);  // ~1 s here; it used to hang the GUI
  CHECK(view.layout()->num_layers >= 100'000 - 1);
  std::filesystem::remove_all(dir);
}

#endif  // HOOKSCOPE_APP_UI
