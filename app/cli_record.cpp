// hookscope-cli record / launch: run a built-in scenario and record it.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "analysis/summary.h"
#include "cli.h"
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
      file_->finish();
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
  auto result = scenarios::run_ddp_scenario(o);
  rec.finish();
  fmt::print("{}", scenarios::format_result(o, result));
  fmt::print("{}", rec.summary());
  return kExitOk;
}

// ---- launch: one process per rank ------------------------------------------------

namespace {

struct Child {
  int rank = 0;
  int generation = 0;
  std::string trace;
  std::string log;
};

pid_t spawn(const ScenarioArgs& args, const std::string& log) {
  std::vector<std::string> argv = child_arguments(args);
  argv.insert(argv.begin(), "/proc/self/exe");
  std::fflush(nullptr);  // or the child inherits our unflushed output
  pid_t pid = ::fork();
  if (pid < 0) throw CliError(kExitFindings, "fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) ::dup2(::fileno(stdout), 2);
    std::vector<char*> cargv;
    for (auto& s : argv) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    ::execv("/proc/self/exe", cargv.data());
    std::_Exit(127);
  }
  return pid;
}

std::string trace_path(const std::string& prefix, int rank, int generation) {
  return generation == 0 ? fmt::format("{}.rank{}.hstrace", prefix, rank)
                         : fmt::format("{}.rank{}.gen{}.hstrace", prefix, rank, generation);
}

}  // namespace

int run_launch(const ScenarioArgs& base, int nproc) {
  if (base.output.empty()) throw CliError(kExitUsage, "launch needs -o PREFIX for the per-rank traces");
  ScenarioArgs a = base;
  a.world_size = nproc;
  try {
    auto o = to_ddp_options(a);
    o.rank = 0;  // validate as a process-mode run
    scenarios::validate(o);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
  char tmpl[] = "/tmp/hookscope-rendezvous-XXXXXX";
  if (!::mkdtemp(tmpl)) throw CliError(kExitFindings, "cannot create a rendezvous directory in /tmp");
  const std::string store_dir = tmpl;

  std::map<pid_t, Child> running;
  std::vector<Child> finished;
  auto start = [&](int rank, int generation, int start_step) {
    ScenarioArgs c = a;
    c.rank = rank;
    c.generation = generation;
    c.start_step = start_step;
    c.store_dir = store_dir;
    c.output = trace_path(a.output, rank, generation);
    Child ch{rank, generation, c.output, c.output.substr(0, c.output.size() - 8) + ".log"};
    running[spawn(c, ch.log)] = ch;
  };
  for (int r = 0; r < nproc; ++r) start(r, 0, 0);

  int failed_runs = 0;
  while (!running.empty()) {
    int status = 0;
    pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) break;
    auto it = running.find(pid);
    if (it == running.end()) continue;
    Child ch = it->second;
    running.erase(it);
    const std::string note =
        fmt::format("{}/failed.rank{}.gen{}", store_dir, ch.rank, ch.generation);
    std::ifstream in(note);
    int step = 0, group_generation = 0;
    const bool injected = static_cast<bool>(in >> step >> group_generation);
    if (WIFSIGNALED(status)) {
      fmt::print("rank {} (pid {}) was killed by signal {}{}\n", ch.rank, pid, WTERMSIG(status),
                 injected ? fmt::format(" at step {} (injected)", step) : "");
    } else if (WEXITSTATUS(status) != 0 && !injected) {
      fmt::print("rank {} (pid {}) exited with status {}; see {}\n", ch.rank, pid,
                 WEXITSTATUS(status), ch.log);
      ++failed_runs;
    }
    finished.push_back(ch);
    if (injected) {
      fmt::print("starting a replacement for rank {} (generation {}) from step {}\n", ch.rank,
                 group_generation + 1, step);
      start(ch.rank, group_generation + 1, step);
    }
  }
  std::error_code ec;
  std::filesystem::remove_all(store_dir, ec);

  std::sort(finished.begin(), finished.end(), [](const Child& x, const Child& y) {
    return x.rank != y.rank ? x.rank < y.rank : x.generation < y.generation;
  });
  fmt::print("\ntraces:\n");
  for (const Child& ch : finished) {
    fmt::print("  {}\n", ch.trace);
    std::ifstream log(ch.log);
    std::string line;
    while (std::getline(log, line)) {
      if (line.rfind("  rank", 0) == 0 || line.find("error") != std::string::npos) {
        fmt::print("    {}\n", line);
      }
    }
  }
  return failed_runs ? kExitFindings : kExitOk;
}

}  // namespace hookscope::cli
