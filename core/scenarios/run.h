#pragma once
// Running the scenarios of the table (Note [Scenario registry]): what needs
// the runtime (tensors, DDP, the devices) and so is not in registry.h, whose
// table the GUI reads without linking any of it.

#include <string>

#include "scenarios/ddp_scenarios.h"
#include "scenarios/registry.h"

namespace hookscope::scenarios {

// Checks one run's options together: check_options(), then what needs the
// runtime (--fail-rank is a rank of the world, enough steps for the failures,
// the device and backend are usable, ...). Throws std::invalid_argument
// saying what was wrong and what to do.
void validate(const ScenarioArgs& args, RunMode mode);

// The options of a DDP scenario run.
DdpScenarioOptions to_ddp_options(const ScenarioArgs& args);

// Finds the scenario and runs it (whatever records it is the caller's
// business); returns the summary lines for the user. Throws
// std::invalid_argument for bad options.
std::string run_scenario(const ScenarioArgs& args);

}  // namespace hookscope::scenarios
