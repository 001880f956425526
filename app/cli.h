#pragma once
// hookscope-cli verbs. cli_main.cpp parses, the cli_*.cpp files run them.
// Exit codes: 0 ok, 1 findings (check, diff) or a run that failed, 2 usage,
// unreadable input, I/O errors and running out of memory ("out of memory
// while ..."); the inspecting verbs never exit 1 for an error.

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
  std::string backend = "auto";  // auto | gloo | nccl (DDP scenarios)
  // Process mode (set by `launch` for its children).
  int rank = -1;
  std::string store_dir;
  int generation = 0;
  int start_step = 0;
};

// What the CLI is doing now, for "out of memory while ..." (set by the verbs).
void cli_step(std::string what);
const std::string& cli_step();

void add_scenario_options(CLI::App* app, ScenarioArgs& args, bool launcher);
std::vector<std::string> child_arguments(const ScenarioArgs& args);
scenarios::DdpScenarioOptions to_ddp_options(const ScenarioArgs& args);

struct EventsArgs {
  std::vector<std::string> kinds;
  long node = -1, owner = -1, from = -1, to = -1;
  int rank = -1;
  std::string format = "text";
};

int run_record(const ScenarioArgs& args);
int run_info(const std::vector<std::string>& files);
int run_events(const std::vector<std::string>& files, const EventsArgs& args);
int run_state(const std::vector<std::string>& files, long at, int rank, const std::string& format);
int run_check(const std::vector<std::string>& files, const std::string& format, bool all);
int run_export(const std::vector<std::string>& files, const std::string& format, long at,
               const std::string& output);
int run_diff(const std::string& a, const std::string& b, const std::string& format);
int run_stats(const std::vector<std::string>& files);
int run_launch(const ScenarioArgs& args, int nproc);

}  // namespace hookscope::cli
