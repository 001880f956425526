#pragma once
// The scenario options of the registry (Note [Scenario registry]) as CLI11
// options: `hookscope-cli record`, `launch` and the GUI's `--live` declare
// them through this one function.

#include <CLI/CLI.hpp>

#include <string>

#include "scenarios/registry.h"

namespace hookscope::app {

// Adds every option of scenarios::scenario_options() meant for `use`
// (kUseRecord, kUseLaunch or kUseLive; the hidden child options come with
// kUseRecord), bound to `args`, checked against the option's range or
// choices with the registry's message.
void add_scenario_options(CLI::App* app, scenarios::ScenarioArgs& args, scenarios::OptionUse use);

// A check that accepts the names of the registry's scenarios (ddp_only: those
// `launch` can run); --help lists them with a line each.
CLI::Validator scenario_name_check(bool ddp_only);
// "scenario to run:\n  recovery  DDP on ranks; ...": the help of a scenario argument.
std::string scenario_help(const std::string& lead, bool ddp_only);

}  // namespace hookscope::app
