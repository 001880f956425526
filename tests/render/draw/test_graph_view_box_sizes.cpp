// Note [Box sizes off the UI thread]: the layout job measures box text on
// its own thread with a copy of the font; every box's size must be what the
// UI thread measures with ImGui's current font.
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW

#include <cfloat>
#include <string_view>
#include <vector>

#include "analysis/model.h"
#include "render/draw/graph_view.h"
#include "render/layout/graph_scene.h"
#include "testing/headless_imgui.h"
#include "testing/graph_test_models.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::render;
using hookscope::testing::HeadlessImGui;

namespace {

const analysis::Model& recovery_model() { return testing::graph_recovery_model(); }

// The sizes as start_layout measured them before: on this thread, ImGui's
// current font (its default one outside a frame).
std::vector<Vec2> ui_thread_sizes(const GraphView& view, const BoxMetrics& m) {
  ImGuiIO& io = ImGui::GetIO();
  ImFont* font = ImGui::GetFont() ? ImGui::GetFont() : io.FontDefault ? io.FontDefault : io.Fonts->Fonts[0];
  return view.scene()->box_sizes(*view.folded_graph(), [&](std::string_view s) {
    return font->CalcTextSizeA(m.line_height, FLT_MAX, 0.f, s.data(), s.data() + s.size()).x;
  }, m);
}

void check_same(const std::vector<Vec2>& want, const Layout& l) {
  REQUIRE(l.size.size() >= want.size());
  size_t differ = 0;
  for (size_t u = 0; u < want.size(); ++u) differ += want[u].x != l.size[u].x || want[u].y != l.size[u].y;
  CHECK(differ == 0);
}

}  // namespace

TEST_CASE("graph view: box sizes measured on the layout job's thread are the UI thread's, full and compact") {
  const analysis::Model& model = recovery_model();
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  view.set_model(&model);
  view.set_compact(false);
  view.wait_for_layout();
  REQUIRE(view.layout_ready());
  REQUIRE(view.layout()->center.size() > 20);
  check_same(ui_thread_sizes(view, GraphViewOptions{}.metrics), *view.layout());
  // Widths differ from box to box (text measured, not a constant).
  float lo = FLT_MAX, hi = 0.f;
  for (size_t u = 0; u < view.layout()->center.size(); ++u) {
    lo = std::min(lo, view.layout()->size[u].x);
    hi = std::max(hi, view.layout()->size[u].x);
  }
  CHECK(hi > lo);

  view.set_compact(true);
  view.wait_for_layout();
  REQUIRE(view.compact());
  check_same(ui_thread_sizes(view, compact_metrics(GraphViewOptions{}.metrics)), *view.layout());
}

TEST_CASE("graph view: a font rebuilt while the job measures changes nothing it reads") {
  const analysis::Model& model = recovery_model();
  HeadlessImGui imgui(1200.f, 800.f);
  GraphView view;
  view.set_model(&model);
  view.set_compact(false);
  // The atlas cleared and rebuilt at once, as a font change does: the job
  // measures with its own copy of the font's tables.
  ImGuiIO& io = ImGui::GetIO();
  io.Fonts->Clear();
  io.Fonts->AddFontDefault();
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  view.wait_for_layout();
  REQUIRE(view.layout_ready());
  check_same(ui_thread_sizes(view, GraphViewOptions{}.metrics), *view.layout());
}

#endif
