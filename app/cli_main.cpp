// hookscope-cli: record and inspect hookscope traces without a display.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "cli.h"
#include "cli_python.h"
#include "export/export.h"
#include "launch.h"
#include "tensor/kernels.h"

namespace {

// `hookscope-cli frobnicate x`: CLI11 said only "A subcommand is required".
// Name the word and the verbs there are; -1 to go on.
int refuse_unknown_verb(const CLI::App& app, int argc, char** argv) {
  if (argc < 2 || argv[1][0] == '-' || argv[1][0] == '\0') return -1;
  const std::string word = argv[1];
  std::vector<std::string> verbs;
  for (const CLI::App* verb : app.get_subcommands([](const CLI::App*) { return true; })) {
    if (verb->check_name(word)) return -1;
    verbs.push_back(verb->get_name());
  }
  fmt::print(stderr, "hookscope-cli: error: '{}' is not a verb; the verbs are: {} (hookscope-cli VERB --help "
             "for one)\n", hookscope::exporters::terminal_safe(word), fmt::join(verbs, ", "));
  return hookscope::cli::kExitUsage;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace hookscope::cli;
  // record-python / record --python: the rest of argv is the script's (cli_python.h).
  if (auto rc = maybe_record_python(argc, argv)) return *rc;
  CLI::App app{"hookscope-cli: record autograd/DDP hook traces headless and inspect them"};
  app.require_subcommand(1);
  app.set_help_all_flag("--help-all", "help for every verb");
  // The BLAS line says which OpenBLAS kernels the runtime's matmuls use (Note
  // [OpenBLAS kernels on AVX-512 AMD CPUs]): they decide its CPU speed.
  app.set_version_flag("--version", [] {
    return std::string("hookscope-cli ") + HOOKSCOPE_VERSION + "\nBLAS: OpenBLAS " + hookscope::blas_core();
  }, "print the version and the BLAS kernels in use, and exit");

  ScenarioArgs record_args, launch_args;
  auto* record = app.add_subcommand("record", "run a built-in scenario and record its events");
  add_scenario_options(record, record_args, false);
  add_store_options(record, record_args, false);
  bool record_check = false;
  record->add_flag("--check", record_check, "check the options (devices, ranks, steps) and exit without running");
  std::string python_script;  // handled by maybe_record_python; listed here for --help
  record->add_option("--python", python_script,
                     "record a PyTorch program instead: record [-o OUT] --python SCRIPT ARGS...");
  app.add_subcommand("record-python", "record a PyTorch program through the torch bridge: "
                                      "record-python [-o OUT] SCRIPT ARGS...");

  int nproc = 2;
  auto* launch = app.add_subcommand(
      "launch", "run a DDP scenario with one process per rank (FileStore rendezvous)");
  launch->add_option("--nproc", nproc, "number of rank processes")->check(CLI::Range(2, 64));
  add_scenario_options(launch, launch_args, true);
  add_store_options(launch, launch_args, true);

  std::vector<std::string> files;
  auto add_files = [&files](CLI::App* verb) {
    verb->add_option("files", files, "trace files (.hstrace); several = the ranks of one run")->required();
  };
  auto* info = app.add_subcommand("info", "header, ranks, duration, counts per event kind");
  add_files(info);

  EventsArgs ev;
  auto* events = app.add_subcommand("events", "list events, filtered");
  add_files(events);
  events->add_option("--kind", ev.kinds, "only events of this kind (repeatable), e.g. hook_fire");
  events->add_option("--node", ev.node, "only events concerning this Function id")->check(CLI::NonNegativeNumber);
  events->add_option("--owner", ev.owner, "only events of this owner id (as owner or remover)")
      ->check(CLI::NonNegativeNumber);
  events->add_option("--rank", ev.rank, "only this rank")->check(CLI::Range(0, 65535));
  events->add_option("--from", ev.from.text, "first event index")->check(event_index_check());
  events->add_option("--to", ev.to.text, "last event index")->check(event_index_check());
  events->add_option("--format", ev.format, "text or jsonl")->check(CLI::IsMember({"text", "jsonl"}));

  EventIndexArg at;  // Note [Event index arguments]
  int rank = -1;
  std::string format = "text";
  auto* state = app.add_subcommand("state", "every live Function with its hooks right after an event");
  add_files(state);
  state->add_option("--at", at.text, "event index")->required()->check(event_index_check());
  state->add_option("--rank", rank, "only Functions of this rank")->check(CLI::Range(0, 65535));
  state->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));

  bool all = false;
  auto* check = app.add_subcommand("check", "diagnostics; exit 0 when clean, 1 with findings");
  add_files(check);
  check->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  check->add_flag("--all", all, "print every finding, not a few per kind");

  std::string output;
  auto* exp = app.add_subcommand("export", "write Chrome trace JSON (Perfetto), JSON Lines or DOT");
  add_files(exp);
  exp->add_option("--format", format, "chrome, jsonl or dot")
      ->required()
      ->check(CLI::IsMember({"chrome", "jsonl", "dot"}));
  exp->add_option("--at", at.text, "event index for dot (default: the last)")->check(event_index_check());
  exp->add_option("-o,--output", output, "output file, - for stdout")->required();

  std::string a, b;
  auto* diff = app.add_subcommand("diff", "hook counts per Function and findings that differ");
  diff->add_option("a", a, "first trace")->required();
  diff->add_option("b", b, "second trace")->required();
  diff->add_option("--format", format, "text or json")->check(CLI::IsMember({"text", "json"}));
  std::string diff_at;
  bool diff_order = false;
  diff->add_option("--at", diff_at, "compare at a matching point: end, backward:N, rebuild:N, failure:N, "
                                    "constructed:N, destroyed:N or KIND:N (the state right after it in each)");
  diff->add_flag("--order", diff_order, "also compare the order in which hooks were added and fired on "
                                        "each Function");

  auto* stats = app.add_subcommand("stats", "fires per hook and owner, hook counts over time");
  add_files(stats);

  bool leaks_only = false;
  auto* lanes = app.add_subcommand("lanes", "one line per hook: added, removed, owner's death, fires "
                                            "before/after it");
  add_files(lanes);
  lanes->add_option("--format", format, "text or jsonl")->check(CLI::IsMember({"text", "jsonl"}));
  lanes->add_flag("--leaks", leaks_only, "only hooks that outlive their owner, or fire after its death or their removal");
  auto* readiness = app.add_subcommand("readiness", "per rank, DDP parameters x backward passes: ok, "
                                                    "unused, marked twice, stale");
  add_files(readiness);
  readiness->add_option("--format", format, "text or jsonl")->check(CLI::IsMember({"text", "jsonl"}));
  EventIndexArg explain_event;
  auto* explain = app.add_subcommand("explain", "why did this hook fire: the chain of events behind one "
                                                "hook_fire");
  add_files(explain);
  explain->add_option("--event", explain_event.text, "index of a hook_fire event")->required()->check(event_index_check());
  explain->add_option("--format", format, "text or jsonl")->check(CLI::IsMember({"text", "jsonl"}));

  if (const int rc = refuse_unknown_verb(app, argc, argv); rc >= 0) return rc;
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? kExitOk : kExitUsage;
  }
  try {
    if (*record) return run_record(record_args, record_check);
    if (*launch) return run_launch(launch_args, nproc);
    if (*info) return run_info(files);
    if (*events) return run_events(files, ev);
    if (*state) return run_state(files, at, rank, format);
    if (*check) return run_check(files, format, all);
    if (*exp) return run_export(files, format, at, output);
    if (*diff) return diff_at.empty() && !diff_order ? run_diff(a, b, format)
                                                     : run_diff_at(a, b, diff_at, diff_order, format);
    if (*stats) return run_stats(files);
    if (*lanes) return run_lanes(files, format, leaks_only);
    if (*readiness) return run_readiness(files, format);
    if (*explain) return run_explain(files, explain_event, format);
  } catch (const CliError& e) {
    fmt::print(stderr, "hookscope-cli: error: {}\n", e.what());
    return e.exit_code;
  } catch (const std::bad_alloc&) {
    // Exit codes: 0 ok, 1 findings, 2 usage, I/O or memory (cli.h).
    fmt::print(stderr, "hookscope-cli: error: out of memory while {}; give the process more memory or "
               "analyse fewer/shorter traces\n", cli_step());
    return kExitUsage;
  } catch (const std::exception& e) {
    fmt::print(stderr, "hookscope-cli: error: {} (while {})\n", e.what(), cli_step());
    // A run that failed is 1 (record, launch); for the inspecting verbs an
    // error is never a finding: 2.
    return *record || *launch ? kExitFindings : kExitUsage;
  }
  return kExitOk;
}
