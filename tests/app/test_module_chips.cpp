// Module hooks visible in the graph (Note [Module hook anchors]): on the
// module-hooks run (every module hook kind), a box holding a module hook's
// anchor shows a chip of that kind, with its tag, and no "+N": the scene
// reserves room for it (SceneNode::hook_kinds has a bit per kind, module
// kinds included). Full backward (pre) hooks sit on the module's
// BackwardHookFunctionBackward Nodes, forward hooks on the module's output
// Node. Measured through the graph's draw stats (Note [Draw report]) at
// 1280x800 and 1920x1080; the SVG export draws the same chips.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "testing/headless_app.h"
#include "render/draw/graph_view.h"
#include "render/layout/graph_svg.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;
using trace::HookKind;
namespace fs = std::filesystem;

namespace {

fs::path chips_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_module_chips");
  return dir;
}

uint16_t bit(HookKind k) { return static_cast<uint16_t>(1u << static_cast<unsigned>(k)); }

// Per live Function at the state's event: the module hook kinds anchored on
// it whose hooks are attached then.
std::vector<std::pair<analysis::FunctionIndex, uint16_t>> expected_chips(const render::GraphScene& scene,
                                                                         const analysis::State& st) {
  std::vector<std::pair<analysis::FunctionIndex, uint16_t>> out;
  for (const analysis::FunctionAt& fa : st.functions) {
    uint16_t kinds = 0;
    scene.for_module_hooks_on(fa.function, st.module_hooks, [&](const analysis::HookAt& h) {
      kinds |= bit(scene.model().hooks()[h.hook].kind);
    });
    if (kinds) out.push_back({fa.function, kinds});
  }
  return out;
}

void settle(testing::HeadlessApp& h) {
  for (int i = 0; i < 12; ++i) {
    h.frame();
    h.app().graph().wait_for_layout();
  }
  h.frame();
}

}  // namespace

TEST_CASE("module hooks: the scene reserves a chip for each module hook kind on the box of its anchor") {
  const std::string trace = testing::record_once(chips_dir(), "module_hooks", "module-hooks");
  const analysis::Model m(trace::read_trace(trace));
  const render::GraphScene scene(m);
  REQUIRE_FALSE(scene.module_anchors().empty());
  uint16_t seen = 0;
  for (const analysis::ModuleHookAnchor& a : scene.module_anchors()) {
    const HookKind kind = m.hooks()[a.hook].kind;
    const render::SceneNode& node = scene.nodes()[scene.slot_of(a.function)];
    CAPTURE(m.str(node.name));
    CAPTURE(trace::to_string(kind));
    CHECK((node.hook_kinds & bit(kind)) != 0);
    // Full backward (pre) hooks run from the module's BackwardHookFunction Nodes.
    if (kind == HookKind::kModuleBackward || kind == HookKind::kModuleBackwardPre) {
      CHECK(m.str(node.name) == "BackwardHookFunctionBackward");
    }
    seen |= bit(kind);
  }
  // The run has forward, full backward and full backward pre hooks, each fired.
  CHECK((seen & bit(HookKind::kModuleForward)) != 0);
  CHECK((seen & bit(HookKind::kModuleBackward)) != 0);
  CHECK((seen & bit(HookKind::kModuleBackwardPre)) != 0);
  // A box with a module hook is wider than the same box without one: room reserved.
  const render::FoldedGraph folded = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
  const auto measure = [](std::string_view s) { return 7.f * static_cast<float>(s.size()); };
  const auto sizes = scene.box_sizes(folded, measure, render::compact_metrics({}));
  for (uint32_t slot = 0; slot < scene.nodes().size(); ++slot) {
    const render::SceneNode& node = scene.nodes()[slot];
    if (!(node.hook_kinds & bit(HookKind::kModuleForward))) continue;
    const std::string title = scene.unit_compact_title(folded, folded.unit_of_node[slot]);
    CHECK(sizes[folded.unit_of_node[slot]].x > measure(title) + measure("fwd"));
  }
}

