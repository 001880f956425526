#pragma once
// hookscope-cli verbs. cli_main.cpp parses, the cli_*.cpp files run them.
// Exit codes: 0 ok, 1 findings (check, diff) or a run that failed, 2 usage,
// unreadable input, I/O errors and running out of memory ("out of memory
// while ..."); the inspecting verbs never exit 1 for an error.

#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "index_args.h"
#include "scenarios/run.h"

namespace hookscope::cli {

constexpr int kExitOk = 0;
constexpr int kExitFindings = 1;
constexpr int kExitUsage = 2;

// A user-facing failure with its exit code; main prints "hookscope-cli: error: ...".
struct CliError : std::runtime_error {
  CliError(int code, const std::string& what) : std::runtime_error(what), exit_code(code) {}
  int exit_code;
};

// Options shared by `record` and `launch` (Note [Scenario registry]).
using scenarios::ScenarioArgs;

// What the CLI is doing now, for "out of memory while ..." (set by the verbs).
void cli_step(std::string what);
const std::string& cli_step();

void add_scenario_options(CLI::App* app, ScenarioArgs& args, bool launcher);
std::vector<std::string> child_arguments(const ScenarioArgs& args);

struct EventsArgs {
  std::vector<std::string> kinds;
  long node = -1, owner = -1;
  EventIndexArg from, to;  // Note [Event index arguments]
  int rank = -1;
  std::string format = "text";
};

// check_only: validate the options and return (the GUI's --live asks so).
int run_record(const ScenarioArgs& args, bool check_only = false);
int run_info(const std::vector<std::string>& files);
int run_events(const std::vector<std::string>& files, const EventsArgs& args);
int run_state(const std::vector<std::string>& files, const EventIndexArg& at, int rank, const std::string& format);
int run_check(const std::vector<std::string>& files, const std::string& format, bool all);
int run_export(const std::vector<std::string>& files, const std::string& format, const EventIndexArg& at,
               const std::string& output);
int run_diff(const std::string& a, const std::string& b, const std::string& format);
int run_stats(const std::vector<std::string>& files);
int run_launch(const ScenarioArgs& args, int nproc);
// cli_views.cpp: the GUI's lanes / readiness / explain answers, headless.
int run_lanes(const std::vector<std::string>& files, const std::string& format, bool leaks_only);
int run_readiness(const std::vector<std::string>& files, const std::string& format);
int run_explain(const std::vector<std::string>& files, const EventIndexArg& event, const std::string& format);
// diff at a matching point (analysis/compare.h Note [Matching points]), with the hook-order diff.
int run_diff_at(const std::string& a, const std::string& b, const std::string& at, bool order,
                const std::string& format);

// Loads trace files into one model; unreadable input -> CliError(kExitUsage).
analysis::Model load_model(const std::vector<std::string>& files, bool quiet);
// The event `arg` names in `m`, or CliError(kExitUsage) saying why it names
// none (Note [Event index arguments]).
size_t event_at(const EventIndexArg& arg, const analysis::Model& m, std::string_view option);

}  // namespace hookscope::cli
