// The GUI never dies on what it draws: hostile traces the CLI
// handled ended the app - a hook whose owner was never declared (SIGSEGV in
// the graph's chips), a 1 MB module label in the Why panel (ImGui "Too many
// vertices"), a 20k x 20k readiness map (std::bad_alloc) - and a headless
// run on a file it could not open exited 0. Each is drawn here, with an
// ImGui context and no window, as a user's frames would draw it.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "app.h"
#include "testing/crafted_traces.h"
#include "testing/headless_app.h"
#include "panel_common.h"
#include "testing/test_util.h"

using namespace hookscope;
namespace crafted = hookscope::testing::crafted;
namespace fs = std::filesystem;

namespace {

fs::path scratch() { return testing::scratch_config_dir("hookscope_app_hostile"); }

std::string write(const std::string& name, const crafted::Builder& b) {
  const fs::path path = scratch() / name;
  std::ofstream(path, std::ios::binary) << crafted::encode(b.spec);
  return path.string();
}

// What the views drew last frame (HOOKSCOPE_VIEWS_REPORT).
nlohmann::json views_report() {
  std::ifstream in(scratch() / "views.json");
  REQUIRE(in.good());
  return nlohmann::json::parse(in);
}

// Opens `file` at event `at` with `panel` in front and draws until all is
// settled, then a few frames more.
struct Shown {
  explicit Shown(const std::string& file, const std::string& panel, long at = -1)
      : ui((scratch(), make_args(file, panel, at))) {
    ::setenv("HOOKSCOPE_VIEWS_REPORT", (scratch() / "views.json").c_str(), 1);
    testing::frames_until([&] { return ui.app().settled(); }, [&] { ui.frame(); });
    for (int i = 0; i < 5; ++i) ui.frame();
  }
  static app::Args make_args(const std::string& file, const std::string& panel, long at) {
    app::Args a = testing::headless_args({file});
    a.panel = panel;
    if (at >= 0) a.at.text = std::to_string(at);
    return a;
  }
  testing::HeadlessApp ui;
};

}  // namespace

TEST_CASE("gui hostile: a hook whose owner was never declared draws its chip (was SIGSEGV in place_chips)") {
  crafted::Builder b;
  b.ev(crafted::kNodeCreated, 1, 0, b.intern("MulBackward0"));
  b.ev(crafted::kHookAdded, 1, 5, 0, 0, crafted::kPost);   // owner id 0: no owner at all
  b.ev(crafted::kHookAdded, 1, 6, 0, 44, crafted::kPost);  // owner 44, never created
  b.ev(crafted::kHookFired, 1, 5, 0, 0, crafted::kPost);
  b.ev(crafted::kHookFired, 1, 6, 0, 44, crafted::kPost);
  Shown s(write("no_owner.hstrace", b), "explain", 3);
  app::App& app = s.ui.app();
  REQUIRE(app.session().model() != nullptr);
  const std::string view = app.describe_view();
  CAPTURE(view);
  CHECK(view.find("1 Functions live, 2 hooks attached") != std::string::npos);
  CHECK(view.find("graph drew 1 boxes") != std::string::npos);
  CHECK(views_report()["explain_verdict"] == "unproven");  // never "normal"
  s.ui.frame();
}

