// hookscope-cli: record and inspect hookscope traces without a display.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>

#include "cli.h"

int main(int argc, char** argv) {
  using namespace hookscope::cli;
  CLI::App app{"hookscope-cli: record autograd/DDP hook traces headless and inspect them"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every verb");

  ScenarioArgs record_args, launch_args;
  auto* record = app.add_subcommand("record", "run a built-in scenario and record its events");
  add_scenario_options(record, record_args, false);

  int nproc = 2;
  auto* launch = app.add_subcommand(
      "launch", "run a DDP scenario with one process per rank (FileStore rendezvous)");
  launch->add_option("--nproc", nproc, "number of rank processes")->check(CLI::Range(2, 64));
  add_scenario_options(launch, launch_args, true);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (*record) return run_record(record_args);
    if (*launch) return run_launch(launch_args, nproc);
  } catch (const CliError& e) {
    fmt::print(stderr, "hookscope-cli: error: {}\n", e.what());
    return e.exit_code;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hookscope-cli: error: {}\n", e.what());
    return kExitFindings;
  }
  return kExitOk;
}
