// hookscope-cli record / launch: run a built-in scenario and record it.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "analysis/summary.h"
#include "cli.h"
#include "launch.h"
#include "trace/emit.h"
#include "trace/strings.h"
#include "ddp/reducer.h"
#include "scenarios/autograd_demo.h"
#include "trace/recorder.h"
#include "trace/writer.h"

namespace hookscope::cli {

void add_scenario_options(CLI::App* app, ScenarioArgs& a, bool launcher) {
  app->add_option("scenario", a.scenario, "scenario to run")
      ->required()
      ->check(CLI::IsMember(launcher ? std::vector<std::string>{"recovery", "shared-module",
                                                                "unused-parameter", "marked-twice"}
                                     : std::vector<std::string>{"autograd-demo", "recovery",
                                                                "shared-module", "unused-parameter",
                                                                "marked-twice"}));
  app->add_option("-o,--output", a.output,
                  launcher ? "trace prefix: writes PREFIX.rank<r>.hstrace per rank"
                           : "write the trace to this .hstrace file");
  app->add_option("--steps", a.steps, "training steps")->check(CLI::Range(1, 1000000));
  app->add_option("--seed", a.seed, "seed for data and weights");
  app->add_option("--policy", a.policy, "how a destroyed Reducer removes its hooks")
      ->check(CLI::IsMember({"by-key", "none", "by-type"}));
  if (!launcher) {
    app->add_option("--world-size", a.world_size, "ranks (threads in this process)")
        ->check(CLI::Range(1, 64));
  }
  app->add_option("--recoveries", a.recoveries, "failures to inject and recover from")
      ->check(CLI::Range(1, 100));
  app->add_option("--fail-rank", a.fail_rank, "the rank that fails");
  app->add_option("--fail-step", a.fail_step, "the step of the first failure");
  app->add_option("--fail-mode", a.fail_mode, "throw, kill (processes only) or timeout")
      ->check(CLI::IsMember({"throw", "kill", "timeout"}));
  app->add_option("--fail-point", a.fail_point, "where a thrown failure happens")
      ->check(CLI::IsMember({"hook", "collective"}));
  app->add_option("--timeout-ms", a.timeout_ms, "collective timeout in milliseconds")
      ->check(CLI::Range(100, 600000));
  app->add_option("--batch", a.batch, "samples per rank per step")->check(CLI::Range(1, 1 << 20));
  app->add_option("--device", a.device, "cpu or cuda (rank r on GPU r % GPU count)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app->add_option("--backend", a.backend,
                  "process group: auto (gloo on cpu; nccl on cuda when each rank has a GPU, "
                  "else gloo through host memory), gloo or nccl")
      ->check(CLI::IsMember({"auto", "gloo", "nccl"}));
  if (!launcher) {
    // Set by `launch` for its children; not for people.
    app->add_option("--rank", a.rank)->group("");
    app->add_option("--store-dir", a.store_dir)->group("");
    app->add_option("--generation", a.generation)->group("");
    app->add_option("--start-step", a.start_step)->group("");
  }
}

std::vector<std::string> child_arguments(const ScenarioArgs& a) {
  std::vector<std::string> v = {"record", a.scenario};
  auto add = [&v](const char* flag, const std::string& value) {
    v.push_back(flag);
    v.push_back(value);
  };
  if (a.steps > 0) add("--steps", std::to_string(a.steps));
  add("--seed", std::to_string(a.seed));
  add("--policy", a.policy);
  add("--world-size", std::to_string(a.world_size));
  add("--recoveries", std::to_string(a.recoveries));
  add("--fail-rank", std::to_string(a.fail_rank));
  add("--fail-step", std::to_string(a.fail_step));
  add("--fail-mode", a.fail_mode);
  add("--fail-point", a.fail_point);
  add("--timeout-ms", std::to_string(a.timeout_ms));
  add("--batch", std::to_string(a.batch));
  add("--device", a.device);
  add("--backend", a.backend);
  add("--rank", std::to_string(a.rank));
  add("--store-dir", a.store_dir);
  add("--generation", std::to_string(a.generation));
  add("--start-step", std::to_string(a.start_step));
  if (!a.store.empty()) add("--store", a.store);
  if (!a.run_id.empty()) add("--run-id", a.run_id);
  if (!a.bind.empty()) add("--bind", a.bind);
  if (!a.output.empty()) add("-o", a.output);
  return v;
}

scenarios::DdpScenarioOptions to_ddp_options(const ScenarioArgs& a) {
  scenarios::DdpScenarioOptions o;
  o.name = a.scenario;
  if (a.steps > 0) o.steps = a.steps;
  o.seed = a.seed;
  o.policy = ddp::parse_policy(a.policy);
  o.world_size = a.world_size;
  o.recoveries = a.recoveries;
  o.fail_rank = a.fail_rank;
  o.fail_step = a.fail_step;
  o.fail_mode = a.fail_mode == "kill"      ? trace::FailureMode::kKill
                : a.fail_mode == "timeout" ? trace::FailureMode::kTimeout
                                           : trace::FailureMode::kThrow;
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

namespace {

// Records into a file when -o was given, else into memory; either way the
// events are summarised at the end.
class Recording {
 public:
  Recording(const ScenarioArgs& a, const std::string& description) {
    if (a.output.empty()) {
      memory_.emplace();
      memory_->start();
      return;
    }
    trace::TraceHeader header;
    header.rank = a.rank;
    header.world_size = a.scenario == "autograd-demo" ? 1 : a.world_size;
    header.scenario = description;
    try {
      file_.emplace(a.output, header);
    } catch (const std::exception& e) {
      throw CliError(kExitUsage, e.what());
    }
    file_->start();
  }
  void finish() {
    if (memory_) {
      memory_->finish();
      events_ = memory_->events();
    } else {
      try {
        file_->finish();
      } catch (const std::exception& e) {  // disk full, file-size limit: an I/O error
        throw CliError(kExitUsage, e.what());
      }
    }
  }
  // The summary: from memory, or (for a file) the writer's counts.
  std::string summary() {
    if (memory_) return analysis::format_summary(analysis::summarize(events_));
    auto s = file_->writer().stats();
    return fmt::format("wrote {}: {} events, {} bytes ({:.1f} bytes/event)\n",
                       file_->writer().path(), s.events_written, s.bytes_written,
                       s.events_written ? double(s.bytes_written) / double(s.events_written) : 0.0);
  }

 private:
  std::optional<trace::MemoryRecorder> memory_;
  std::optional<trace::FileRecorder> file_;
  std::vector<trace::Event> events_;
};

std::string describe(const ScenarioArgs& a) {
  const std::string device = a.device == "cpu" ? "" : " --device " + a.device;
  if (a.scenario == "autograd-demo") return fmt::format("autograd-demo --seed {}{}", a.seed, device);
  return fmt::format("{} --policy {} --world-size {} --recoveries {} --fail-rank {} --fail-mode {} --seed {}{}{}",
                     a.scenario, a.policy, a.world_size, a.recoveries, a.fail_rank, a.fail_mode,
                     a.seed, device, a.backend == "auto" ? "" : " --backend " + a.backend);
}

}  // namespace

int run_record(const ScenarioArgs& a) {
  // A peer's closed socket is an error Gloo reports, never a silent death
  // (Note [Launch protocol]).
  ::signal(SIGPIPE, SIG_IGN);
  check_rank_process_args(a);
  if (a.scenario == "autograd-demo") {
    scenarios::AutogradDemoOptions demo;
    demo.steps = a.steps > 0 ? a.steps : 5;
    demo.seed = a.seed;
    demo.device = parse_device(a.device);
    try {
      check_device_usable(demo.device);
    } catch (const std::invalid_argument& e) {
      throw CliError(kExitUsage, e.what());
    }
    Recording rec(a, describe(a));
    auto result = scenarios::run_autograd_demo(demo);
    rec.finish();
    fmt::print("autograd-demo: MLP 8-16-16-3 on {}, {} SGD step(s), loss {:.4f} -> {:.4f}\n",
               a.device, result.losses.size(), result.losses.front(), result.losses.back());
    fmt::print("  user hooks: {} added, {} removed, {} stale-key removal(s) refused\n",
               result.hooks_added, result.hooks_removed, result.stale_removals_refused);
    fmt::print("{}", rec.summary());
    return kExitOk;
  }
  scenarios::DdpScenarioOptions o = to_ddp_options(a);
  try {
    scenarios::validate(o);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
  Recording rec(a, describe(a));
  if (o.rank < 0) {
    auto result = scenarios::run_ddp_scenario(o);
    rec.finish();
    fmt::print("{}", scenarios::format_result(o, result));
    fmt::print("{}", rec.summary());
    return kExitOk;
  }
  // One rank of a multi-process run: a rank that stops before the end
  // records why (kFailure) and exits 1, so that its launcher (or the person
  // running it) knows the run did not finish.
  trace::set_thread_rank(static_cast<uint16_t>(o.rank));
  auto fail = [&](const std::string& what) {
    trace::emit(trace::EventKind::kFailure, static_cast<uint8_t>(trace::FailureMode::kThrow), 0,
                0, trace::intern(what), 0, static_cast<uint32_t>(o.rank));
  };
  scenarios::DdpScenarioResult result;
  try {
    result = scenarios::run_ddp_scenario(o);
  } catch (const std::exception& e) {
    const std::string what = fmt::format("rank {} could not run: {}", o.rank, e.what());
    fail(what);
    rec.finish();
    throw CliError(kExitFindings, what);
  }
  std::string error;
  for (const auto& r : result.ranks) {
    if (!r.error.empty() && error.empty()) error = fmt::format("rank {} stopped: {}", r.rank, r.error);
  }
  if (!error.empty()) fail(error);
  rec.finish();
  fmt::print("{}", scenarios::format_result(o, result));
  fmt::print("{}", rec.summary());
  if (!error.empty()) throw CliError(kExitFindings, error);
  return kExitOk;
}

}  // namespace hookscope::cli
