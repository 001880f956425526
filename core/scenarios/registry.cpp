// The scenario and option tables (Note [Scenario registry]).
#include "scenarios/registry.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <stdexcept>

#include "scenarios/autograd_demo.h"
#include "scenarios/module_api.h"
#include "scenarios/module_hooks.h"
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

std::string run_module_hooks_scenario(const ScenarioArgs& a) {
  ModuleHooksOptions o;
  o.steps = a.steps > 0 ? a.steps : o.steps;
  o.seed = a.seed;
  o.device = parse_device(a.device);
  return format_result(o, run_module_hooks(o));
}

std::string run_module_api_scenario(const ScenarioArgs& a) {
  ModuleApiOptions o;
  o.steps = a.steps > 0 ? a.steps : o.steps;
  o.seed = a.seed;
  o.device = parse_device(a.device);
  return format_result(o, run_module_api(o));
}

std::string run_ddp(const ScenarioArgs& a) {
  const DdpScenarioOptions o = to_ddp_options(a);
  return format_result(o, run_ddp_scenario(o));
}

// The scenarios, in the order help lists them. One entry per scenario.
constexpr Scenario kScenarios[] = {
    {"autograd-demo", "an MLP trained with SGD, user hooks of every kind added, fired and removed",
     false, run_autograd_demo_scenario},
    {"recovery", "DDP on ranks; a rank fails, DDP is destroyed and rebuilt on the same module",
     true, run_ddp},
    {"kept-alive", "DDP rebuilt twice on the same module while the program keeps the old DDPs: "
     "their Reducers linger (PyTorch #21344); odd steps accumulate under no_sync", true, run_ddp},
    {"shared-module", "two DDPs wrap one module; the first is destroyed halfway", true, run_ddp},
    {"unused-parameter", "DDP with a head forward never uses: unused-parameter detection", true,
     run_ddp},
    {"marked-twice", "a parameter used outside forward is marked ready twice", true, run_ddp},
    {"module-hooks", "module hooks of every kind; a full backward hook removed after forward still "
     "fires in that backward (PyTorch #25723)", false, run_module_hooks_scenario},
    {"module-api", "modules with tuple and non-tensor arguments, with_kwargs, prepend, always_call, "
     "a global module hook, a legacy backward hook on the wrong Node, multi-grad hooks", false,
     run_module_api_scenario},
};

std::string join(const std::vector<std::string>& v, std::string_view last_sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += i + 1 == v.size() ? last_sep : std::string_view(", ");
    out += v[i];
  }
  return out;
}

}  // namespace

std::span<const Scenario> all_scenarios() { return kScenarios; }

