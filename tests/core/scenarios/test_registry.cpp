// The scenario registry (Note [Scenario registry]): one table of scenarios
// and options behind `hookscope-cli record`, `launch` and the GUI's --live.
#include <doctest/doctest.h>

#include <CLI/CLI.hpp>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <stdexcept>

#include "scenario_options.h"
#include "scenarios/run.h"
#include "testing/test_util.h"
#include "trace/event.h"
#if HOOKSCOPE_APP_UI
#include "app_args.h"
#endif

using namespace hookscope;
using scenarios::RunMode;
using scenarios::ScenarioArgs;

namespace {

std::string validation_error(const ScenarioArgs& a, RunMode mode = RunMode::kThreads) {
  try {
    scenarios::validate(a, mode);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

ScenarioArgs args_for(const std::string& scenario) {
  ScenarioArgs a;
  a.scenario = scenario;
  return a;
}

// Parses `argv` with the options `use` declares, as record/launch/--live do.
std::string parse(scenarios::OptionUse use, std::vector<std::string> argv, ScenarioArgs& out) {
  CLI::App app{"test"};
  app::add_scenario_options(&app, out, use);
  std::vector<const char*> cargv = {"test"};
  for (auto& s : argv) cargv.push_back(s.c_str());
  try {
    app.parse(static_cast<int>(cargv.size()), cargv.data());
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("registry: every scenario is listed once, findable, and valid with default options") {
  std::set<std::string> seen;
  for (const auto& s : scenarios::all_scenarios()) {
    CAPTURE(s.name);
    CHECK(seen.insert(std::string(s.name)).second);
    CHECK(scenarios::find_scenario(s.name) == &s);
    CHECK_FALSE(s.help.empty());
    CHECK(validation_error(args_for(std::string(s.name))) == "");
    CHECK(scenarios::is_ddp_scenario(std::string(s.name)) == s.ddp());
    // launch runs exactly the DDP scenarios; the others say to use record.
    const std::string as_processes = validation_error(args_for(std::string(s.name)), RunMode::kProcesses);
    if (s.ddp()) {
      CHECK(as_processes == "");
    } else {
      CHECK(as_processes.find("hookscope-cli record") != std::string::npos);
    }
  }
  CHECK(seen.count("recovery"));
  CHECK(scenarios::scenario_names(true).size() < scenarios::scenario_names(false).size());
  const std::string unknown = validation_error(args_for("recovry"));
  CHECK(unknown.find("unknown scenario 'recovry'") != std::string::npos);
  CHECK(unknown.find("shared-module") != std::string::npos);
}

TEST_CASE("registry: a bad value says which option, what was wrong and the valid range") {
  // A recovery run with one change.
  auto error_with = [](void (*change)(ScenarioArgs&)) {
    ScenarioArgs a = args_for("recovery");
    change(a);
    return validation_error(a);
  };
  CHECK(error_with([](ScenarioArgs& a) { a.steps = 0; }) ==
        "--steps: 0 is out of range: expected 1 to 1000000");
  CHECK(error_with([](ScenarioArgs& a) { a.world_size = 65; }) ==
        "--world-size: 65 is out of range: expected 1 to 64");
  CHECK(error_with([](ScenarioArgs& a) { a.policy = "sideways"; }) ==
        "--policy: 'sideways' is not accepted: expected by-key, none or by-type");
  CHECK(error_with([](ScenarioArgs& a) { a.world_size = 3, a.fail_rank = 3; })
            .find("--fail-rank 3 is not a rank of a world of 3") != std::string::npos);
  CHECK(error_with([](ScenarioArgs& a) { a.timeout_ms = 5; }) ==
        "--timeout-ms: 5 is out of range: expected 100 to 600000");
  CHECK(error_with([](ScenarioArgs& a) { a.steps = 4, a.fail_step = 3; }).find("--steps 4 is too few") !=
        std::string::npos);
  // kill cannot kill a thread: say to launch one process per rank.
  ScenarioArgs a = args_for("recovery");
  a.fail_mode = "kill";
  CHECK(validation_error(a).find("hookscope-cli launch") != std::string::npos);
  CHECK(validation_error(a, RunMode::kProcesses) == "");
}

TEST_CASE("registry: the policy and failure-mode names have one home, trace::to_string") {
  for (const std::string& name : trace::destroy_policy_names()) {
    REQUIRE(trace::parse_destroy_policy(name));
    CHECK(trace::to_string(*trace::parse_destroy_policy(name)) == name);
  }
  CHECK(trace::destroy_policy_names() == scenarios::find_option("--policy")->choices);
  CHECK(trace::failure_mode_names() == scenarios::find_option("--fail-mode")->choices);
  CHECK_FALSE(trace::parse_destroy_policy("by_key"));
  ScenarioArgs a = args_for("shared-module");
  a.policy = "by-type";
  a.fail_mode = "timeout";
  const auto o = scenarios::to_ddp_options(a);
  CHECK(o.policy == trace::DestroyPolicy::kByType);
  CHECK(o.fail_mode == trace::FailureMode::kTimeout);
}

TEST_CASE("registry: CLI11 options check with the registry's message - to_arguments round-trips") {
  ScenarioArgs a;
  CHECK(parse(scenarios::kUseRecord, {"--steps", "0"}, a) == "--steps: 0 is out of range: expected 1 to 1000000");
  CHECK(parse(scenarios::kUseRecord, {"--fail-mode", "explode"}, a).find("expected throw, kill or timeout") !=
        std::string::npos);
  CHECK(parse(scenarios::kUseRecord, {"--seed", "-3"}, a).find("not a non-negative whole number") !=
        std::string::npos);
  // launch has --nproc instead of --world-size.
  CHECK_FALSE(parse(scenarios::kUseLaunch, {"--world-size", "3"}, a).empty());

  const ScenarioArgs in{.scenario = "recovery", .steps = 9, .seed = 12345678901234ull, .policy = "none",
                       .world_size = 3, .fail_rank = 2, .fail_point = "collective", .timeout_ms = 250,
                       .batch = 4, .backend = "gloo", .rank = 1, .store_dir = "/tmp/x", .store = {}, .run_id = {}, .bind = {},
                       .generation = 2};
  ScenarioArgs out;
  out.scenario = in.scenario;
  REQUIRE(parse(scenarios::kUseRecord, scenarios::to_arguments(in), out) == "");
  CHECK(scenarios::to_arguments(out) == scenarios::to_arguments(in));
  CHECK(out.seed == in.seed);
  CHECK(out.store_dir == "/tmp/x");
  CHECK(scenarios::to_arguments(args_for("recovery")).empty());  // defaults are not written
}

TEST_CASE("cli: record rejects an out-of-range option with the registry's message, exit 2") {
  auto r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " record recovery --steps 0");
  CHECK(r.exit == 2);
  CHECK(r.out.find("--steps: 0 is out of range: expected 1 to 1000000") != std::string::npos);
  r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " record recovery --world-size 2 --fail-rank 5");
  CHECK(r.exit == 2);
  CHECK(r.out.find("--fail-rank 5 is not a rank of a world of 2") != std::string::npos);
  r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " launch autograd-demo -o /tmp/x");
  CHECK(r.exit == 2);
}

#if HOOKSCOPE_APP_UI
TEST_CASE("app: --live accepts every option record accepts - kill says to use launch") {
  auto parse_app = [](std::vector<std::string> words, app::Args& a) {
    words.insert(words.begin(), "hookscope");
    a.cli = HOOKSCOPE_CLI_PATH;  // the runtime's checks (Note [The GUI runs no scenario])
    std::vector<char*> argv;
    for (auto& w : words) argv.push_back(w.data());
    return app::parse_args(static_cast<int>(argv.size()), argv.data(), a);
  };
  app::Args a;
  CHECK(parse_app({"--live", "recovery", "--fail-point", "collective", "--timeout-ms", "300", "--batch", "4",
                   "--backend", "gloo", "--steps", "7", "--fail-step", "2"},
                  a) == -1);
  CHECK(a.live);
  CHECK(a.scenario.fail_point == "collective");
  CHECK(a.scenario.timeout_ms == 300);
  CHECK(a.scenario.batch == 4);
  CHECK(a.scenario.backend == "gloo");
  for (const auto& o : scenarios::scenario_options()) {
    if (!(o.use & scenarios::kUseRecord)) continue;
    CAPTURE(o.flag);
    // Every record option is declared by the GUI too, with the same check.
    const std::string good = o.choices.empty() ? std::to_string(o.min) : o.choices.front();
    app::Args b;
    CHECK(parse_app({"--live", "shared-module", std::string(o.flag), good}, b) == -1);
    CHECK(scenarios::value_text(o, b.scenario) == good);
    app::Args c;
    CHECK(parse_app({"--live", "shared-module", std::string(o.flag), "not-a-value-anyone-accepts"}, c) == 2);
  }
  app::Args k;
  CHECK(parse_app({"--live", "recovery", "--fail-mode", "kill"}, k) == 2);
}
#endif

#if HOOKSCOPE_APP_UI
TEST_CASE("app: without a display, --live records headless through the hookscope-cli beside it") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("hookscope-fallback-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const auto r = testing::run_command("cd " + dir.string() + " && env -u DISPLAY -u WAYLAND_DISPLAY " +
                                      HOOKSCOPE_GUI_PATH + " --live autograd-demo --steps 2 --seed 3");
  CHECK(r.exit == 0);
  CHECK(r.out.find("recording the 'autograd-demo' scenario headless instead") != std::string::npos);
  CHECK(r.out.find("open it later with: ") != std::string::npos);
  CHECK(r.out.find("hookscope autograd-demo.hstrace") != std::string::npos);
  CHECK(fs::file_size(dir / "autograd-demo.hstrace") > 100);
  fs::remove_all(dir);
}
#endif
