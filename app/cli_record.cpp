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
#include "scenario_options.h"
#include "trace/emitters_ddp.h"
#include "trace/strings.h"
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
  // the rendezvous store of ranks that do not meet in a directory (add_store_options)
  for (auto [flag, value] : {std::pair{"--store", &a.store}, {"--run-id", &a.run_id}, {"--bind", &a.bind}}) {
    if (value->empty()) continue;
    v.push_back(flag);
    v.push_back(*value);
  }
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
  if (!scenarios::is_ddp_scenario(a.scenario)) return fmt::format("{} --seed {}{}", a.scenario, a.seed, device);
  return fmt::format("{} --policy {} --world-size {} --recoveries {} --fail-rank {} --fail-mode {} --seed {}{}{}",
                     a.scenario, a.policy, a.world_size, a.recoveries, a.fail_rank, a.fail_mode,
                     a.seed, device, a.backend == "auto" ? "" : " --backend " + a.backend);
}

}  // namespace

int run_record(const ScenarioArgs& a, bool check_only) {
  // A peer's closed socket is an error Gloo reports, never a silent death
  // (Note [Launch protocol]).
  ::signal(SIGPIPE, SIG_IGN);
  check_rank_process_args(a);
  try {
    scenarios::validate(a, a.rank >= 0 ? scenarios::RunMode::kProcesses : scenarios::RunMode::kThreads);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
  if (check_only) return kExitOk;
  Recording rec(a, describe(a));
  if (a.rank < 0 || !scenarios::is_ddp_scenario(a.scenario)) {
    const std::string result = scenarios::run_scenario(a);
    rec.finish();
    fmt::print("{}", result);
    fmt::print("{}", rec.summary());
    return kExitOk;
  }
  // One rank of a multi-process run: a rank that stops before the end
  // records why (kFailure) and exits 1, so that its launcher (or the person
  // running it) knows the run did not finish.
  const scenarios::DdpScenarioOptions o = scenarios::to_ddp_options(a);
  trace::set_thread_rank(static_cast<uint16_t>(o.rank));
  auto fail = [&](const std::string& what) {
    trace::emit_failure(trace::FailureMode::kThrow, static_cast<uint32_t>(o.rank), trace::intern(what));
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
