// Note [Graph at a million Functions]: above GraphViewOptions::indexed_functions
// the graph reads the full State's liveness from the layout's LiveIndex, as
// while pending; what it draws (live boxes, chips, alarms, bounds, the
// compact view's live set) is what the walk over the State draws.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <cstdint>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "testing/headless_imgui.h"
#include "testing/graph_test_models.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::drawn;
using hookscope::testing::HeadlessImGui;

namespace {

const analysis::Model& recovery_model() { return testing::graph_recovery_model(); }

const analysis::Model& autograd_model() {  // leaf hooks move to the tensor between steps
  return testing::graph_autograd_model();
}

}  // namespace

TEST_CASE("graph view: above the indexed threshold the full State draws what the walk over it draws") {
  uint32_t alarms = 0, ghosts = 0, indexed_frames = 0;
  for (const analysis::Model* m : {&recovery_model(), &autograd_model()}) {
    const analysis::Model& model = *m;
    testing::SettledView settled(model, false);
    HeadlessImGui& imgui = settled.imgui;
    GraphView& view = settled.view;
    std::mt19937 rng(17);
    std::set<decltype(drawn(view.stats()))> seen;
    analysis::Cursor cursor(model);
    for (int round = 0; round < 60; ++round) {
      // Random events, and runs of steps (a Cursor, as while playing).
      if (round % 3 == 0) {
        cursor.seek(rng() % model.num_events());
      } else {
        for (int k = 0; k < 7 && cursor.next(); ++k) {
        }
      }
      const analysis::State& s = cursor.state();
      const bool zoomed = round % 2 == 1;
      const std::pair<Vec2, float> look = settled.look(zoomed, rng);
      const Vec2 center = look.first;
      const float zoom = look.second;
      auto draw_with = [&](size_t threshold, Vec2* fit_center, float* fit_zoom_out) {
        view.set_indexed_functions(threshold);
        view.set_view(center, zoom);
        for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(s); });
        CHECK(view.stats().indexed == (threshold == 0));
        const auto d = drawn(view.stats());
        // The live boxes' bounds: what fit() frames, around the selection
        // (the focus on alarm boxes: test_graph_view_alarms.cpp).
        view.select_function(s.functions.empty() ? analysis::kNoIndex : s.functions[s.functions.size() / 2].function);
        view.fit();
        imgui.frame([&] { view.draw(s); });
        *fit_center = view.center();
        *fit_zoom_out = view.zoom();
        view.select_function(analysis::kNoIndex);
        return d;
      };
      Vec2 walk_c, idx_c;
      float walk_z = 0.f, idx_z = 0.f;
      const auto walk = draw_with(SIZE_MAX, &walk_c, &walk_z);
      const auto indexed = draw_with(0, &idx_c, &idx_z);
      CHECK_FALSE(view.stats().state_pending);
      CHECK_MESSAGE(walk == indexed, "event " << s.index << (zoomed ? " zoomed" : " fitted") << ": boxes "
                                             << std::get<1>(walk) << "/" << std::get<1>(indexed) << ", alarms "
                                             << std::get<3>(walk) << "/" << std::get<3>(indexed) << ", live "
                                             << std::get<4>(walk) << "/" << std::get<4>(indexed) << ", ghosts "
                                             << std::get<6>(walk) << "/" << std::get<6>(indexed));
      CHECK(walk_c.x == idx_c.x);
      CHECK(walk_c.y == idx_c.y);
      CHECK(walk_z == idx_z);
      seen.insert(walk);
      alarms += std::get<3>(walk);
      ghosts += std::get<6>(walk);
      ++indexed_frames;
    }
    CHECK(seen.size() > 10);
  }
  CHECK(indexed_frames == 120);
  CHECK(alarms > 0);
  CHECK(ghosts > 0);
}

TEST_CASE("graph view: above the indexed threshold the compact view lays out the live set the State has") {
  HeadlessImGui imgui(1200.f, 800.f);
  const analysis::Model& model = recovery_model();
  GraphView walk, indexed;
  indexed.set_indexed_functions(0);
  walk.set_indexed_functions(SIZE_MAX);
  for (GraphView* v : {&walk, &indexed}) {
    v->set_model(&model);
    v->set_compact(true);
    v->wait_for_layout();
  }
  std::mt19937 rng(5);
  uint32_t relayouts = 0;
  std::set<size_t> sizes;
  for (int round = 0; round < 25; ++round) {
    const analysis::State s = model.state_at(rng() % model.num_events());
    for (GraphView* v : {&walk, &indexed}) {
      imgui.frame([&] { v->draw(s); });
      relayouts += v == &indexed && v->layout_pending();
      v->wait_for_layout();
      v->wait_for_live_index();
      for (int i = 0; i < 2; ++i) imgui.frame([&] { v->draw(s); });
      CHECK_FALSE(v->layout_pending());  // the live set it laid out is this one
    }
    // The same live slots laid out, the same way.
    const FoldedGraph& a = *walk.folded_graph();
    const FoldedGraph& b = *indexed.folded_graph();
    CHECK_MESSAGE(a.node_of_unit == b.node_of_unit, "event " << s.index);
    CHECK(a.group_of_unit == b.group_of_unit);
    CHECK(walk.layout()->center.size() == indexed.layout()->center.size());
    CHECK(walk.stats().live_units == indexed.stats().live_units);
    CHECK_FALSE(walk.stats().state_pending);
    CHECK_FALSE(indexed.stats().state_pending);
    CHECK(indexed.stats().indexed);
    CHECK_FALSE(walk.stats().indexed);
    sizes.insert(b.node_of_unit.size());
  }
  CHECK(relayouts > 5);
  CHECK(sizes.size() > 3);
}

#endif  // HOOKSCOPE_RENDER_DRAW
