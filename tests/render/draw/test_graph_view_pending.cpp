// Note [Graph while the state is pending]: drawn from a StateView, the graph
// shows what the full State at that event shows for the boxes in view (live
// boxes, alarms, chips), never another event's; the compact layout waits.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <atomic>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <tuple>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/draw/graph_view.h"
#include "render/draw/graph_view_live.h"
#include "testing/headless_imgui.h"
#include "testing/graph_test_models.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::drawn;
using hookscope::testing::HeadlessImGui;

namespace {

const analysis::Model& recovery_model() { return testing::graph_recovery_model(); }

// Leaf hooks that move to the tensor between steps (ghost boxes).
const analysis::Model& autograd_model() { return testing::graph_autograd_model(); }

}  // namespace

TEST_CASE("graph view: while the state is pending it draws the new event from the StateView, as the full State") {
  const analysis::Model& model = recovery_model();
  REQUIRE(model.num_events() > 200);
  testing::SettledView settled(model, false);
  HeadlessImGui& imgui = settled.imgui;
  GraphView& view = settled.view;

  std::mt19937 rng(16);
  std::set<decltype(drawn(view.stats()))> seen;
  uint32_t alarms = 0, boxes = 0;
  for (int round = 0; round < 40; ++round) {
    const size_t b = round == 0 ? 0 : rng() % model.num_events();
    // Fitted, then zoomed in on a part (culling by the view).
    const bool zoomed = round % 2 == 1;
    const auto [center, zoom] = settled.look(zoomed, rng);
    view.set_view(center, zoom);
    const analysis::StateView sv(model, b);
    // Two frames each: whether the minimap's column is reserved follows the
    // frame before (as for any move).
    for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
    CHECK(view.stats().state_pending);
    const auto pending = drawn(view.stats());
    const analysis::State full = model.state_at(b);
    for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(full); });
    CHECK_FALSE(view.stats().state_pending);
    const auto fulld = drawn(view.stats());
    CHECK_MESSAGE(pending == fulld, "event " << b << (zoomed ? " zoomed" : " fitted") << ": boxes "
                                            << std::get<1>(pending) << "/" << std::get<1>(fulld) << ", alarms "
                                            << std::get<3>(pending) << "/" << std::get<3>(fulld) << ", live "
                                            << std::get<4>(pending) << "/" << std::get<4>(fulld));
    seen.insert(pending);
    alarms += view.stats().alarms;
    boxes += view.stats().boxes;
  }
  // The events differ in what is drawn, so equal means the new event's.
  CHECK(seen.size() > 10);
  CHECK(boxes > 0);
  CHECK(alarms > 0);
}

