// Note [Idle frames]: the real app in a window under Xvfb, a trace open and
// nothing moving, waits for events instead of drawing: its CPU over a few
// quiet seconds, measured by bench/gui_idle_cpu.sh, stays far below what a
// frame loop spends (68-77% of a core before). Skips without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <regex>
#include <string>

#include "analysis/model.h"
#include "testing/test_util.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;

TEST_CASE("gui idle: with nothing moving the app waits for events and uses almost no CPU" *
          doctest::test_suite("gui")) {
  if (!testing::have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
    return;
  }
  const std::string trace = std::string(HOOKSCOPE_SAMPLES_DIR) + "/recovery-none.hstrace";
  // At a hook fire the fired chip's ring pulses for a moment, then stays lit.
  const analysis::Model m(trace::read_trace(trace));
  size_t fire = 0;
  while (fire + 1 < m.num_events() && m.event(fire).kind != trace::EventKind::kHookFired) ++fire;
  REQUIRE(m.event(fire).kind == trace::EventKind::kHookFired);
  // One run of 5 quiet seconds each.
  for (const std::string& at : {std::string(), " --at " + std::to_string(fire)}) {
    const auto r = testing::run_command("RUNS=1 SECONDS_IDLE=5 APP=" + std::string(HOOKSCOPE_GUI_PATH) + " " +
                                        std::string(HOOKSCOPE_SOURCE_DIR) + "/bench/gui_idle_cpu.sh " + trace + at);
    REQUIRE_MESSAGE(r.exit == 0, r.out);
    std::smatch match;
    REQUIRE_MESSAGE(std::regex_search(r.out, match, std::regex(R"(the idle app uses ([0-9.]+)% of a core)")), r.out);
    // Generous for a loaded 2-core CI machine: a waiting app uses ~0%.
    CHECK_MESSAGE(std::stod(match[1].str()) < 10.0, r.out);
  }
}

#endif  // HOOKSCOPE_APP_UI
