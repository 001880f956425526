// The graph view (render/draw/graph_view.h) in an ImGui context with no
// renderer: culling, level of detail, selection, folding.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <algorithm>
#include <cmath>
#include <map>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "render/sample_graphs.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/headless_imgui.h"
#include "testing/test_util.h"
#include "trace/recorder.h"
#include "trace/strings.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::HeadlessImGui;

namespace {

struct Fixture {
  HeadlessImGui imgui{1200.f, 800.f};
  analysis::Model model;
  analysis::State state;
  GraphView view;

  explicit Fixture(int functions)
      : model(make_sample_trace(make_transformer_graph(functions))),
        state(model.state_at(model.num_events() - 1)) {
    view.set_model(&model);
    view.set_compact(false);  // these tests are about full boxes (Note [Compact boxes])
    view.wait_for_layout();
  }
  int frame() {
    return imgui.frame([&] { last = view.draw(state); });
  }
  GraphViewResult last;
};

// Boxes of live Functions intersecting the rectangle the view showed.
uint32_t boxes_in_view(const GraphView& view, const analysis::State& state) {
  Vec2 lo, hi;
  view.visible_rect(&lo, &hi);
  const Layout& l = *view.layout();
  const FoldedGraph& fg = *view.folded_graph();
  std::vector<uint8_t> live(l.center.size(), 0);
  for (const auto& f : state.functions) live[fg.unit_of_node[view.scene()->slot_of(f.function)]] = 1;
  uint32_t n = 0;
  for (size_t u = 0; u < l.center.size(); ++u) {
    const Vec2 c = l.center[u], s = l.size[u];
    n += live[u] && c.x + s.x * 0.5f >= lo.x && c.x - s.x * 0.5f <= hi.x && c.y + s.y * 0.5f >= lo.y &&
         c.y - s.y * 0.5f <= hi.y;
  }
  return n;
}

}  // namespace

TEST_CASE("graph view: culling draws exactly the boxes on screen") {
  Fixture fx(3000);
  const Layout& l = *fx.view.layout();
  // Fitted, 3000 boxes do not fit in 1200 px readably: fit opens readable
  // (Note [Readable text]) on a region, not on a 1-px line, and the minimap,
  // in its own column, shows where.
  fx.frame();
  fx.frame();
  CHECK(fx.view.stats().detail == GraphDetail::kFull);
  CHECK(fx.view.stats().boxes > 0);
  CHECK(fx.view.stats().small_texts == 0);
  CHECK(fx.view.stats().min_text_px >= 10.f);
  CHECK(fx.view.stats().minimap_shown);
  CHECK(fx.view.stats().minimap.x0 >= fx.view.stats().content.x1);
  // The map keeps the layout's shape, and its column is as wide as that map
  // needs (at most minimap_width): no empty band beside a narrow map.
  const GraphDrawStats::Rect mm = fx.view.stats().minimap;
  const float map_w = mm.x1 - mm.x0 - 8.f, map_h = mm.y1 - mm.y0 - 8.f;
  CHECK(map_w / map_h == doctest::Approx((l.max.x - l.min.x) / (l.max.y - l.min.y)).epsilon(0.02));
  CHECK(mm.x0 - fx.view.stats().content.x1 <= 4.f + std::max(0.f, 48.f - map_w) + 0.5f);
  // Zoomed in on a box in the middle: a few dozen boxes, nothing else.
  const size_t u = l.center.size() / 2;
  fx.view.set_view(l.center[u], 1.f);
  const int vertices = fx.frame();
  const uint32_t expected = boxes_in_view(fx.view, fx.state);
  CHECK(fx.view.stats().detail == GraphDetail::kFull);
  CHECK(fx.view.stats().boxes == expected);
  CHECK(expected > 0);
  CHECK(expected * 20 < l.center.size());
  CHECK(vertices < 40000);
  // Far away from the graph: no box, no edge.
  fx.view.set_view({l.max.x + 1e5f, l.max.y + 1e5f}, 1.f);
  fx.frame();
  CHECK(fx.view.stats().boxes == 0);
  CHECK(fx.view.stats().edges == 0);
}