TEST_CASE("gui module hooks: chips on the BackwardHookFunction Nodes and on the forward hook's Node, none hidden") {
  testing::scratch_config_dir("hookscope_module_chips");
  const std::string trace = testing::record_once(chips_dir(), "module_hooks", "module-hooks");
  const analysis::Model m(trace::read_trace(trace));
  const render::GraphScene scene(m);
  // Each backward's start: the forward graph is live, the module hooks attached.
  const auto& backwards = m.events_of_kind(trace::EventKind::kBackwardBegin);
  REQUIRE(backwards.size() >= 2);
  for (const size_t at : {backwards[0], backwards[1]}) {
    const analysis::Cursor cursor(m, at);
    const auto expected = expected_chips(scene, cursor.state());
    REQUIRE_FALSE(expected.empty());
    for (const ImVec2 display : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
      app::Args args = testing::headless_args({trace});
      args.at.text = std::to_string(at);
      testing::HeadlessApp h(args, display);
      settle(h);
      const render::GraphView& view = h.app().graph();
      const render::GraphDrawStats& s = view.stats();
      REQUIRE(s.box_units.size() == s.box_rects.size());
      REQUIRE(s.box_chip_kinds.size() == s.box_rects.size());
      CAPTURE(at);
      CAPTURE(display.x);
      CHECK(s.hidden_chips == 0);
      CHECK(s.min_text_px >= 10.f);
      uint16_t shown = 0;
      for (const auto& [function, kinds] : expected) {
        const uint32_t unit = view.folded_graph()->unit_of_node[view.scene()->slot_of(function)];
        const auto it = std::find(s.box_units.begin(), s.box_units.end(), unit);
        CAPTURE(m.str(m.functions()[function].name));
        REQUIRE(it != s.box_units.end());  // fit shows every live box
        const uint16_t drawn = s.box_chip_kinds[static_cast<size_t>(it - s.box_units.begin())];
        CHECK((drawn & kinds) == kinds);
        shown |= drawn & kinds;
      }
      CHECK((shown & bit(HookKind::kModuleForward)) != 0);
      // The full backward hook is removed between step 1's forward and its
      // backward (the #25723 story): from then on it has no chip.
      CHECK(((shown & bit(HookKind::kModuleBackward)) != 0) == (at == backwards[0]));
    }
  }
}

TEST_CASE("graph svg: module hooks are chips on their anchors, as in the view") {
  const std::string trace = testing::record_once(chips_dir(), "module_hooks", "module-hooks");
  const analysis::Model m(trace::read_trace(trace));
  const render::GraphScene scene(m);
  const render::FoldedGraph folded = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
  const auto measure = [](std::string_view s) { return 7.f * static_cast<float>(s.size()); };
  const render::Layout layout = render::compute_layout({folded.graph, scene.box_sizes(folded, measure), nullptr});
  const analysis::Cursor cursor(m, m.events_of_kind(trace::EventKind::kBackwardBegin)[0]);
  render::GraphSvgOptions o;
  o.measure = measure;
  const std::string svg = render::graph_svg(scene, folded, layout, cursor.state(), o);
  for (const HookKind k : {HookKind::kModuleForward, HookKind::kModuleBackward, HookKind::kModuleBackwardPre}) {
    const std::string tag = ">" + std::string(render::hook_kind_tag(k)) + "</text>";
    CAPTURE(tag);
    CHECK(svg.find(tag) != std::string::npos);
  }
}

#endif  // HOOKSCOPE_APP_UI

#if HOOKSCOPE_APP_UI
TEST_CASE("scene: a box reserves a chip per owner attached at once, not per owner ever seen") {
  auto most_owners = [](const std::string& name) {
    const analysis::Model m(trace::read_trace(std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"));
    const render::GraphScene scene(m);
    int most = 0;
    for (const render::SceneNode& n : scene.nodes()) most = std::max<int>(most, n.max_owners);
    return most;
  };
  // by-key: each Reducer removes its hooks before the next adds its own.
  CHECK(most_owners("recovery-by-key") == 1);
  // none: the destroyed Reducers' hooks stay beside the new one's (R1! R2! R3).
  CHECK(most_owners("recovery-none") >= 3);
}
#endif
