// Every panel and view at once on every crafted hostile trace, compared with
// itself (a hostile trace must never crash a panel): what the GUI fuzzer (fuzz/fuzz_gui_frame.cpp)
// does to each input, in the normal suite, on the catalogue its corpus is
// seeded from. An App with an ImGui context and no window, as a user's frames.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>

#include <filesystem>
#include <fstream>

#include "app.h"
#include "testing/crafted_traces.h"
#include "testing/headless_app.h"
#include "testing/test_util.h"

using namespace hookscope;
namespace crafted = hookscope::testing::crafted;
namespace fs = std::filesystem;

TEST_CASE("gui every panel: each crafted hostile trace, every panel at once and compared with itself") {
  const fs::path dir = testing::scratch_config_dir("hookscope_app_every_panel");
  for (const crafted::Crafted& c : crafted::catalogue(200)) {
    CAPTURE(c.name);
    const fs::path path = dir / (c.name + ".hstrace");
    std::ofstream(path, std::ios::binary) << c.bytes;
    app::Args args = testing::headless_args({path.string()});
    args.compare = {path.string()};
    testing::HeadlessApp ui(args);
    app::App& app = ui.app();
    app.show_every_panel();
    testing::frames_until([&] { return app.settled(); }, [&] { ui.frame(); });
    REQUIRE(app.settled());
    const analysis::Model* m = app.session().model();
    if (!m || m->num_events() == 0) continue;
    for (size_t at : {size_t{0}, m->num_events() / 2, m->num_events() - 1}) {
      app.session().go_to(at);
      app.session().select_function(app.session().function_of_event(at));
      testing::frames_until([&] { return app.settled(); }, [&] { ui.frame(); });
      ui.frame();
    }
    // What a user sees: the trace on screen and the Compare panel filled in, not an error.
    CHECK(app.describe_view().find("nothing open") == std::string::npos);
    CHECK(app.compare_state().model_b != nullptr);
  }
}
#endif

#if HOOKSCOPE_APP_UI
// Found by fuzz_gui_frame (UBSan): the Events panel's time column subtracted
// two int64 times that span more than int64 (signed overflow).
TEST_CASE("gui every panel: times spanning more than int64 draw in the Events panel") {
  const fs::path dir = testing::scratch_config_dir("hookscope_app_every_panel");
  crafted::Builder b;
  b.t = 0x0700000000000000ull;
  b.ev(crafted::kNodeCreated, 1, 0, b.intern("MulBackward0"));
  b.t = 0x8700000000000000ull;  // read as a time far below the first
  b.ev(crafted::kHookAdded, 1, 5, 0, 0, crafted::kPost);
  const fs::path path = dir / "times_span.hstrace";
  std::ofstream(path, std::ios::binary) << crafted::encode(b.spec);
  app::Args args = testing::headless_args({path.string()});
  args.panel = "events";
  testing::HeadlessApp ui(args);
  testing::frames_until([&] { return ui.app().settled(); }, [&] { ui.frame(); });
  ui.frame();
  REQUIRE(ui.app().session().model() != nullptr);
  CHECK(ui.app().describe_view().find("nothing open") == std::string::npos);
}
#endif
