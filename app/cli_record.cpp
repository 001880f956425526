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
#include "scenario_options.h"
#include "trace/recorder.h"
#include "trace/writer.h"

namespace hookscope::cli {

void add_scenario_options(CLI::App* app, ScenarioArgs& a, bool launcher) {
  app->add_option("scenario", a.scenario, app::scenario_help("scenario to run", launcher))
      ->required()
      ->check(app::scenario_name_check(launcher));
  app->add_option("-o,--output", a.output,
                  launcher ? "trace prefix: writes PREFIX.rank<r>.hstrace per rank"
                           : "write the trace to this .hstrace file");
  app::add_scenario_options(app, a, launcher ? scenarios::kUseLaunch : scenarios::kUseRecord);
}

std::vector<std::string> child_arguments(const ScenarioArgs& a) {
  std::vector<std::string> v = {"record", a.scenario};
  for (std::string& arg : scenarios::to_arguments(a)) v.push_back(std::move(arg));
  if (!a.output.empty()) {
    v.push_back("-o");
    v.push_back(a.output);
  }
  return v;
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
    header.world_size = scenarios::is_ddp_scenario(a.scenario) ? a.world_size : 1;
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
  if (!scenarios::is_ddp_scenario(a.scenario)) return fmt::format("{} --seed {}{}", a.scenario, a.seed, device);
  return fmt::format("{} --policy {} --world-size {} --recoveries {} --fail-rank {} --fail-mode {} --seed {}{}{}",
                     a.scenario, a.policy, a.world_size, a.recoveries, a.fail_rank, a.fail_mode,
                     a.seed, device, a.backend == "auto" ? "" : " --backend " + a.backend);
}

}  // namespace

int run_record(const ScenarioArgs& a) {
  try {
    scenarios::validate(a, a.rank >= 0 ? scenarios::RunMode::kProcesses : scenarios::RunMode::kThreads);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
  Recording rec(a, describe(a));
  const std::string result = scenarios::run_scenario(a);
  rec.finish();
  fmt::print("{}", result);
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
    scenarios::validate(a, scenarios::RunMode::kProcesses);
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
