// Compare at matching points (analysis/compare_sync.h) and the graph as SVG
// (render/layout/graph_svg.h) on real recovery runs, policy none vs by-key.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include "analysis/compare.h"
#include "analysis/compare_sync.h"
#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/state.h"
#include "render/layout/graph_scene.h"
#include "render/layout/graph_svg.h"
#include "render/layout/layout.h"
#include "render/layout/story.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"

using namespace hookscope;

namespace {

const analysis::Model& recovery(trace::DestroyPolicy policy, int recoveries = 2) {
  static std::map<std::pair<trace::DestroyPolicy, int>, std::unique_ptr<analysis::Model>> models;
  auto& m = models[{policy, recoveries}];
  if (!m) {
    m = std::make_unique<analysis::Model>(testing::record_trace([&] {
      scenarios::DdpScenarioOptions o;
      o.policy = policy;
      o.steps = 6;
      o.recoveries = recoveries;
      scenarios::run_ddp_scenario(o);
    }));
  }
  return *m;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE("compare sync: every story point resolves to its own event by name") {
  const analysis::Model& m = recovery(trace::DestroyPolicy::kNone);
  const auto points = analysis::story_points(m);
  std::set<std::string> kinds;
  for (const auto& p : points) {
    CHECK(analysis::resolve_point(m, p.name).index == p.index);
    kinds.insert(p.name.substr(0, p.name.find(':')));
  }
  // the recovery story has them all
  CHECK(kinds == std::set<std::string>{"backward", "constructed", "destroyed", "failure", "rebuild"});
  CHECK(std::is_sorted(points.begin(), points.end(), [](auto& a, auto& b) { return a.index < b.index; }));
}

TEST_CASE("compare sync: stepping A to after rebuild 1 moves B to its own after rebuild 1") {
  const analysis::Model& a = recovery(trace::DestroyPolicy::kNone);
  const analysis::Model& b = recovery(trace::DestroyPolicy::kByKey);
  const analysis::CompareSync sync(a, b);
  const size_t rebuild_a = analysis::resolve_point(a, "rebuild:1").index;
  const size_t rebuild_b = analysis::resolve_point(b, "rebuild:1").index;
  analysis::SyncedPoint p = sync.match(rebuild_a, analysis::SyncBy::kStory);
  CHECK(p.label == "after rebuild 1");
  CHECK(p.found);
  CHECK(p.a == rebuild_a);
  CHECK(p.b == rebuild_b);
  // One event later (no story point there): B stays at rebuild 1.
  if (sync.match(rebuild_a + 1, analysis::SyncBy::kStory).label == "after rebuild 1") {
    CHECK(sync.match(rebuild_a + 1, analysis::SyncBy::kStory).b == rebuild_b);
  }
  // Before any story point: B at its start.
  CHECK(sync.match(0, analysis::SyncBy::kStory).b == 0);
  // By kind ordinal: the n-th event of A's kind.
  p = sync.match(rebuild_a, analysis::SyncBy::kKindOrdinal);
  CHECK(p.found);
  CHECK(b.event(p.b).kind == a.event(rebuild_a).kind);
}

TEST_CASE("compare sync: a point B lacks is said, and B shows its last of that kind") {
  const analysis::Model& a = recovery(trace::DestroyPolicy::kNone, 2);
  const analysis::Model& b = recovery(trace::DestroyPolicy::kByKey, 1);
  const analysis::CompareSync sync(a, b);
  const analysis::SyncedPoint p = sync.match(analysis::resolve_point(a, "rebuild:2").index, analysis::SyncBy::kStory);
  CHECK(p.label == "after rebuild 2");
  CHECK_FALSE(p.found);
  CHECK(p.why.find("B has no rebuild 2 (it has 1)") != std::string::npos);
  CHECK(p.b == analysis::resolve_point(b, "rebuild:1").index);
  // and at rebuild 1 both have it
  CHECK(sync.match(analysis::resolve_point(a, "rebuild:1").index, analysis::SyncBy::kStory).found);
  // an empty side is no crash
  CHECK(sync.match(a.num_events() + 100, analysis::SyncBy::kKindOrdinal).a == a.num_events() - 1);
}

TEST_CASE("compare sync: at after rebuild 1, policy none has hooks by-key does not (listed per Function)") {
  const analysis::Model& a = recovery(trace::DestroyPolicy::kNone);
  const analysis::Model& b = recovery(trace::DestroyPolicy::kByKey);
  const analysis::CompareSync sync(a, b);
  const auto p = sync.match(analysis::resolve_point(a, "rebuild:2").index, analysis::SyncBy::kStory);
  REQUIRE(p.found);
  const analysis::ModelDiff d =
      analysis::diff_models_at(a, analysis::diagnose(a), p.a, b, analysis::diagnose(b), p.b);
  uint32_t only_a = 0, only_b = 0;
  const render::Generations gens_b(b);
  for (const auto& fc : d.functions) {
    only_a += fc.total_a() > fc.total_b() ? fc.total_a() - fc.total_b() : 0;
    if (fc.total_b() <= fc.total_a()) continue;
    only_b += fc.total_b() - fc.total_a();
    // by-key keeps nothing A lacks, but the point is on rank 0: the replaced
    // rank 1 may be further in its own rebuild in B, its new copies' hooks
    // already added (each copy is matched to its own generation's,
    // Note [Parameter copies in a diff])
    REQUIRE(fc.b != analysis::kNoIndex);
    CHECK(b.functions()[fc.b].rank == 1);
    CHECK(gens_b.of_function(fc.b) == 2);
  }
  CHECK(d.num_differing() > 0);
  CHECK(only_a > 0);   // the destroyed Reducers' hooks left behind
  // Order: the stale hooks fire in A, not in B.
  CHECK(!analysis::hook_order_diff(a, p.a, b, p.b).empty());
}

TEST_CASE("graph svg: well-formed, one rect per live box, titles and labels, chips in owner colours") {
  const analysis::Model& m = recovery(trace::DestroyPolicy::kNone);
  const render::GraphScene scene(m);
  const render::FoldedGraph folded = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
  const auto measure = [](std::string_view s) { return 7.f * static_cast<float>(s.size()); };
  render::LayoutInput in{folded.graph, scene.box_sizes(folded, measure), nullptr};
  const render::Layout layout = render::compute_layout(in);
  // The first backward() after rebuild 2: the forward graph (edges) is live,
  // and the destroyed Reducers' hooks still hang on the AccumulateGrads.
  const size_t rebuilt = analysis::resolve_point(m, "rebuild:2").index;
  const auto& begins = m.events_of_kind(trace::EventKind::kBackwardBegin);
  const auto first = std::upper_bound(begins.begin(), begins.end(), rebuilt);
  REQUIRE(first != begins.end());
  analysis::Cursor cursor(m, *first);
  render::GraphSvgOptions o;
  o.measure = measure;
  render::GraphSvgStats st;
  const std::string svg = render::graph_svg(scene, folded, layout, cursor.state(), o, &st);
  const auto live = render::live_units(scene, folded, cursor.state());
  const size_t live_boxes = static_cast<size_t>(std::count_if(live.begin(), live.end(), [](uint32_t v) { return v; }));
  REQUIRE(live_boxes > 4);
  CHECK(st.boxes == live_boxes);
  CHECK(count(svg, "<rect class=\"box\"") == live_boxes);
  CHECK(st.chips > 0);
  CHECK(count(svg, "<rect class=\"chip\"") == st.chips);
  CHECK(st.edges > 0);
  // Every live Function's name and an AccumulateGrad's parameter label are there.
  for (const auto& fa : cursor.state().functions) {
    CHECK(svg.find(">" + m.str(m.functions()[fa.function].name)) != std::string::npos);
  }
  CHECK(svg.find("stroke=\"" + render::svg_color(render::kDarkPalette.alarm) + "\"") != std::string::npos);  // leaked hooks
  // Parsed by a real XML parser: well-formed, same counts.
  const std::string path = (std::filesystem::temp_directory_path() / ("hookscope_svg_" + std::to_string(::getpid()) + ".svg")).string();
  std::ofstream(path) << svg;
  const auto r = testing::run_command(
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]); "
      "ns = '{http://www.w3.org/2000/svg}'; "
      "print(sum(1 for e in t.iter(ns + 'rect') if e.get('class') == 'box'))\" " + path);
  CHECK_MESSAGE(r.exit == 0, r.out);
  CHECK(r.out.find(std::to_string(live_boxes)) == 0);
  std::filesystem::remove(path);
  // A current view that holds nothing: no boxes.
  o.whole = false;
  o.view_min = {layout.max.x + 1000.f, layout.max.y + 1000.f};
  o.view_max = {layout.max.x + 2000.f, layout.max.y + 2000.f};
  render::graph_svg(scene, folded, layout, cursor.state(), o, &st);
  CHECK(st.boxes == 0);
}

