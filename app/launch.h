#pragma once
// `record`/`launch` options for runs of one process per rank (app/launch.cpp,
// Note [Launch protocol]).

#include "cli.h"

namespace hookscope::cli {

// -o must not be empty; --store and --run-id (and, for record, --rank shown).
void add_store_options(CLI::App* app, ScenarioArgs& args, bool launcher);
// record: --rank/--store/--store-dir/--run-id consistent; throws CliError (usage).
void check_rank_process_args(const ScenarioArgs& args);

}  // namespace hookscope::cli
