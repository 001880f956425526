// The Lanes panel's intents, with an ImGui context and no window: a click on
// a hook's bar goes to the lane's nearest event and selects its Function.
// Where the bars are comes from the panel's own report (HOOKSCOPE_VIEWS_REPORT).
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/lanes.h"
#include "app.h"
#include "panel_lanes_layout.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::app;
namespace fs = std::filesystem;

namespace {

fs::path views_ui_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("hookscope_views_ui_" + std::to_string(::getpid()));
    fs::create_directories(d);
    ::setenv("XDG_CONFIG_HOME", d.c_str(), 1);
    return d;
  }();
  return dir;
}

}  // namespace

TEST_CASE("lanes ui: a click on a bar goes to the lane's nearest event and selects its Function") {
  const fs::path dir = views_ui_dir();
  const std::string trace = (dir / "recovery_none.hstrace").string();
  const auto rec = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) +
                                        " record recovery --steps 5 --policy none -o " + trace);
  REQUIRE_MESSAGE(rec.exit == 0, rec.out);
  const std::string report = (dir / "views.json").string();
  ::setenv("HOOKSCOPE_VIEWS_REPORT", report.c_str(), 1);

  ImGuiContext* ctx = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(1600, 1000);
  io.DeltaTime = 1.f / 60.f;
  Args args;
  args.files = {trace};
  args.frames = 1000;  // headless: loads finish before the first frame draws
  args.panel = "lanes";
  auto app = std::make_unique<App>(args);
  app->setup_style(1.f);
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  auto frame = [&] {
    ImGui::NewFrame();
    app->frame();
    ImGui::Render();
  };
  for (int i = 0; i < 4; ++i) frame();

  const analysis::Model& m = *app->session().model();
  const auto lanes = analysis::hook_lanes(m);
  REQUIRE_FALSE(lanes.empty());
  std::ifstream in(report);
  REQUIRE(in.good());
  const auto j = nlohmann::json::parse(in);
  const auto r = j.at("lanes");
  EventAxis axis{0.0, static_cast<double>(m.num_events()), r[0].get<float>(), r[2].get<float>() - r[0].get<float>()};
  REQUIRE(axis.width > 100.f);
  // Rows: the first Function's header, then its first lane (hook_lanes' order).
  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const analysis::HookLane& lane = lanes[0];
  const double target = lane.added_at + 0.3 * ((lane.ended_at == analysis::kNever ? m.num_events() : lane.ended_at) -
                                               lane.added_at);
  const float x = axis.x(target);
  const float y = r[1].get<float>() + row_h * 1.5f;
  const analysis::EventIndex expected = nearest_lane_event(lane, m.fires(lane.hook), axis.event_at(x));
  REQUIRE(expected != 0);
  app->session().go_to(0);
  io.MousePos = ImVec2(x, y);
  frame();  // hover
  io.MouseDown[0] = true;
  frame();  // click
  io.MouseDown[0] = false;
  frame();
  CHECK(app->session().current() == expected);
  CHECK(app->session().selected_function() == lane.function);

  ::unsetenv("HOOKSCOPE_VIEWS_REPORT");
  app.reset();
  ImGui::DestroyContext(ctx);
}

#endif
