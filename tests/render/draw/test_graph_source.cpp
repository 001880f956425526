// Note [One graph drawing path]: the two GraphSources answer the draw code
// alike. At every event of a recording, the full State walked (StateSource)
// and the StateView with the LiveIndex (IndexedSource, pending or with the
// full State) agree on each box: shown, its live Functions, its slots' live
// Function and hooks, a leaf's hooks on its tensor, the owners' states; and
// on every shown box: their count and bounds.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <atomic>
#include <cmath>
#include <memory>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/draw/graph_source.h"
#include "render/draw/graph_view.h"
#include "render/draw/graph_view_live.h"
#include "testing/graph_test_models.h"
#include "testing/headless_imgui.h"

using namespace hookscope;
using namespace hookscope::render;

namespace {

// What a box shows, as the draw code reads it from a source.
struct BoxAnswer {
  bool shown = false;
  uint32_t live = 0;
  std::vector<analysis::FunctionIndex> functions;  // per slot of the unit: its live Function, or kNoIndex
  std::vector<analysis::HookIndex> hooks;          // their hooks, then the tensor hooks
  bool operator==(const BoxAnswer&) const = default;
};

BoxAnswer answer(const GraphSource& src, const FoldedGraph& fg, const GraphScene& scene, uint32_t u) {
  BoxAnswer a;
  a.shown = src.shown(u);
  a.live = src.live_in(u);
  const uint32_t g = fg.group_of_unit[u];
  std::vector<uint32_t> slots;
  if (g == kNoGroup) {
    slots.push_back(fg.node_of_unit[u]);
  } else {
    slots = scene.groups()[g].nodes;
  }
  for (uint32_t slot : slots) {
    const analysis::FunctionAt* fa = src.function_at(slot);
    a.functions.push_back(fa ? fa->function : analysis::kNoIndex);
    if (fa) {
      for (const auto& kind : fa->hooks) {
        for (const analysis::HookAt& h : kind) a.hooks.push_back(h.hook);
      }
    }
    for (const auto& [s, h] : src.tensor_hooks(slot)) {
      CHECK(s == slot);
      a.hooks.push_back(h->hook);
    }
  }
  return a;
}

void check_sources_agree(const analysis::Model& model, bool compact) {
  testing::HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  testing::open_settled(view, model, compact);
  const std::atomic<bool> cancel{false};
  const std::unique_ptr<LiveIndex> index =
      LiveIndex::build(model, *view.scene(), *view.folded_graph(), *view.layout(), cancel);
  REQUIRE(index != nullptr);
  const GraphSource::Scene scene{&model, view.scene(), view.folded_graph(), view.layout(), true, 1};
  const FoldedGraph& fg = *view.folded_graph();
  const size_t units = std::min(fg.group_of_unit.size(), view.layout()->center.size());
  StateSource full;
  IndexedSource pending, indexed;
  size_t shown_boxes = 0, hooked_boxes = 0;
  const size_t step = std::max<size_t>(1, model.num_events() / 97);
  for (size_t e = 0; e < model.num_events(); e += step) {
    const analysis::State state = model.state_at(e);
    const analysis::StateView sv(model, e);
    full.refresh(scene, state);
    pending.refresh(scene, sv, *index, nullptr);
    indexed.refresh(scene, sv, *index, &state);
    for (const IndexedSource* src : {&pending, &indexed}) {
      CHECK(src->shown_count() == full.shown_count());
      CHECK(src->live_sources() == full.live_sources());
      if (full.shown_count() > 0) {  // exact bounds (the LiveIndex walks each edge)
        CHECK(src->shown_min().x == full.shown_min().x);
        CHECK(src->shown_max().y == full.shown_max().y);
      }
      for (analysis::OwnerIndex o = 0; o < model.owners().size(); ++o) {
        CHECK(src->owner_status(o) == full.owner_status(o));
      }
    }
    for (uint32_t u = 0; u < units; ++u) {
      const BoxAnswer want = answer(full, fg, *view.scene(), u);
      CHECK_MESSAGE(answer(pending, fg, *view.scene(), u) == want, "event " << e << " unit " << u << " pending");
      CHECK_MESSAGE(answer(indexed, fg, *view.scene(), u) == want, "event " << e << " unit " << u << " indexed");
      CHECK(pending.cell_alarm(u) == full.cell_alarm(u));
      shown_boxes += want.shown;
      hooked_boxes += !want.hooks.empty();
    }
  }
  // The recording has something to agree on.
  CHECK(shown_boxes > 100);
  CHECK(hooked_boxes > 10);
}

}  // namespace

TEST_CASE("graph source: the full State and the StateView with the LiveIndex answer every box alike") {
  check_sources_agree(testing::graph_recovery_model(), false);
}

TEST_CASE("graph source: alike with leaf hooks moving to the tensor, compact layout") {
  check_sources_agree(testing::graph_autograd_model(), true);
}

TEST_CASE("graph source: only the full State lists its live set; pending never asks for a re-layout") {
  const analysis::Model& model = testing::graph_recovery_model();
  testing::HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  testing::open_settled(view, model, true);
  const std::atomic<bool> cancel{false};
  const auto index = LiveIndex::build(model, *view.scene(), *view.folded_graph(), *view.layout(), cancel);
  REQUIRE(index != nullptr);
  const GraphSource::Scene scene{&model, view.scene(), view.folded_graph(), view.layout(), false, 1};
  const size_t last = model.num_events() - 1;
  const analysis::State state = model.state_at(last);
  const analysis::StateView sv(model, last);
  StateSource full;
  full.refresh(scene, state);
  IndexedSource pending, indexed;
  pending.refresh(scene, sv, *index, nullptr);
  indexed.refresh(scene, sv, *index, &state);
  CHECK(full.listed());
  CHECK(full.shown_units().size() == full.shown_count());
  REQUIRE(full.keep() != nullptr);
  CHECK_FALSE(pending.listed());
  CHECK(pending.shown_units().empty());
  CHECK(pending.keep() == nullptr);
  // The live set of event 0 is not the last one's: the full State and the
  // indexed read see the change; pending waits for the full State.
  const std::vector<uint8_t> other(full.keep()->size(), 0);
  CHECK(full.live_set_changed(other, 0, static_cast<analysis::EventIndex>(last)));
  CHECK(indexed.live_set_changed(other, 0, static_cast<analysis::EventIndex>(last)));
  CHECK_FALSE(pending.live_set_changed(other, 0, static_cast<analysis::EventIndex>(last)));
  CHECK_FALSE(full.live_set_changed(*full.keep(), 0, static_cast<analysis::EventIndex>(last)));
}

#endif  // HOOKSCOPE_RENDER_DRAW
