// The runs of the scenario table (Note [Scenario registry]): the part of the
// registry that needs the runtime.
#include "scenarios/run.h"

#include <fmt/format.h>

#include <stdexcept>

#include "scenarios/autograd_demo.h"
#include "scenarios/module_hooks.h"
#include "scenarios/module_api.h"
#include "trace/event.h"

namespace hookscope::scenarios {

namespace {

std::string run_autograd_demo_scenario(const ScenarioArgs& a) {
  AutogradDemoOptions demo;
  demo.steps = a.steps > 0 ? a.steps : demo.steps;
  demo.seed = a.seed;
  demo.device = parse_device(a.device);
  const AutogradDemoResult r = run_autograd_demo(demo);
  return fmt::format(
      "autograd-demo: MLP 8-16-16-3 on {}, {} SGD step(s), loss {:.4f} -> {:.4f}\n"
      "  user hooks: {} added, {} removed, {} stale-key removal(s) refused\n",
      a.device, r.losses.size(), r.losses.front(), r.losses.back(), r.hooks_added, r.hooks_removed,
      r.stale_removals_refused);
}

// A single-process scenario whose options are steps, seed and device, and
// whose result has a format_result: module-hooks, module-api.
template <typename Options, typename Run>
std::string run_single(const ScenarioArgs& a, Run run) {
  Options o;
  o.steps = a.steps > 0 ? a.steps : o.steps;
  o.seed = a.seed;
  o.device = parse_device(a.device);
  return format_result(o, run(o));
}

std::string run_ddp(const ScenarioArgs& a) {
  const DdpScenarioOptions o = to_ddp_options(a);
  return format_result(o, run_ddp_scenario(o));
}

}  // namespace

void validate(const ScenarioArgs& a, RunMode mode) {
  check_options(a, mode);
  if (!is_ddp_scenario(a.scenario)) {
    check_device_usable(parse_device(a.device));
    return;
  }
  DdpScenarioOptions o = to_ddp_options(a);
  if (mode == RunMode::kProcesses && o.rank < 0) o.rank = 0;  // validate as one rank of the launch
  validate(o);
}

DdpScenarioOptions to_ddp_options(const ScenarioArgs& a) {
  DdpScenarioOptions o;
  o.name = a.scenario;
  if (a.steps > 0) o.steps = a.steps;
  o.seed = a.seed;
  const auto policy = trace::parse_destroy_policy(a.policy);
  if (!policy) throw std::invalid_argument("--policy: " + check_value(*find_option("--policy"), a.policy));
  o.policy = *policy;
  o.world_size = a.world_size;
  o.recoveries = a.recoveries;
  o.fail_rank = a.fail_rank;
  o.fail_step = a.fail_step;
  const auto fail_mode = trace::parse_failure_mode(a.fail_mode);
  if (!fail_mode) {
    throw std::invalid_argument("--fail-mode: " + check_value(*find_option("--fail-mode"), a.fail_mode));
  }
  o.fail_mode = *fail_mode;
  o.fail_point = a.fail_point;
  o.timeout = std::chrono::milliseconds(a.timeout_ms);
  o.batch_per_rank = a.batch;
  o.device = parse_device(a.device);
  o.backend = a.backend;
  o.rank = a.rank;
  o.store_dir = a.store_dir;
  o.store = a.store;
  o.run_id = a.run_id;
  o.bind = a.bind;
  o.generation = a.generation;
  o.start_step = a.start_step;
  return o;
}

std::string run_scenario(const ScenarioArgs& args) {
  const Scenario* s = find_scenario(args.scenario);
  if (!s) check_options(args, RunMode::kThreads);  // throws, naming the scenarios
  switch (s->runner) {
    case Runner::kAutogradDemo: return run_autograd_demo_scenario(args);
    case Runner::kDdp: return run_ddp(args);
    case Runner::kModuleHooks: return run_single<ModuleHooksOptions>(args, run_module_hooks);
    case Runner::kModuleApi: return run_single<ModuleApiOptions>(args, run_module_api);
  }
  throw std::logic_error("run_scenario: a Runner without its run");
}

}  // namespace hookscope::scenarios
