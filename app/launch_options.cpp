// `record`/`launch` options of runs with one process per rank: the
// rendezvous store, the run id, the rank (Note [Launch protocol],
// Note [Rendezvous store specs]).
#include <fmt/format.h>

#include <stdexcept>

#include "cli.h"
#include "ddp/process_group.h"
#include "launch.h"

namespace hookscope::cli {

void add_store_options(CLI::App* app, ScenarioArgs& a, bool launcher) {
  app->get_option("-o")->check(
      [](const std::string& s) {
        return s.empty() ? std::string("the output path is empty; give a file name") : std::string();
      },
      "PATH");
  app->add_option("--store", a.store,
                  launcher ? "rendezvous store redis://HOST:PORT (default: files in /tmp)"
                           : "rendezvous store of a multi-process run: redis://HOST:PORT or a "
                             "shared directory (with --rank and --world-size)");
  app->add_option("--run-id", a.run_id,
                  launcher ? "prefix of this run's keys in the store (default: made up per run)"
                           : "prefix of this run's keys in the store: the same on every rank, new "
                             "for each run (required with a Redis store)");
  if (!launcher) {
    app->add_option("--bind", a.bind,
                    "address or network interface this rank's Gloo connections use (default "
                    "127.0.0.1; another host's ranks must reach it)");
    if (auto* rank = app->get_option_no_throw("--rank")) {
      rank->description("this process's rank, 0..world size - 1 (with --store)")->group("Options");
    }
  }
}

void check_rank_process_args(const ScenarioArgs& a) {
  auto usage = [](const std::string& m) { throw CliError(kExitUsage, m); };
  if (a.rank < 0) {
    if (!a.store.empty() || !a.store_dir.empty() || !a.run_id.empty() || !a.bind.empty()) {
      usage("--store, --store-dir, --run-id and --bind are for one rank per process: give --rank "
            "R and --world-size N too (or use `hookscope-cli launch`)");
    }
    return;
  }
  if (!scenarios::is_ddp_scenario(a.scenario)) usage("--rank is for the DDP scenarios, not " + a.scenario);
  if (a.rank >= a.world_size) {
    usage(fmt::format("--rank {} is not a rank of a world of {} (--world-size)", a.rank,
                      a.world_size));
  }
  if (a.fail_mode == "kill" && a.store_dir.empty() && a.scenario == "recovery") {
    usage("--fail-mode kill with --rank: no launcher would start a replacement for the killed "
          "rank; use `hookscope-cli launch`, or --fail-mode throw|timeout (the process then "
          "replaces its failed rank itself)");
  }
  if (a.store.empty() && a.store_dir.empty()) {
    usage("--rank needs a rendezvous store: --store redis://HOST:PORT --run-id ID (or a shared "
          "directory), the same for every rank");
  }
  try {
    ddp::check_run_id(a.run_id);
    if (ddp::parse_redis_spec(a.store) && a.run_id.empty()) {
      usage("--store " + a.store +
            " needs --run-id ID, the same on every rank and new for each run (e.g. --run-id "
            "$(date +%s) given to all ranks): runs sharing a Redis server would collide");
    }
  } catch (const std::invalid_argument& e) {
    usage(e.what());
  }
}

}  // namespace hookscope::cli
