#pragma once
// hookscope-cli verbs. cli_main.cpp parses, the cli_*.cpp files run them.
// Exit codes: 0 ok, 1 findings (check) or a run that failed, 2 usage or
// unreadable input.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/ddp_scenarios.h"

namespace hookscope::cli {

constexpr int kExitOk = 0;
constexpr int kExitFindings = 1;
constexpr int kExitUsage = 2;

// A user-facing failure with its exit code; main prints "hookscope-cli: error: ...".
struct CliError : std::runtime_error {
  CliError(int code, const std::string& what) : std::runtime_error(what), exit_code(code) {}
  int exit_code;
};

// Options shared by `record` and `launch`, kept as text so `launch` can hand
// them to its children unchanged.
struct ScenarioArgs {
  std::string scenario;
  std::string output;  // -o
  int steps = -1;      // -1: the scenario's default
  uint64_t seed = 0;
  std::string policy = "by-key";
  int world_size = 2;
  int recoveries = 1;
  int fail_rank = 1;
  int fail_step = -1;
  std::string fail_mode = "throw";
  std::string fail_point = "hook";
  int timeout_ms = 5000;
  int batch = 16;
  std::string device = "cpu";
  // Process mode (set by `launch` for its children).
  int rank = -1;
  std::string store_dir;
  int generation = 0;
  int start_step = 0;
};

void add_scenario_options(CLI::App* app, ScenarioArgs& args, bool launcher);
std::vector<std::string> child_arguments(const ScenarioArgs& args);
scenarios::DdpScenarioOptions to_ddp_options(const ScenarioArgs& args);

int run_record(const ScenarioArgs& args);
int run_launch(const ScenarioArgs& args, int nproc);

}  // namespace hookscope::cli
