// The scenario and option tables (Note [Scenario registry]).
#include "scenarios/registry.h"

#include <fmt/format.h>

#include <charconv>
#include <limits>
#include <stdexcept>

#include "trace/event.h"

namespace hookscope::scenarios {

namespace {

// The scenarios, in the order help lists them. One entry per scenario.
constexpr Scenario kScenarios[] = {
    {"autograd-demo", "an MLP trained with SGD, user hooks of every kind added, fired and removed",
     Runner::kAutogradDemo},
    {"recovery", "DDP on ranks; a rank fails, DDP is destroyed and rebuilt on the same module",
     Runner::kDdp},
    {"kept-alive", "DDP rebuilt twice on the same module while the program keeps the old DDPs: "
     "their Reducers linger (PyTorch #21344); odd steps accumulate under no_sync", Runner::kDdp},
    {"shared-module", "two DDPs wrap one module; the first is destroyed halfway", Runner::kDdp},
    {"unused-parameter", "DDP with a head forward never uses: unused-parameter detection",
     Runner::kDdp},
    {"marked-twice", "a parameter used outside forward is marked ready twice", Runner::kDdp},
    {"module-hooks", "module hooks of every kind; a full backward hook removed after forward still "
     "fires in that backward (PyTorch #25723)", Runner::kModuleHooks},
    {"module-api", "modules with tuple and non-tensor arguments, with_kwargs, prepend, always_call, "
     "a global module hook, a legacy backward hook on the wrong Node, multi-grad hooks",
     Runner::kModuleApi},
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
    if (s.ddp() || !ddp_only) names.emplace_back(s.name);
  }
  return names;
}

bool is_ddp_scenario(const std::string& name) {
  const Scenario* s = find_scenario(name);
  return s && s->ddp();
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

void check_options(const ScenarioArgs& a, RunMode mode) {
  const Scenario* s = find_scenario(a.scenario);
  if (!s) {
    throw std::invalid_argument(fmt::format("unknown scenario '{}': expected {}", a.scenario,
                                            join(scenario_names(mode == RunMode::kProcesses), " or ")));
  }
  if (mode == RunMode::kProcesses && !s->ddp()) {
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

}  // namespace hookscope::scenarios
