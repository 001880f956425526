// --live through a hookscope-cli child (Note [The GUI runs no scenario]).
#include "live_run.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "app_cli.h"
#include "trace/reader.h"

namespace hookscope::app {

namespace fs = std::filesystem;

namespace {

// What the child printed, without the line naming the temporary file.
std::string child_output(const fs::path& path) {
  std::ifstream in(path);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("wrote ", 0) == 0) continue;
    out += line + "\n";
  }
  return out;
}

}  // namespace

void LiveRun::start(const scenarios::ScenarioArgs& scenario, std::string title, std::string cli) {
  stop();
  static std::atomic<int> runs{0};
  scenario_ = scenario.scenario;
  title_ = std::move(title);
  started_ = true;
  finished_ = false;
  read_size_ = 0;
  rebuilt_ = {};
  result_.clear();
  std::error_code ec;
  dir_ = (fs::temp_directory_path(ec) / fmt::format("hookscope-live-{}-{}", ::getpid(), runs++)).string();
  fs::create_directories(dir_, ec);
  if (cli.empty()) cli = cli_beside_self();
  std::vector<std::string> argv = {cli, "record", scenario.scenario};
  for (std::string& arg : scenarios::to_arguments(scenario)) argv.push_back(std::move(arg));
  argv.insert(argv.end(), {"-o", dir_ + "/live.hstrace"});
  pid_ = ec || ::access(cli.c_str(), X_OK) != 0 ? -1 : start_child(argv, dir_ + "/output.txt");
  if (pid_ < 0) {
    result_ = fmt::format("{} cannot run: --live records the scenario with the hookscope-cli installed "
                          "beside hookscope; record it with `hookscope-cli record {}` and open the file\n",
                          cli, scenario.scenario);
  }
}

void LiveRun::stop() {
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    child_exit(pid_, true);
    pid_ = -1;
  }
  if (!dir_.empty()) {
    std::error_code ec;
    fs::remove_all(dir_, ec);
    dir_.clear();
  }
  started_ = false;
}

void LiveRun::end(int exit_code) {
  pid_ = -1;
  result_ = child_output(fs::path(dir_) / "output.txt");
  if (exit_code != 0 && result_.empty()) result_ = fmt::format("the recording stopped (exit code {})\n", exit_code);
}

std::optional<LiveRun::Update> LiveRun::poll(bool wait) {
  if (!started_ || finished_) return std::nullopt;
  bool ended = pid_ < 0;
  int exit_code = pid_ < 0 ? 127 : 0;
  if (pid_ > 0) {
    if (const auto rc = child_exit(pid_, wait)) {
      ended = true;
      exit_code = *rc;
      end(exit_code);
    }
  }
  // Reading and rebuilding cost about the run's size: a few times a second.
  const auto now = std::chrono::steady_clock::now();
  if (!ended && now - rebuilt_ < std::chrono::milliseconds(400)) return std::nullopt;
  const fs::path path = fs::path(dir_) / "live.hstrace";
  std::error_code ec;
  const uint64_t size = fs::file_size(path, ec);
  if (!ended && (ec || size == read_size_)) return std::nullopt;
  rebuilt_ = now;
  read_size_ = ec ? 0 : size;
  if (ended) finished_ = true;
  Update update;
  if (ended && exit_code != 0) update.error = fmt::format("the live scenario {} failed: {}", scenario_, result_);
  if (ended && ec) return update;  // nothing was written
  try {
    trace::TraceData data = trace::read_trace(path.string());
    // A file still being written ends mid-chunk; the end is no damage. Its
    // header alone is no model yet (the view would follow an empty run).
    if (!ended && data.events.empty()) return std::nullopt;
    if (!ended) data.truncation.clear();
    data.source = title_;
    data.header.scenario = scenario_;
    update.model = std::make_shared<const analysis::Model>(std::move(data));
  } catch (const std::exception& e) {
    if (!ended) return std::nullopt;  // the header is not written yet
    if (update.error.empty()) update.error = fmt::format("the live trace cannot be analysed: {}\n", e.what());
  }
  return update;
}

}  // namespace hookscope::app