TEST_CASE("graph view: the pending draw never shows the previous event's boxes") {
  const analysis::Model& model = recovery_model();
  testing::SettledView settled(model, false);
  HeadlessImGui& imgui = settled.imgui;
  GraphView& view = settled.view;
  const uint32_t before = view.stats().live_units;
  REQUIRE(before > 0);
  // Event 0: nothing is live yet; the old state had boxes.
  const analysis::StateView sv(model, 0);
  imgui.frame([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
  CHECK(view.stats().live_units == model.state_at(0).functions.size());
  CHECK(view.stats().boxes <= view.stats().live_units);
}

TEST_CASE("graph view: no compact re-layout while the state is pending; the full State starts it") {
  const analysis::Model& model = recovery_model();
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  testing::open_settled(view, model, true);
  const size_t last = model.num_events() - 1;
  const analysis::State at_last = model.state_at(last);
  imgui.frame([&] { view.draw(at_last); });
  view.wait_for_layout();
  view.wait_for_live_index();
  imgui.frame([&] { view.draw(at_last); });
  REQUIRE_FALSE(view.layout_pending());
  // An event whose live set differs from the last one's.
  size_t b = last / 2;
  while (b > 0 && model.state_at(b).functions.size() == at_last.functions.size()) --b;
  const analysis::StateView sv(model, b);
  for (int i = 0; i < 3; ++i) {
    imgui.frame([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
    CHECK_FALSE(view.layout_pending());
  }
  const analysis::State full = model.state_at(b);
  imgui.frame([&] { view.draw(full); });
  CHECK(view.layout_pending());
  view.wait_for_layout();
  view.wait_for_live_index();
}

TEST_CASE("graph live index: the units shown, their count per cell, bounds and ranks are the full State's") {
  HeadlessImGui imgui(1200.f, 800.f);
  size_t with_ghosts = 0;
  for (const analysis::Model* m : {&recovery_model(), &autograd_model()}) {
  const analysis::Model& model = *m;
  for (const bool compact : {false, true}) {
    GraphView view;
    testing::open_settled(view, model, compact);
    const GraphScene& scene = *view.scene();
    const FoldedGraph& fg = *view.folded_graph();
    const Layout& l = *view.layout();
    const std::atomic<bool> cancel{false};
    const std::unique_ptr<LiveIndex> index = LiveIndex::build(model, scene, fg, l, cancel);
    REQUIRE(index);
    std::mt19937 rng(4);
    size_t nonempty = 0;
    std::vector<uint32_t> counts;
    for (int round = 0; round < 60; ++round) {
      const auto e = static_cast<analysis::EventIndex>(round == 0 ? 0 : rng() % model.num_events());
      const analysis::State s = model.state_at(e);
      // As GraphView::refresh_liveness: a unit is shown with a live Function
      // or a hook on its leaf's tensor.
      std::vector<uint8_t> slot_live(scene.nodes().size(), 0), shown(fg.group_of_unit.size(), 0);
      for (const analysis::FunctionAt& fa : s.functions) slot_live[scene.slot_of(fa.function)] = 1;
      for (const analysis::FunctionAt& fa : s.functions) {
        const uint32_t u = fg.unit_of_node[scene.slot_of(fa.function)];
        if (u != kNoSlot) shown[u] = 1;
      }
      for (const analysis::HookAt& h : s.tensor_hooks) {
        const uint32_t slot = scene.slot_of(h.function);
        if (slot_live[slot] || fg.unit_of_node[slot] == kNoSlot) continue;
        shown[fg.unit_of_node[slot]] = 1;
        ++with_ghosts;
      }
      size_t want = 0;
      Vec2 lo{INFINITY, INFINITY}, hi{-INFINITY, -INFINITY};
      for (uint32_t u = 0; u < shown.size(); ++u) {
        CHECK_MESSAGE(index->shown(u, e) == static_cast<bool>(shown[u]), "unit " << u << " at " << e);
        if (!shown[u]) continue;
        ++want;
        lo = {std::min(lo.x, l.center[u].x - l.size[u].x * 0.5f), std::min(lo.y, l.center[u].y - l.size[u].y * 0.5f)};
        hi = {std::max(hi.x, l.center[u].x + l.size[u].x * 0.5f), std::max(hi.y, l.center[u].y + l.size[u].y * 0.5f)};
      }
      index->count_cells(e, counts);
      size_t got = 0;
      for (uint32_t n : counts) got += n;
      CHECK(got == want);
      Vec2 glo, ghi;
      CHECK(index->shown_bounds(e, counts, &glo, &ghi) == (want > 0));
      if (want > 0) {
        CHECK(glo.x == lo.x);
        CHECK(glo.y == lo.y);
        CHECK(ghi.x == hi.x);
        CHECK(ghi.y == hi.y);
        ++nonempty;
      }
      std::vector<std::pair<uint16_t, uint32_t>> ranks, want_ranks;
      index->live_sources(e, ranks);
      for (const analysis::FunctionAt& fa : s.functions) {
        want_ranks.push_back({model.functions()[fa.function].rank, model.functions()[fa.function].source});
      }
      std::sort(want_ranks.begin(), want_ranks.end());
      want_ranks.erase(std::unique(want_ranks.begin(), want_ranks.end()), want_ranks.end());
      CHECK(ranks == want_ranks);
    }
    CHECK(nonempty > 30);
  }
  }
  CHECK(with_ghosts > 0);  // the autograd demo's leaves' hooks wait on the tensor between steps
}

TEST_CASE("graph view: pending, ghost boxes (hooks on a leaf's tensor) and their chips as the full State's") {
  const analysis::Model& model = autograd_model();
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  testing::open_settled(view, model, false);
  const analysis::State at_last = model.state_at(model.num_events() - 1);
  imgui.frame([&] { view.draw(at_last); });
  imgui.frame([&] { view.draw(at_last); });
  size_t ghosts = 0;
  for (size_t b = 0; b < model.num_events(); b += 7) {
    const analysis::StateView sv(model, b);
    for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
    const auto pending = drawn(view.stats());
    const analysis::State full = model.state_at(b);
    for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(full); });
    CHECK_MESSAGE(pending == drawn(view.stats()), "event " << b);
    ghosts += full.tensor_hooks.size();
  }
  CHECK(ghosts > 0);
}

TEST_CASE("graph view: zoomed out to cells while pending, the cells and minimap are the new event's") {
  const analysis::Model& model = recovery_model();
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  testing::open_settled(view, model, false);
  const analysis::State at_last = model.state_at(model.num_events() - 1);
  imgui.frame([&] { view.draw(at_last); });
  // Far out: density cells (Note [Graph level of detail]).
  view.set_view(view.center(), view.zoom() * 0.05f);
  imgui.frame([&] { view.draw(at_last); });
  REQUIRE(view.stats().detail == GraphDetail::kCells);
  REQUIRE(view.stats().cells > 0);
  // Event 0: nothing is live, so no cell may be lit (the last State had some).
  const analysis::StateView sv0(model, 0);
  imgui.frame([&] { view.draw(sv0, analysis::kNoIndex, analysis::kNoIndex); });
  CHECK(view.stats().state_pending);
  CHECK(view.stats().cells == 0);
  CHECK(view.stats().live_units == 0);
  // A busy event: cells lit while pending as with the full State.
  const size_t b = model.num_events() / 2;
  const analysis::State full = model.state_at(b);
  REQUIRE(!full.functions.empty());
  const analysis::StateView sv(model, b);
  imgui.frame([&] { view.draw(sv, analysis::kNoIndex, analysis::kNoIndex); });
  CHECK(view.stats().cells > 0);
  const uint32_t pending_live = view.stats().live_units;
  imgui.frame([&] { view.draw(full); });
  CHECK(view.stats().cells > 0);
  CHECK(pending_live == view.stats().live_units);
}

#endif
