// Note [Alarms by intervals]: above GraphViewOptions::indexed_functions and
// while the State is pending, the density cells marked as alarms (a box
// holding a hook of a destroyed owner) and fit's focus on alarm boxes are
// those the walk over the full State gives, at the same events and places.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/draw/graph_view.h"
#include "render/draw/graph_view_live.h"
#include "render/layout/story.h"
#include "testing/headless_imgui.h"
#include "testing/graph_test_models.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::HeadlessImGui;

namespace {

using Rects = std::vector<std::tuple<float, float, float, float>>;

Rects alarm_cells(const GraphDrawStats& s) {
  Rects r;
  for (const auto& c : s.alarm_cells) r.emplace_back(c.x0, c.y0, c.x1, c.y1);
  return r;
}

// Per unit of `view`'s scene: whether it holds a hook of an owner destroyed
// by the State's event (on a live Function, or on a leaf's tensor while its
// slot has none), from the State itself.
std::vector<uint8_t> alarm_units_of(const analysis::Model& model, const GraphView& view, const analysis::State& s) {
  const GraphScene& scene = *view.scene();
  const FoldedGraph& fg = *view.folded_graph();
  std::vector<uint8_t> slot_live(scene.nodes().size(), 0), alarm(fg.group_of_unit.size(), 0);
  auto dead = [&](const analysis::HookAt& h) {
    const analysis::OwnerIndex o = model.hooks()[h.hook].owner;
    return o < model.owners().size() && model.owners()[o].destroyed_at <= s.index;
  };
  for (const analysis::FunctionAt& fa : s.functions) {
    const uint32_t slot = scene.slot_of(fa.function);
    slot_live[slot] = 1;
    for (const auto& hooks : fa.hooks) {
      for (const analysis::HookAt& h : hooks) {
        if (dead(h) && fg.unit_of_node[slot] != kNoSlot) alarm[fg.unit_of_node[slot]] = 1;
      }
    }
  }
  for (const analysis::HookAt& h : s.tensor_hooks) {
    const uint32_t slot = scene.slot_of(h.function);
    if (!slot_live[slot] && dead(h) && fg.unit_of_node[slot] != kNoSlot) alarm[fg.unit_of_node[slot]] = 1;
  }
  return alarm;
}

}  // namespace

TEST_CASE("graph live index: the alarm units at an event include every box the State has as an alarm") {
  HeadlessImGui imgui(1200.f, 800.f);
  for (const analysis::Model* m : {&testing::graph_recovery_model(), &testing::graph_autograd_model()}) {
    const analysis::Model& model = *m;
    GraphView view;
    view.set_model(&model);
    view.set_compact(false);
    view.wait_for_layout();
    const std::atomic<bool> cancel{false};
    const std::unique_ptr<LiveIndex> index =
        LiveIndex::build(model, *view.scene(), *view.folded_graph(), *view.layout(), cancel);
    REQUIRE(index);
    size_t alarms = 0, candidates = 0, checks = 0;
    std::vector<uint32_t> got, crowded;
    for (size_t e = 0; e < model.num_events(); e += 5) {
      const analysis::State s = model.state_at(e);
      const std::vector<uint8_t> want = alarm_units_of(model, view, s);
      index->alarm_units(static_cast<analysis::EventIndex>(e), got, crowded);
      CHECK(crowded.empty());  // a few alarm boxes per cell: each one checked
      std::set<uint32_t> have;
      size_t to_check = 0;
      for (uint32_t a : got) {
        have.insert(a & ~LiveIndex::kAlarmCheck);
        to_check += (a & LiveIndex::kAlarmCheck) != 0;
      }
      // Unchecked ones are alarms (every rule holds for them).
      for (uint32_t a : got) {
        if (!(a & LiveIndex::kAlarmCheck)) CHECK_MESSAGE(want[a], "unit " << a << " at " << e);
      }
      checks += to_check;
      CHECK(have.size() == got.size());  // each once
      for (uint32_t u = 0; u < want.size(); ++u) {
        if (want[u] && u < view.layout()->center.size()) CHECK_MESSAGE(have.count(u), "unit " << u << " at " << e);
        alarms += want[u];
      }
      candidates += got.size();
    }
    if (m == &testing::graph_recovery_model()) {
      CHECK(alarms > 0);  // the policy-none run leaks hooks
      CHECK(candidates <= 2 * alarms);  // the superset is close to the set
      CHECK(checks < candidates);       // most need no check
    } else {
      CHECK(candidates == alarms);
    }
  }
}

