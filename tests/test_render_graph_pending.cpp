// Note [Graph while the state is pending]: drawn from a StateView, the graph
// shows what the full State at that event shows for the boxes in view (live
// boxes, alarms, chips), never another event's; the compact layout waits.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <memory>
#include <random>
#include <set>
#include <tuple>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/draw/graph_view.h"
#include "testing/headless_imgui.h"
#include "test_util.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::HeadlessImGui;

namespace {

const analysis::Model& recovery_model() {
  static const analysis::Model m(testing::record_recovery_trace(), analysis::ModelOptions{256, 8.0});
  return m;
}

// What a frame drew that the state decides.
auto drawn(const GraphDrawStats& s) {
  std::vector<std::tuple<float, float, float, float>> rects;
  for (const auto& r : s.box_rects) rects.emplace_back(r.x0, r.y0, r.x1, r.y1);
  return std::make_tuple(s.detail, s.boxes, s.texts, s.alarms, s.live_units, s.stale_chips, s.ghost_chips,
                         s.removal_boxes, s.gen_labels, s.edges, s.banners.size(), rects);
}

}  // namespace

TEST_CASE("graph view: while the state is pending it draws the new event from the StateView, as the full State") {
  const analysis::Model& model = recovery_model();
  REQUIRE(model.num_events() > 200);
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  view.set_model(&model);
  view.set_compact(false);
  view.wait_for_layout();
  const size_t last = model.num_events() - 1;
  const analysis::State at_last = model.state_at(last);
  imgui.frame([&] { view.draw(at_last); });
  imgui.frame([&] { view.draw(at_last); });
  const Vec2 fitted = view.center();
  const float fit_zoom = view.zoom();

  std::mt19937 rng(16);
  std::set<decltype(drawn(view.stats()))> seen;
  uint32_t alarms = 0, boxes = 0;
  for (int round = 0; round < 40; ++round) {
    const size_t b = round == 0 ? 0 : rng() % model.num_events();
    // Fitted, then zoomed in on a part (culling by the view).
    const bool zoomed = round % 2 == 1;
    view.set_view(zoomed ? Vec2{fitted.x + (rng() % 200) - 100.f, fitted.y + (rng() % 200) - 100.f} : fitted,
                  zoomed ? fit_zoom * 2.5f : fit_zoom);
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
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  view.set_model(&model);
  view.set_compact(false);
  view.wait_for_layout();
  const analysis::State at_last = model.state_at(model.num_events() - 1);
  imgui.frame([&] { view.draw(at_last); });
  imgui.frame([&] { view.draw(at_last); });
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
  view.set_model(&model);
  view.set_compact(true);
  view.wait_for_layout();
  const size_t last = model.num_events() - 1;
  const analysis::State at_last = model.state_at(last);
  imgui.frame([&] { view.draw(at_last); });
  view.wait_for_layout();
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
}

#endif
