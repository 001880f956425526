// hookscope-cli: record and inspect hookscope traces without a display.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <string>

#include "analysis/summary.h"
#include "scenarios/autograd_demo.h"
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

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hookscope-cli: record autograd/DDP hook traces headless and inspect them"};
  app.require_subcommand(1);

  auto* record = app.add_subcommand("record", "run a built-in scenario and record its events");
  std::string scenario;
  hookscope::scenarios::AutogradDemoOptions demo;
  record->add_option("scenario", scenario, "scenario to run")
      ->required()
      ->check(CLI::IsMember({"autograd-demo"}));
  record->add_option("--steps", demo.steps, "training steps")->check(CLI::Range(1, 1000000));
  record->add_option("--seed", demo.seed, "seed for data and weights");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  try {
    if (*record) return record_autograd_demo(demo);
  } catch (const std::exception& e) {
    fmt::print(stderr, "hookscope-cli: error: {}\n", e.what());
    return 1;
  }
  return 0;
}
