// The graph view on a large graph (Note [Frame caches]):
// zoomed out to the whole graph, what a person looks for (a destroyed
// owner's hooks left behind: the alarm red) is still in the picture; the
// picture's cost is bounded by the canvas; edges found through the tile grid
// are exactly those a walk over the live Functions finds.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <algorithm>
#include <cmath>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "render/layout/colors.h"
#include "render/sample_graphs.h"
#include "testing/headless_imgui.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::HeadlessImGui;

namespace {

constexpr float kWidth = 1200.f, kHeight = 800.f;

// Vertices of the last frame drawn in `color`.
size_t vertices_of_color(uint32_t color) {
  size_t n = 0;
  const ImDrawData* dd = ImGui::GetDrawData();
  for (int i = 0; i < dd->CmdListsCount; ++i) {
    for (const ImDrawVert& v : dd->CmdLists[i]->VtxBuffer) n += v.col == color;
  }
  return n;
}

// The layout edges a walk over the live Functions and their next edges
// draws in the view (the rule of draw_edges before the tile grid).
uint32_t edges_by_walk(const GraphView& view, const analysis::Model& m, const analysis::State& st) {
  const GraphScene& scene = *view.scene();
  const FoldedGraph& fg = *view.folded_graph();
  const Layout& l = *view.layout();
  Vec2 lo, hi;
  view.visible_rect(&lo, &hi);
  std::vector<uint8_t> slot_live(scene.nodes().size(), 0), seen(l.route_begin.size() - 1, 0);
  for (const auto& fa : st.functions) slot_live[scene.slot_of(fa.function)] = 1;
  uint32_t n = 0;
  for (const auto& fa : st.functions) {
    const analysis::FunctionInfo& info = m.functions()[fa.function];
    for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
      const analysis::FunctionIndex to = m.edges()[e].to;
      if (to >= m.functions().size() || !slot_live[scene.slot_of(to)]) continue;
      const uint32_t se = scene.edge_of(e);
      const uint32_t le = se == kNoSlot ? kNoSlot : fg.edge_of_scene_edge[se];
      if (le == kNoSlot || seen[le]) continue;
      seen[le] = 1;
      const uint32_t b = l.route_begin[le], end = l.route_begin[le + 1];
      if (end - b < 4) continue;
      Vec2 emin{INFINITY, INFINITY}, emax{-INFINITY, -INFINITY};
      for (uint32_t i = b; i < end; ++i) {
        emin = {std::min(emin.x, l.route[i].x), std::min(emin.y, l.route[i].y)};
        emax = {std::max(emax.x, l.route[i].x), std::max(emax.y, l.route[i].y)};
      }
      n += emax.x >= lo.x && emin.x <= hi.x && emax.y >= lo.y && emin.y <= hi.y;
    }
  }
  return n;
}

}  // namespace

TEST_CASE("graph view at scale: the whole graph as cells still shows a destroyed owner's hooks in red") {
  HeadlessImGui imgui{kWidth, kHeight};
  const analysis::Model m(make_sample_trace(make_transformer_graph(40000)));
  // The sample's Reducer 1 is destroyed and leaves its hooks behind.
  analysis::EventIndex destroyed = analysis::kNever;
  for (const auto& o : m.owners()) destroyed = std::min(destroyed, o.destroyed_at);
  REQUIRE(destroyed < m.num_events());
  const analysis::State after = m.state_at(m.num_events() - 1);
  const analysis::State before = m.state_at(destroyed - 1);
  REQUIRE(after.functions.size() > 30000);
  GraphView view;
  view.set_model(&m);
  view.wait_for_layout();
  const Layout& l = *view.layout();
  const float zoom = 0.9f * std::min(kWidth / (l.max.x - l.min.x), kHeight / (l.max.y - l.min.y));
  view.set_view({(l.min.x + l.max.x) * 0.5f, (l.min.y + l.max.y) * 0.5f}, zoom);
  const uint32_t alarm = palette().alarm;
  // Twice: the second frame reuses the cells of the first (Note [Frame caches]).
  for (int k = 0; k < 2; ++k) {
    CAPTURE(k);
    const int vertices = imgui.frame([&] { view.draw(after); });
    const GraphDrawStats& s = view.stats();
    CHECK(s.detail == GraphDetail::kCells);
    CHECK(s.cells > 0);
    // Bounded by the canvas (3 px cells), not by 40k Functions.
    CHECK(s.cells <= static_cast<uint32_t>((kWidth / 3 + 1) * (kHeight / 3 + 1)));
    CHECK(vertices < 4 * static_cast<int>(s.cells) + 20000);
    CHECK(vertices_of_color(alarm) >= 4);  // at least one red cell
  }
  // Before the destruction the same picture has no red at all.
  imgui.frame([&] { view.draw(before); });
  CHECK(view.stats().detail == GraphDetail::kCells);
  CHECK(view.stats().cells > 0);
  CHECK(vertices_of_color(alarm) == 0);
  // And back: red again, at once.
  imgui.frame([&] { view.draw(after); });
  CHECK(vertices_of_color(alarm) >= 4);
}

TEST_CASE("graph view at scale: edges through the tile grid are those a walk over the live Functions finds") {
  HeadlessImGui imgui{kWidth, kHeight};
  const analysis::Model m(make_sample_trace(make_transformer_graph(6000)));
  GraphView view;
  view.set_model(&m);
  view.set_compact(false);
  view.wait_for_layout();
  const Layout& l = *view.layout();
  size_t checked = 0;
  for (const size_t at : {m.num_events() / 3, m.num_events() / 2, m.num_events() - 1}) {
    const analysis::State st = m.state_at(at);
    for (const float zoom : {1.f, 0.3f, 0.08f}) {
      for (const size_t u : {size_t{0}, l.center.size() / 3, l.center.size() / 2, l.center.size() - 1}) {
        CAPTURE(at);
        CAPTURE(zoom);
        CAPTURE(u);
        view.set_view(l.center[u], zoom);
        imgui.frame([&] { view.draw(st); });
        if (view.stats().detail == GraphDetail::kCells) continue;
        CHECK(view.stats().edges == edges_by_walk(view, m, st));
        checked += view.stats().edges;
      }
    }
  }
  CHECK(checked > 100);
}

#endif  // HOOKSCOPE_RENDER_DRAW
