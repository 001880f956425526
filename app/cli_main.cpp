// hookscope-cli: record and inspect hookscope traces without a display.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "analysis/summary.h"
#include "ddp/reducer.h"
#include "scenarios/autograd_demo.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/recorder.h"

namespace {

int record_autograd_demo(const hookscope::scenarios::AutogradDemoOptions& options) {
  using namespace hookscope;
  trace::MemoryRecorder recorder;
  recorder.start();
  scenarios::AutogradDemoResult result = scenarios::run_autograd_demo(options);
  recorder.finish();
  auto events = recorder.events();
  fmt::print("autograd-demo: MLP 8-16-16-3, {} SGD step(s), loss {:.4f} -> {:.4f}\n",
             result.losses.size(), result.losses.front(), result.losses.back());
  fmt::print("  user hooks: {} added, {} removed, {} stale-key removal(s) refused\n",
             result.hooks_added, result.hooks_removed, result.stale_removals_refused);
  fmt::print("{}", analysis::format_summary(analysis::summarize(events)));
  return 0;
}

int record_ddp(const hookscope::scenarios::DdpScenarioOptions& options) {
  using namespace hookscope;
  trace::MemoryRecorder recorder;
  recorder.start();
  auto result = scenarios::run_ddp_scenario(options);
  recorder.finish();
  fmt::print("{}", scenarios::format_result(options, result));
  fmt::print("{}", analysis::format_summary(analysis::summarize(recorder.events())));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hookscope-cli: record autograd/DDP hook traces headless and inspect them"};
  app.require_subcommand(1);

  auto* record = app.add_subcommand("record", "run a built-in scenario and record its events");
  std::string scenario;
  hookscope::scenarios::AutogradDemoOptions demo;
  hookscope::scenarios::DdpScenarioOptions ddp;
  std::string policy = "by-key", fail_mode = "throw", device = "cpu";
  int timeout_ms = 5000;
  record->add_option("scenario", scenario, "scenario to run")
      ->required()
      ->check(CLI::IsMember(
          {"autograd-demo", "recovery", "shared-module", "unused-parameter", "marked-twice"}));
  record->add_option("--steps", ddp.steps, "training steps")->check(CLI::Range(1, 1000000));
  record->add_option("--seed", ddp.seed, "seed for data and weights");
  record->add_option("--policy", policy, "how a destroyed Reducer removes its hooks")
      ->check(CLI::IsMember({"by-key", "none", "by-type"}));
  record->add_option("--world-size", ddp.world_size, "ranks (threads in this process)");
  record->add_option("--recoveries", ddp.recoveries, "failures to inject and recover from");
  record->add_option("--fail-rank", ddp.fail_rank, "the rank that fails");
  record->add_option("--fail-step", ddp.fail_step, "the step of the first failure");
  record->add_option("--fail-mode", fail_mode, "throw, kill (process mode only) or timeout")
      ->check(CLI::IsMember({"throw", "kill", "timeout"}));
  record->add_option("--fail-point", ddp.fail_point, "where a thrown failure happens")
      ->check(CLI::IsMember({"hook", "collective"}));
  record->add_option("--timeout-ms", timeout_ms, "collective timeout")->check(CLI::Range(100, 600000));
  record->add_option("--batch", ddp.batch_per_rank, "samples per rank per step");
  record->add_option("--device", device, "cpu or cuda")->check(CLI::IsMember({"cpu", "cuda"}));

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*record) {
      if (scenario == "autograd-demo") {
        demo.steps = ddp.steps == hookscope::scenarios::DdpScenarioOptions{}.steps ? 5 : ddp.steps;
        demo.seed = ddp.seed;
        return record_autograd_demo(demo);
      }
      ddp.name = scenario;
      ddp.policy = hookscope::ddp::parse_policy(policy);
      ddp.fail_mode = fail_mode == "kill"      ? hookscope::trace::FailureMode::kKill
                      : fail_mode == "timeout" ? hookscope::trace::FailureMode::kTimeout
                                               : hookscope::trace::FailureMode::kThrow;
      ddp.timeout = std::chrono::milliseconds(timeout_ms);
      ddp.device = hookscope::parse_device(device);
      return record_ddp(ddp);
    }
  } catch (const std::exception& e) {
    fmt::print(stderr, "hookscope-cli: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