TEST_CASE("graph svg: a layout of another graph is refused, colours are #rrggbb") {
  const analysis::Model& m = recovery(trace::DestroyPolicy::kByKey);
  const render::GraphScene scene(m);
  const render::FoldedGraph folded = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
  render::Layout empty;
  analysis::Cursor cursor(m);
  CHECK_THROWS_AS(render::graph_svg(scene, folded, empty, cursor.state()), std::invalid_argument);
  CHECK(render::svg_color(render::rgba(255, 16, 1)) == "#ff1001");
  CHECK(render::svg_alpha(render::rgba(0, 0, 0, 255)) == doctest::Approx(1.f));
}

TEST_CASE("graph svg: a kept-alive DDP's replaced Reducer outlines its boxes in the lingering colour, as on screen") {
  // Note [Lingering owners]: the old DDP is kept alive and rebuilt on the same module.
  const analysis::Model m(testing::record_trace([] {
    scenarios::DdpScenarioOptions o;
    o.name = "kept-alive";
    o.steps = 6;
    scenarios::run_ddp_scenario(o);
  }));
  analysis::EventIndex replaced = analysis::kNever, destroyed = analysis::kNever;
  for (const analysis::OwnerInfo& o : m.owners()) {
    if (o.replaced_at < replaced) replaced = o.replaced_at, destroyed = o.destroyed_at;
  }
  REQUIRE(replaced != analysis::kNever);
  const auto& begins = m.events_of_kind(trace::EventKind::kBackwardBegin);
  const auto at = std::upper_bound(begins.begin(), begins.end(), replaced);
  REQUIRE(at != begins.end());
  REQUIRE(*at < destroyed);  // still alive then: lingering, not destroyed
  const render::GraphScene scene(m);
  const render::FoldedGraph folded = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
  const auto measure = [](std::string_view s) { return 7.f * static_cast<float>(s.size()); };
  const render::Layout layout = render::compute_layout({folded.graph, scene.box_sizes(folded, measure), nullptr});
  analysis::Cursor cursor(m, *at);
  render::GraphSvgOptions o;
  o.measure = measure;
  render::GraphSvgStats st;
  const std::string svg = render::graph_svg(scene, folded, layout, cursor.state(), o, &st);
  CHECK(st.lingering_boxes > 0);
  CHECK(st.lingering_boxes == st.alarm_boxes);  // nothing destroyed yet: every alarm is a lingering owner
  const std::string lingering = "stroke=\"" + render::svg_color(render::kDarkPalette.lingering) + "\"";
  CHECK(count(svg, lingering) >= st.lingering_boxes);
  CHECK(svg.find("stroke=\"" + render::svg_color(render::kDarkPalette.alarm) + "\"") == std::string::npos);
}
