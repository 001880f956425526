#pragma once
// The models the graph view tests draw (pending, indexed, alarms, box
// sizes): one recording of each per test process, shared by every file that
// includes this; the view opened on one, settled; and what a frame drew, to
// compare two ways of drawing one event.

#include <random>
#include <tuple>
#include <utility>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "scenarios/autograd_demo.h"
#include "trace/recorder.h"
#include "testing/headless_imgui.h"
#include "testing/test_util.h"

namespace hookscope::testing {

// A policy-none recovery run (failure, rebuild, stale fires).
inline const analysis::Model& graph_recovery_model() {
  static const analysis::Model m(record_recovery_trace(), analysis::ModelOptions{256, 8.0});
  return m;
}

// Leaf hooks that move to the tensor between steps (ghost boxes).
inline const analysis::Model& graph_autograd_model() {
  static const analysis::Model m = [] {
    trace::MemoryRecorder rec;
    rec.start();
    scenarios::run_autograd_demo({6, 0});
    return analysis::Model(rec.take_trace(), analysis::ModelOptions{64, 64.0});
  }();
  return m;
}

// `view` on `model` with its layout and LiveIndex done: what the tests draw on.
inline void open_settled(render::GraphView& view, const analysis::Model& model, bool compact) {
  view.set_model(&model);
  view.set_compact(compact);
  view.wait_for_layout();
  view.wait_for_live_index();
}

// A 1200x800 canvas with `view` on `model`, settled and drawn at the last
// event, fitted: where the tests that compare draws of other events start.
struct SettledView {
  HeadlessImGui imgui{1200.f, 800.f};
  render::GraphView view;
  analysis::State at_last;
  render::Vec2 fitted;
  float fit_zoom = 0.f;

  SettledView(const analysis::Model& model, bool compact) : at_last(model.state_at(model.num_events() - 1)) {
    open_settled(view, model, compact);
    imgui.frame([&] { view.draw(at_last); });
    imgui.frame([&] { view.draw(at_last); });
    fitted = view.center();
    fit_zoom = view.zoom();
  }

  // The fitted view, or (zoomed) 2.5 times closer about a point near its
  // centre: culling by the view.
  std::pair<render::Vec2, float> look(bool zoomed, std::mt19937& rng) const {
    if (!zoomed) return {fitted, fit_zoom};
    const float dx = static_cast<float>(rng() % 200) - 100.f;
    const float dy = static_cast<float>(rng() % 200) - 100.f;
    return {render::Vec2{fitted.x + dx, fitted.y + dy}, fit_zoom * 2.5f};
  }
};

// What a frame drew that the state decides: equal for two ways of drawing
// one event (the full State, the StateView while pending, the LiveIndex).
inline auto drawn(const render::GraphDrawStats& s) {
  std::vector<std::tuple<float, float, float, float>> rects;
  for (const auto& r : s.box_rects) rects.emplace_back(r.x0, r.y0, r.x1, r.y1);
  return std::make_tuple(s.detail, s.boxes, s.texts, s.alarms, s.live_units, s.stale_chips, s.ghost_chips,
                         s.removal_boxes, s.gen_labels, s.edges, s.banners.size(), s.minimap_shown,
                         s.layout_units, rects);
}

}  // namespace hookscope::testing
