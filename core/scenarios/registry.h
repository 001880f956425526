#pragma once
// Note [Scenario registry]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// The built-in scenarios and the options that drive them are declared once,
// here: `hookscope-cli record` and `launch` and the GUI's `--live` build
// their command lines from these two tables (app/scenario_options.cpp turns
// them into CLI11 options) and validate through validate(), so the three
// accept the same options with the same ranges and say the same things about
// bad values. Adding a scenario is one entry in kScenarios (registry.cpp):
// its name, one line of help, whether it trains with DDP on ranks, and a
// the run that runs it (its case in run.cpp). Adding an option is one entry
// in scenario_options() plus its field in ScenarioArgs (and, for a DDP
// scenario, its line in to_ddp_options, run.h). docs/architecture.md walks
// through both. This table knows no runtime (library hookscope_scenario_catalog):
// the GUI parses --live with it and runs the scenario in a hookscope-cli
// child; the runs and the checks that need the runtime are in run.h.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace hookscope::scenarios {

constexpr int kMaxWorldSize = 64;

// A scenario run as the user asked for it, kept as text and numbers so that
// `launch` can hand it to its children unchanged (to_arguments()).
struct ScenarioArgs {
  std::string scenario;
  std::string output;  // -o (record, launch); not part of to_arguments()
  int steps = -1;      // -1: the scenario's default
  uint64_t seed = 0;
  std::string policy = "by-key";
  int world_size = 2;
  int recoveries = 1;
  int fail_rank = 1;
  int fail_step = -1;  // -1: a third of the way in
  std::string fail_mode = "throw";
  std::string fail_point = "hook";
  int timeout_ms = 5000;
  int batch = 16;
  std::string device = "cpu";
  std::string backend = "auto";  // auto | gloo | nccl (DDP scenarios)
  // Process mode (set by `launch` for its children).
  int rank = -1;
  std::string store_dir;
  std::string store;   // --store: redis://HOST:PORT (Note [Rendezvous store specs])
  std::string run_id;  // --run-id: prefix of the run's keys in the store
  std::string bind;    // --bind: address or interface of this rank's TCP connections
  int generation = 0;
  int start_step = 0;
};

// How the ranks of a run are placed.
enum class RunMode {
  kThreads,    // every rank a thread of this process: `record`, the GUI's --live
  kProcesses,  // one process per rank: `launch`
};

// Which run plays a scenario (run.cpp); every DDP story is one run, a branch
// on its name in ddp_scenarios.cpp.
enum class Runner { kAutogradDemo, kDdp, kModuleHooks, kModuleApi };

struct Scenario {
  std::string_view name;
  std::string_view help;  // one line, for --help and the man pages
  Runner runner;
  // Trains with DDP on ranks: `launch` runs it, the DDP options apply.
  bool ddp() const { return runner == Runner::kDdp; }
};

std::span<const Scenario> all_scenarios();
const Scenario* find_scenario(std::string_view name);
// The names, in table order; ddp_only: those `launch` can run.
std::vector<std::string> scenario_names(bool ddp_only = false);
// True for the scenarios of the table that train with DDP.
bool is_ddp_scenario(const std::string& name);

// Who shows an option (a bit set).
enum OptionUse : unsigned {
  kUseRecord = 1u << 0,  // hookscope-cli record
  kUseLaunch = 1u << 1,  // hookscope-cli launch
  kUseLive = 1u << 2,    // hookscope --live
  kUseChild = 1u << 3,   // set by `launch` for its children only; hidden from people
  kUseAll = kUseRecord | kUseLaunch | kUseLive,
};

struct ScenarioOption {
  using Field = std::variant<int ScenarioArgs::*, uint64_t ScenarioArgs::*, std::string ScenarioArgs::*>;
  std::string_view flag;  // "--steps"
  std::string_view help;
  Field field;
  int64_t min = 0, max = 0;               // numbers: the accepted range, inclusive
  std::vector<std::string> choices = {};  // text: the accepted values (empty: any)
  unsigned use = kUseAll;
};

// Every option, in the order --help lists them.
const std::vector<ScenarioOption>& scenario_options();
const ScenarioOption* find_option(std::string_view flag);

// Empty when `value` is acceptable for `option`; otherwise what is wrong and
// what is accepted, e.g. "0 is out of range: expected 1 to 1000000" (callers
// put the flag in front, as CLI11 does: "--steps: 0 is out of range: ...").
std::string check_value(const ScenarioOption& option, std::string_view value);
// The option's current value in `args`, as text.
std::string value_text(const ScenarioOption& option, const ScenarioArgs& args);

// The checks this table can make alone: the scenario exists and runs in
// `mode`, every option is in its range. Throws std::invalid_argument saying
// what was wrong and what to do. validate() (run.h) checks the rest.
void check_options(const ScenarioArgs& args, RunMode mode);

// `args` as the options `record` parses back into the same ScenarioArgs:
// every option of the table whose value is not the default (the hidden child
// ones included), without the scenario name and -o.
std::vector<std::string> to_arguments(const ScenarioArgs& args);

}  // namespace hookscope::scenarios