const Scenario* find_scenario(std::string_view name) {
  for (const Scenario& s : kScenarios) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::vector<std::string> scenario_names(bool ddp_only) {
  std::vector<std::string> names;
  for (const Scenario& s : kScenarios) {
    if (s.ddp || !ddp_only) names.emplace_back(s.name);
  }
  return names;
}

bool is_ddp_scenario(const std::string& name) {
  const Scenario* s = find_scenario(name);
  return s && s->ddp;
}

const std::vector<ScenarioOption>& scenario_options() {
  using A = ScenarioArgs;
  constexpr int64_t kMaxSteps = 1000000;
  static const std::vector<ScenarioOption> options = {
      {"--steps", "training steps (default: the scenario's own)", &A::steps, 1, kMaxSteps},
      {"--seed", "seed for data and weights", &A::seed, 0, 0},
      {"--policy", "how a destroyed Reducer removes its hooks", &A::policy, 0, 0,
       trace::destroy_policy_names()},
      {"--world-size", "ranks (threads in this process)", &A::world_size, 1, kMaxWorldSize, {},
       kUseRecord | kUseLive},
      {"--recoveries", "failures to inject and recover from", &A::recoveries, 1, 100},
      {"--fail-rank", "the rank that fails (less than the world size)", &A::fail_rank, 0,
       kMaxWorldSize - 1},
      {"--fail-step", "the step of the first failure (default: a third of the way in)",
       &A::fail_step, 0, kMaxSteps - 1},
      {"--fail-mode", "throw, kill (one process per rank: launch) or timeout", &A::fail_mode, 0, 0,
       trace::failure_mode_names()},
      {"--fail-point", "where a thrown failure happens", &A::fail_point, 0, 0,
       {"hook", "collective"}},
      {"--timeout-ms", "collective timeout in milliseconds", &A::timeout_ms, 100, 600000},
      {"--batch", "samples per rank per step", &A::batch, 1, 1 << 20},
      {"--device", "cpu or cuda (rank r on GPU r % GPU count)", &A::device, 0, 0, {"cpu", "cuda"}},
      {"--backend",
       "process group: auto (gloo on cpu; nccl on cuda when each rank has a GPU, else gloo "
       "through host memory), gloo or nccl",
       &A::backend, 0, 0, {"auto", "gloo", "nccl"}},
      // Set by `launch` for its children; not for people.
      {"--rank", "", &A::rank, -1, kMaxWorldSize - 1, {}, kUseChild},
      {"--store-dir", "", &A::store_dir, 0, 0, {}, kUseChild},
      {"--generation", "", &A::generation, 0, 1000000, {}, kUseChild},
      {"--start-step", "", &A::start_step, 0, kMaxSteps, {}, kUseChild},
  };
  return options;
}

const ScenarioOption* find_option(std::string_view flag) {
  for (const ScenarioOption& o : scenario_options()) {
    if (o.flag == flag) return &o;
  }
  return nullptr;
}

std::string check_value(const ScenarioOption& option, std::string_view value) {
  if (std::holds_alternative<std::string ScenarioArgs::*>(option.field)) {
    if (option.choices.empty()) return "";
    for (const std::string& c : option.choices) {
      if (c == value) return "";
    }
    return fmt::format("'{}' is not accepted: expected {}", value, join(option.choices, " or "));
  }
  const bool is_unsigned = std::holds_alternative<uint64_t ScenarioArgs::*>(option.field);
  int64_t n = 0;
  uint64_t u = 0;
  const char* end = value.data() + value.size();
  const auto r = is_unsigned ? std::from_chars(value.data(), end, u)
                             : std::from_chars(value.data(), end, n);
  if (r.ec != std::errc() || r.ptr != end) {
    return fmt::format("'{}' is not {} number", value, is_unsigned ? "a non-negative whole" : "a whole");
  }
  if (!is_unsigned && (n < option.min || n > option.max)) {
    return fmt::format("{} is out of range: expected {} to {}", n, option.min, option.max);
  }
  return "";
}

std::string value_text(const ScenarioOption& option, const ScenarioArgs& args) {
  return std::visit(
      [&args](auto member) -> std::string {
        if constexpr (std::is_same_v<decltype(member), std::string ScenarioArgs::*>) {
          return args.*member;
        } else {
          return std::to_string(args.*member);
        }
      },
      option.field);
}

void validate(const ScenarioArgs& a, RunMode mode) {
  const Scenario* s = find_scenario(a.scenario);
  if (!s) {
    throw std::invalid_argument(fmt::format("unknown scenario '{}': expected {}", a.scenario,
                                            join(scenario_names(mode == RunMode::kProcesses), " or ")));
  }
  if (mode == RunMode::kProcesses && !s->ddp) {
    throw std::invalid_argument(fmt::format(
        "{} runs in one process: record it with `hookscope-cli record {}`", s->name, s->name));
  }
  // Every option's own range (a ScenarioArgs filled by code, not parsed, gets here too).
  for (const ScenarioOption& o : scenario_options()) {
    const bool unset_default = (o.flag == "--steps" && a.steps == -1) ||
                               (o.flag == "--fail-step" && a.fail_step == -1);
    if (unset_default) continue;
    const std::string why = check_value(o, value_text(o, a));
    if (!why.empty()) throw std::invalid_argument(fmt::format("{}: {}", o.flag, why));
  }
  if (!s->ddp) {
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

std::vector<std::string> to_arguments(const ScenarioArgs& a) {
  const ScenarioArgs defaults;
  std::vector<std::string> v;
  for (const ScenarioOption& o : scenario_options()) {
    if (value_text(o, a) == value_text(o, defaults)) continue;
    v.emplace_back(o.flag);
    v.push_back(value_text(o, a));
  }
  return v;
}

std::string run_scenario(const ScenarioArgs& args) {
  const Scenario* s = find_scenario(args.scenario);
  if (!s) validate(args, RunMode::kThreads);  // throws, naming the scenarios
  return s->run(args);
}

}  // namespace hookscope::scenarios