TEST_CASE("graph view: level of detail drops text, then boxes become cells") {
  Fixture fx(3000);
  const Layout& l = *fx.view.layout();
  const Vec2 middle = l.center[l.center.size() / 2];
  fx.view.set_view(middle, 1.f);
  const int full = fx.frame();
  const GraphDrawStats at_full = fx.view.stats();
  CHECK(at_full.detail == GraphDetail::kFull);
  CHECK(at_full.texts == at_full.boxes);

  fx.view.set_view(middle, 0.3f);  // a line of text would be 4.5 px
  const int plain = fx.frame();
  const GraphDrawStats at_plain = fx.view.stats();
  CHECK(at_plain.detail == GraphDetail::kBoxes);
  CHECK(at_plain.texts == 0);
  CHECK(at_plain.boxes > at_full.boxes);
  // Without text a box costs far fewer vertices.
  CHECK(static_cast<double>(plain) / at_plain.boxes < 0.5 * static_cast<double>(full) / at_full.boxes);

  fx.view.set_view(middle, 0.005f);  // the whole graph in a few hundred pixels
  const int cells = fx.frame();
  const GraphDrawStats at_cells = fx.view.stats();
  CHECK(at_cells.detail == GraphDetail::kCells);
  CHECK(at_cells.boxes == 0);
  CHECK(at_cells.cells > 0);
  CHECK(at_cells.cells < 3000);
  CHECK(cells < 4 * 3000 + 20000);  // cells, minimap and toolbar
}

TEST_CASE("graph view: a click selects a Function, a click on a badge its owner") {
  Fixture fx(400);
  fx.frame();
  // An AccumulateGrad with R1's and R2's post hooks, at zoom 1.
  analysis::FunctionIndex leaf = analysis::kNoIndex;
  for (const auto& f : fx.state.functions) {
    if (fx.model.functions()[f.function].is_leaf_accumulator()) {
      leaf = f.function;
      break;
    }
  }
  REQUIRE(leaf != analysis::kNoIndex);
  fx.view.focus(leaf);
  fx.frame();
  fx.view.set_view(fx.view.center(), 1.f);
  fx.frame();
  Vec2 lo, hi;
  REQUIRE(fx.view.box_on_screen(leaf, &lo, &hi));
  auto click = [&](float x, float y) {
    fx.imgui.io().MousePos = {x, y};
    fx.frame();
    fx.imgui.io().MouseDown[0] = true;
    fx.frame();
    fx.imgui.io().MouseDown[0] = false;
    fx.frame();
  };
  click((lo.x + hi.x) * 0.5f, lo.y + 6.f);  // the title line
  CHECK(fx.last.selected_function == leaf);
  CHECK(fx.last.selected_owner == analysis::kNoIndex);
  // The first badge: "post", then R1's chip (R1 is destroyed: an alarm).
  click(lo.x + 50.f, hi.y - 13.5f);
  REQUIRE(fx.last.selected_owner != analysis::kNoIndex);
  CHECK(fx.model.owner_name(fx.last.selected_owner) == "Reducer 1");
  // The background clears the selection.
  fx.view.set_view({fx.view.layout()->max.x + 1e4f, 0.f}, 1.f);
  click(600.f, 400.f);
  CHECK(fx.last.selected_function == analysis::kNoIndex);
  CHECK(fx.last.selected_owner == analysis::kNoIndex);
}

TEST_CASE("graph view: folding a module keeps the rest in place, expanding restores it") {
  Fixture fx(600);
  const GraphScene& scene = *fx.view.scene();
  auto place = [&](uint32_t slot) {
    const FoldedGraph& fg = *fx.view.folded_graph();
    return fx.view.layout()->center[fg.unit_of_node[slot]];
  };
  std::vector<Vec2> before;
  for (uint32_t v = 0; v < scene.nodes().size(); ++v) before.push_back(place(v));
  // A transformer block's MLP: fc1, GELU, fc2 and their parameters.
  uint32_t group = kNoGroup;
  for (uint32_t g = 0; g < scene.groups().size(); ++g) {
    if (scene.groups()[g].name == "blocks.1.mlp") group = g;
  }
  REQUIRE(group != kNoGroup);
  CHECK(scene.groups()[group].nodes.size() >= 7);
  const auto& members = scene.groups()[group].nodes;
  fx.view.set_folded(group, true);
  fx.view.wait_for_layout();
  CHECK(fx.view.folded(group));
  CHECK(fx.view.layout()->center.size() == scene.nodes().size() - members.size() + 1);
  size_t moved = 0, others = 0;
  for (uint32_t v = 0; v < scene.nodes().size(); ++v) {
    if (std::binary_search(members.begin(), members.end(), v)) continue;
    ++others;
    const Vec2 now = place(v);
    moved += std::abs(now.x - before[v].x) > 0.5f || std::abs(now.y - before[v].y) > 0.5f;
  }
  CHECK(moved * 50 <= others);
  fx.frame();  // draws the folded box
  fx.view.set_folded(group, false);
  fx.view.wait_for_layout();
  size_t back = 0;
  for (uint32_t v = 0; v < scene.nodes().size(); ++v) {
    const Vec2 now = place(v);
    back += std::abs(now.x - before[v].x) <= 0.5f && std::abs(now.y - before[v].y) <= 0.5f;
  }
  CHECK(back * 50 >= scene.nodes().size() * 49);
}