TEST_CASE("gui hostile: a 1 MB module label in the Why panel is clipped for drawing (was ImGui 'Too many vertices')") {
  crafted::Builder b;
  const uint64_t label = b.intern(std::string(1 << 20, 'm'));
  b.ev(crafted::kOwnerCreated, 0, 0, label, 9, crafted::kOwnerModule);
  b.ev(crafted::kHookAdded, 0, 100, 0, 9, crafted::kModuleForward);
  b.ev(crafted::kNodeCreated, 30, 0, label);
  b.ev(crafted::kNodeLabel, 30, 0, label);
  b.ev(crafted::kHookFired, 0, 100, 0, 9, crafted::kModuleForward);
  Shown s(write("long_label.hstrace", b), "explain", 4);
  const auto report = views_report();
  CHECK(report["explain_verdict"] == "normal");
  CHECK(report["explain_steps"].get<int>() >= 2);
  for (int i = 0; i < 3; ++i) s.ui.frame();
  // what a panel draws is at most kMaxDrawnBytes of it (Note [Drawable text])
  const std::string shown = app::drawable(std::string(1 << 20, 'm'));
  CHECK(shown.size() < 1100);
  CHECK(shown.find("(1047552 more bytes)") != std::string::npos);
  CHECK(app::drawable("\xe2\x82\xac" + std::string(2000, 'x')).size() < 1100);
  CHECK(app::drawable_length(std::string(1023, 'x') + "\xe2\x82\xac") == 1023);  // never inside a character
}

TEST_CASE("gui hostile: a 20k x 20k readiness map shows a message in the panel (was std::bad_alloc)") {
  const crafted::Builder b = crafted::readiness_passes(20000, 20000, [](uint32_t k) { return k; });
  Shown s(write("huge_grid.hstrace", b), "readiness");
  const auto report = views_report();
  CHECK(report["readiness_refused"] == true);
  CHECK(report["cells"] == 0);
  CHECK(s.ui.app().session().model() != nullptr);  // the rest of the app goes on
}

TEST_CASE("gui hostile: a wide readiness map draws only the columns in view") {
  // 2 parameters x 60,000 passes: within the budget, but 120k cells would
  // overflow one draw list; only the visible ones are drawn.
  const crafted::Builder b = crafted::readiness_passes(2, 60000, [](uint32_t k) { return k % 2; });
  Shown s(write("wide_grid.hstrace", b), "readiness");
  const auto report = views_report();
  CHECK(report["readiness_refused"] == false);
  const int cells = report["cells"].get<int>();
  CHECK(cells > 0);
  CHECK(cells < 2 * 1000);  // a panel is not 1,000 cells (3 px each) wide
  CHECK(report["cell_status"][1].get<int>() > 0);  // ok cells among them
}

TEST_CASE("gui hostile: a headless run exits 2 when a trace or a --compare file cannot be opened") {
  const fs::path png = scratch() / "picture.png";
  std::ofstream(png, std::ios::binary) << "\x89PNG\r\n\x1a\n not a trace";
  crafted::Builder b;
  b.ev(crafted::kNodeCreated, 1, 0, b.intern("MulBackward0"));
  const std::string good = write("good.hstrace", b);
  {
    app::Args a = testing::headless_args({png.string()});
    a.screenshot = (scratch() / "shot.png").string();
    testing::HeadlessApp ui((scratch(), a));
    for (int i = 0; i < 5; ++i) ui.frame();
    CHECK(ui.app().quit_requested());
    CHECK(ui.app().exit_code() == 2);
  }
  {
    app::Args a = testing::headless_args({good});
    a.compare = {png.string()};
    testing::HeadlessApp ui((scratch(), a));
    for (int i = 0; i < 5; ++i) ui.frame();
    CHECK(ui.app().quit_requested());
    CHECK(ui.app().exit_code() == 2);
    CHECK(ui.app().error().find("picture.png") != std::string::npos);
  }
  {  // and a good pair quits with 0 when its frames are done
    app::Args a = testing::headless_args({good});
    a.compare = {good};
    testing::HeadlessApp ui((scratch(), a));
    for (int i = 0; i < 5; ++i) ui.frame();
    CHECK(ui.app().exit_code() == 0);
  }
  // --at is an event index: "-5" is refused before anything opens
  const auto r = testing::run_command(std::string(HOOKSCOPE_GUI_PATH) + " " + good + " --at -5 --frames 1");
  CHECK(r.exit == 2);
  CHECK(r.out.find("'-5' is below 0") != std::string::npos);
}
#endif
