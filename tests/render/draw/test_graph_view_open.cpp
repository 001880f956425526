// Note [One layout at open]: a view given the opening event lays out once,
// the layout the first frame at that event needs (compact and of its live
// slots when full boxes cannot show readably), and draws what a view opened
// the old way (a full layout, then the compact one the fit asks for) draws.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <cstdint>
#include <tuple>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "render/sample_graphs.h"
#include "testing/headless_imgui.h"
#include "testing/graph_test_models.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::HeadlessImGui;

namespace {

// Frames at `s` until the view has nothing pending after a frame (every
// layout a frame asked for landed, its LiveIndex built).
void settle(HeadlessImGui& imgui, GraphView& view, const analysis::State& s) {
  for (int i = 0; i < 8; ++i) {
    imgui.frame([&] { view.draw(s); });
    if (!view.layout_pending() && view.layout_ready()) break;
    view.wait_for_layout();
    view.wait_for_live_index();
  }
  for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(s); });
}

auto picture(const GraphView& view) {
  const GraphDrawStats& s = view.stats();
  std::vector<std::tuple<float, float, float, float>> rects;
  for (const auto& r : s.box_rects) rects.emplace_back(r.x0, r.y0, r.x1, r.y1);
  return std::make_tuple(view.compact(), s.detail, s.boxes, s.texts, s.alarms, s.live_units, s.layout_units, s.edges,
                         s.cells, s.minimap_shown, rects, view.folded_graph()->node_of_unit);
}

}  // namespace

TEST_CASE("graph view: opened at an event with too many live boxes to read, it lays out once, compact, that event's live set") {
  HeadlessImGui imgui(1200.f, 800.f);
  const analysis::Model m(make_sample_trace(make_transformer_graph(6000)));
  const auto at = static_cast<analysis::EventIndex>(m.num_events() - 1);
  const analysis::State s = m.state_at(at);
  REQUIRE(s.functions.size() > 3000);  // more than 1200x800 px can show in readable full boxes
  for (const size_t indexed : {size_t{0}, SIZE_MAX}) {  // the LiveIndex's liveness, the State's
    CAPTURE(indexed);
    GraphView once, twice;
    for (GraphView* v : {&once, &twice}) {
      v->set_indexed_functions(indexed);
      imgui.frame([&] { v->draw(analysis::State{}); });  // the canvas, before any model
    }
    once.set_model(&m, nullptr, nullptr, at);
    CHECK(once.compact());
    CHECK(once.layouts_started() == 1);
    twice.set_model(&m);  // the event unknown: a full layout first
    CHECK_FALSE(twice.compact());
    settle(imgui, once, s);
    settle(imgui, twice, s);
    CHECK(once.layouts_started() == 1);  // the first frame found its live set laid out
    CHECK(twice.layouts_started() == 2);
    CHECK(twice.compact());
    CHECK(once.stats().layout_units == once.stats().live_units);
    CHECK(picture(once) == picture(twice));
    // Stepping back to while the graph was being built: the live set
    // differs, one more layout, then settled.
    analysis::State early;
    for (analysis::EventIndex e = at; e > 0 && (early.functions.empty() || early.functions.size() == s.functions.size());
         e = e * 7 / 8) {
      early = m.state_at(e);
    }
    REQUIRE(early.functions.size() < s.functions.size());
    REQUIRE_FALSE(early.functions.empty());
    settle(imgui, once, early);
    CHECK(once.layouts_started() == 2);
    CHECK(once.stats().layout_units == once.stats().live_units);
    CHECK_FALSE(once.layout_pending());
  }
}

TEST_CASE("graph view: a compact view given a model and its opening event lays out that event's live set once") {
  HeadlessImGui imgui(1200.f, 800.f);
  const analysis::Model& m = testing::graph_autograd_model();  // leaf hooks move to the tensor: ghost boxes
  GraphView view;
  view.set_compact(true);
  uint64_t layouts = view.layouts_started();
  const auto n = static_cast<analysis::EventIndex>(m.num_events());
  for (const analysis::EventIndex at : {n - 1, n / 2, n / 3, analysis::EventIndex{0}}) {
    CAPTURE(at);
    const analysis::State s = m.state_at(at);
    view.set_model(&m, nullptr, nullptr, at);
    settle(imgui, view, s);
    CHECK(view.layouts_started() == layouts + 1);
    layouts = view.layouts_started();
    CHECK(view.compact());
    CHECK(view.stats().layout_units == view.stats().live_units);
  }
}

TEST_CASE("graph view: a graph whose full boxes may fit opens in full boxes, as without the opening event") {
  HeadlessImGui imgui(1200.f, 800.f);
  const analysis::Model& m = testing::graph_recovery_model();
  const auto at = static_cast<analysis::EventIndex>(m.num_events() - 1);
  const analysis::State s = m.state_at(at);
  GraphView given, plain;
  for (GraphView* v : {&given, &plain}) imgui.frame([&] { v->draw(analysis::State{}); });
  given.set_model(&m, nullptr, nullptr, at);
  CHECK_FALSE(given.compact());  // the fit decides, as before
  plain.set_model(&m);
  settle(imgui, given, s);
  settle(imgui, plain, s);
  CHECK(given.layouts_started() == plain.layouts_started());
  CHECK(picture(given) == picture(plain));
}

#endif  // HOOKSCOPE_RENDER_DRAW