TEST_CASE("graph view: a grown trace keeps the boxes it had where they were") {
  // A live recording seen twice: cut at a fixed point of its story, then
  // whole. The ranks are threads, so a cut at a share of the events would
  // fall somewhere else each run (a Function half-created, a hook list
  // mid-change); each rank is cut right after its third backward instead,
  // which every run reaches with the same graph and hooks.
  scenarios::DdpScenarioOptions o;
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 6;
  trace::TraceData whole = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
  trace::TraceData half = whole;
  half.events.clear();
  std::map<uint16_t, int> backwards;  // per rank, backwards ended so far
  for (const trace::Event& e : whole.events) {
    if (backwards[e.rank] >= 3) continue;
    half.events.push_back(e);
    if (e.kind == trace::EventKind::kBackwardEnd) ++backwards[e.rank];
  }
  REQUIRE(half.events.size() < whole.events.size());
  const analysis::Model first(std::move(half)), second(std::move(whole));
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  view.set_model(&first);
  view.wait_for_layout();
  std::vector<std::pair<std::pair<uint64_t, uint32_t>, Vec2>> before;
  for (uint32_t v = 0; v < view.scene()->nodes().size(); ++v) {
    const SceneNode& n = view.scene()->nodes()[v];
    before.push_back({{n.signature, n.instance}, view.layout()->center[view.folded_graph()->unit_of_node[v]]});
  }
  view.update_model(&second);
  view.wait_for_layout();
  REQUIRE(view.layout_ready());
  CHECK(view.scene()->nodes().size() >= before.size());
  // Ranks are disjoint columns (LayoutGraph::cluster): a rank whose left
  // neighbour grew moves right as a whole, so boxes keep their place within
  // their rank's column (the column's shift: the median of its boxes').
  struct Seen {
    uint16_t rank;
    Vec2 at, now;
  };
  std::vector<Seen> seen;
  for (uint32_t v = 0; v < view.scene()->nodes().size(); ++v) {
    const SceneNode& n = view.scene()->nodes()[v];
    for (const auto& [key, at] : before) {
      if (key != std::pair(n.signature, n.instance)) continue;
      seen.push_back({n.rank, at, view.layout()->center[view.folded_graph()->unit_of_node[v]]});
    }
  }
  std::map<uint16_t, std::vector<float>> shifts;
  for (const Seen& s : seen) shifts[s.rank].push_back(s.now.x - s.at.x);
  std::map<uint16_t, float> shift;
  for (auto& [rank, d] : shifts) {
    std::nth_element(d.begin(), d.begin() + static_cast<long>(d.size() / 2), d.end());
    shift[rank] = d[d.size() / 2];
  }
  CHECK(std::abs(shift.begin()->second) <= 0.5f);  // the leftmost rank does not move
  size_t kept = 0;
  for (const Seen& s : seen) {
    // Boxes may grow (more owners' badges, longer ids): neighbours then
    // give way by a few pixels, never by a box.
    kept += std::abs(s.now.x - s.at.x - shift[s.rank]) <= 12.f && std::abs(s.now.y - s.at.y) <= 0.5f;
  }
  const size_t found = seen.size();
  CHECK(found * 10 >= before.size() * 9);  // slots are the same across the two models
  CHECK(kept == found);  // with the cut at a fixed story point, every box stays put
  imgui.frame([&] { view.draw(second.state_at(second.num_events() - 1)); });
}

#endif  // HOOKSCOPE_RENDER_DRAW