TEST_CASE("graph view: zoomed out to cells, the alarm cells indexed and pending are the walk's") {
  const analysis::Model& model = testing::graph_recovery_model();
  testing::SettledView settled(model, false);
  HeadlessImGui& imgui = settled.imgui;
  GraphView& view = settled.view;
  const Vec2 fitted = settled.fitted;
  const float fit_zoom = settled.fit_zoom;
  std::mt19937 rng(21);
  size_t with_alarms = 0, rounds = 0;
  std::set<Rects> seen;
  for (size_t e = 0; e < model.num_events(); e += 3) {
    // Far out (density cells), and less far, shifted (cells again, other places).
    const bool shifted = (e / 3) % 2 == 1;
    const Vec2 center = shifted ? Vec2{fitted.x + (rng() % 400) - 200.f, fitted.y + (rng() % 200) - 100.f} : fitted;
    const float zoom = fit_zoom * (shifted ? 0.1f : 0.05f);
    const analysis::State s = model.state_at(e);
    auto draw_full = [&](size_t threshold) {
      view.set_indexed_functions(threshold);
      view.set_view(center, zoom);
      for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(s); });
      REQUIRE(view.stats().detail == GraphDetail::kCells);
      CHECK(view.stats().indexed == (threshold == 0));
      return alarm_cells(view.stats());
    };
    const Rects walk = draw_full(SIZE_MAX);
    const Rects indexed = draw_full(0);
    view.set_indexed_functions(SIZE_MAX);
    const analysis::StateView sv(model, e);
    view.set_view(center, zoom);
    for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
    CHECK(view.stats().state_pending);
    const Rects pending = alarm_cells(view.stats());
    CHECK_MESSAGE(walk == indexed, "event " << e << ": " << walk.size() << " alarm cells walked, " << indexed.size()
                                            << " indexed");
    CHECK_MESSAGE(walk == pending, "event " << e << ": " << walk.size() << " alarm cells walked, " << pending.size()
                                            << " pending");
    with_alarms += !walk.empty();
    seen.insert(walk);
    ++rounds;
  }
  // Alarms at some events and not others, at several places.
  CHECK(with_alarms > 5);
  CHECK(with_alarms < rounds);
  CHECK(seen.size() > 3);
}

TEST_CASE("graph view: fit frames the alarm boxes first, indexed and pending as with the walk") {
  const analysis::Model& model = testing::graph_recovery_model();
  const RunStory story(model);
  std::set<size_t> incidents;  // fit frames a failing rank's boxes there
  for (const RankIncident& inc : story.incidents()) {
    if (inc.kind != IncidentKind::kRebuilt) incidents.insert(inc.at);
  }
  REQUIRE(!incidents.empty());
  // A small canvas: the graph does not fit with readable text, so fit
  // zooms to the readable size around what matters (focus_region).
  HeadlessImGui imgui(420.f, 300.f);
  GraphView view;
  testing::open_settled(view, model, false);
  size_t on_alarms = 0, rounds = 0;
  std::set<std::tuple<float, float>> centers;
  size_t at_incidents = 0;
  std::set<size_t> events(incidents);
  for (size_t e = 1; e < model.num_events(); e += 4) events.insert(e);
  for (size_t e : events) {
    const analysis::State s = model.state_at(e);
    auto fit_with = [&](auto&& draw_it) {
      view.fit();
      imgui.frame(draw_it);
      CHECK(view.stats().fit);
      const GraphDrawStats::Rect r = view.stats().fit_focus;
      return std::make_tuple(view.stats().fit_on_alarms, r.x0, r.y0, r.x1, r.y1, view.center().x, view.center().y,
                             view.zoom());
    };
    view.set_indexed_functions(SIZE_MAX);
    const auto walk = fit_with([&] { view.draw(s); });
    view.set_indexed_functions(0);
    const auto indexed = fit_with([&] { view.draw(s); });
    CHECK(view.stats().indexed);
    view.set_indexed_functions(SIZE_MAX);
    const analysis::StateView sv(model, e);
    const auto pending = fit_with([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
    CHECK(view.stats().state_pending);
    CHECK_MESSAGE(walk == indexed, "event " << e << ": on alarms " << std::get<0>(walk) << "/" << std::get<0>(indexed));
    CHECK_MESSAGE(walk == pending, "event " << e << ": on alarms " << std::get<0>(walk) << "/" << std::get<0>(pending));
    if (incidents.count(e)) {  // the rank's boxes, not the alarms, whichever way the view is drawn
      ++at_incidents;
      CHECK(!std::get<0>(walk));
      CHECK(std::get<1>(walk) < std::get<3>(walk));
    } else if (std::get<0>(walk)) {
      ++on_alarms;
      centers.insert({std::get<5>(walk), std::get<6>(walk)});
    }
    ++rounds;
  }
  CHECK(on_alarms > 5);
  CHECK(on_alarms < rounds);
  CHECK(centers.size() > 1);
  CHECK(at_incidents == incidents.size());
}

#endif  // HOOKSCOPE_RENDER_DRAW
