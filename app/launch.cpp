// hookscope-cli launch: one process per rank, failures detected and either
// recovered or reported (Note [Launch protocol]).
#include <fmt/format.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include "cli.h"
#include "ddp/process_group.h"
#include "launch.h"
#include "trace/emit.h"
#include "trace/reader.h"
#include "trace/strings.h"
#include "trace/writer.h"

namespace hookscope::cli {

// Note [Launch protocol]
// ~~~~~~~~~~~~~~~~~~~~~~
// `launch` runs each rank as `hookscope-cli record --rank R --store-dir DIR`
// (DIR: /tmp/hookscope-rendezvous-*, also the FileStore unless --store names
// another store). Each rank process is in a process group of its own and
// dies with the launcher (PR_SET_PDEATHSIG); SIGPIPE is ignored in it, so a
// write to a dead peer's socket is a Gloo error, not a silent death. In DIR:
//  * launcher.pid: the launcher's pid. A later launch removes the directories
//    of launchers that are gone (one killed with SIGKILL cannot clean up).
//  * progress.rank<R>: "<group generation> <step>", rewritten by the rank
//    when it forms a group and after each step.
//  * failed.rank<R>.gen<G>: "<step> <group generation>", written by an
//    injected failure before the rank dies or returns.
// When a rank process ends:
//  * exit 0, no failure note: it finished;
//  * a failure note: an injected failure; a replacement joins the next group
//    generation;
//  * killed by a signal, no note (killed from outside, crashed): replaced the
//    same way, joining generation (its last progress generation + 1) — at
//    most kUnplannedReplacements times per run;
//  * exit status != 0 (the rank gave up: recovery limit, store unreachable,
//    an error in training): the run cannot finish; the launcher kills the
//    other ranks at once (no survivor waits for a peer that never comes).
// A replacement resumes at the survivors' step (they tell it when the group
// forms). The launcher also kills everything when no rank makes progress for
// stall_limit, or when it is interrupted (SIGINT, SIGTERM, SIGHUP; exit
// 128 + signal). Every failure it saw is a kFailure event (actor = the rank,
// sub = kill for a signal, throw for an exit status, timeout for a stall) in
// PREFIX.launch.hstrace, written when there was any; its text ends with
// "the run did not finish" for the failures that ended the run. launch exits
// 0 only when every rank's last incarnation finished.

namespace {

constexpr int kUnplannedReplacements = 3;
const char* const kRendezvousPrefix = "hookscope-rendezvous-";

volatile sig_atomic_t g_interrupt = 0;
extern "C" void on_interrupt(int sig) { g_interrupt = sig; }

struct Child {
  int rank = 0;
  int generation = 0;  // group generation it joins first (names its files)
  std::string trace;
  std::string log;
};

std::string trace_path(const std::string& prefix, int rank, int generation) {
  return generation == 0 ? fmt::format("{}.rank{}.hstrace", prefix, rank)
                         : fmt::format("{}.rank{}.gen{}.hstrace", prefix, rank, generation);
}

pid_t spawn(const ScenarioArgs& args, const std::string& log) {
  std::vector<std::string> argv = child_arguments(args);
  argv.insert(argv.begin(), "/proc/self/exe");
  std::fflush(nullptr);  // or the child inherits our unflushed output
  const pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) throw CliError(kExitFindings, "fork failed: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    ::setpgid(0, 0);
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) std::_Exit(127);  // the launcher died before prctl
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::signal(sig, SIG_DFL);
    FILE* f = std::freopen(log.c_str(), "w", stdout);
    if (f) ::dup2(::fileno(stdout), 2);
    std::vector<char*> cargv;
    for (auto& s : argv) cargv.push_back(s.data());
    cargv.push_back(nullptr);
    ::execv("/proc/self/exe", cargv.data());
    std::_Exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

bool read_pair(const std::string& path, int& a, int& b) {
  std::ifstream in(path);
  return static_cast<bool>(in >> a >> b);
}

// The last line of a rank's log that says what went wrong.
std::string last_error(const std::string& log) {
  std::ifstream in(log);
  std::string line, found;
  while (std::getline(in, line)) {
    if (line.find("error") != std::string::npos) found = line;
  }
  while (!found.empty() && found.front() == ' ') found.erase(found.begin());
  return found;
}

// Whether `pid` is stopped (SIGSTOP, a debugger): alive, but it runs nothing.
bool process_stopped(pid_t pid) {
  std::ifstream in(fmt::format("/proc/{}/stat", pid));
  std::string stat;
  if (!std::getline(in, stat)) return false;
  const size_t close = stat.rfind(')');  // the name may hold spaces and ')'
  return close != std::string::npos && close + 2 < stat.size() && (stat[close + 2] == 'T' || stat[close + 2] == 't');
}

const char* signal_name(int sig) {
  const char* d = ::sigdescr_np(sig);
  return d ? d : "unknown signal";
}

// Removes rendezvous directories whose launcher is gone.
void sweep_stale_rendezvous() {
  namespace fs = std::filesystem;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/tmp", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind(kRendezvousPrefix, 0) != 0) continue;
    struct stat st;
    if (::stat(entry.path().c_str(), &st) != 0 || st.st_uid != ::getuid()) continue;
    std::ifstream in(entry.path() / "launcher.pid");
    long pid = 0;
    if (!(in >> pid) || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    fs::remove_all(entry.path(), ec);
  }
}

class Launcher {
 public:
  Launcher(const ScenarioArgs& a, int nproc, std::string store_dir)
      : a_(a), nproc_(nproc), store_dir_(std::move(store_dir)),
        // Ranks write progress at least once per rendezvous (at most 180 s,
        // Note [Rendezvous timeouts]) and per step.
        stall_limit_(std::chrono::seconds(200) + 4 * std::chrono::milliseconds(a.timeout_ms)) {
    // A shorter watchdog (tests, scripts/launch_soak.py).
    if (const char* s = std::getenv("HOOKSCOPE_LAUNCH_STALL_S")) {
      if (std::atoi(s) > 0) stall_limit_ = std::chrono::seconds(std::atoi(s));
    }
  }

  // Runs to the end; returns the reason the run did not finish ("" if it did).
  std::string run() {
    for (int r = 0; r < nproc_; ++r) start(r, 0, 0);
    last_progress_ = Clock::now();
    auto last_scan = Clock::now();
    while (!running_.empty()) {
      int status = 0;
      pid_t pid;
      while ((pid = ::waitpid(-1, &status, WNOHANG)) > 0) ended(pid, status);
      if (running_.empty()) break;
      if (g_interrupt && reason_.empty()) {
        const int sig = g_interrupt;
        abandon(fmt::format("launch was interrupted by signal {} ({})", sig, signal_name(sig)));
      }
      if (Clock::now() - last_scan > std::chrono::seconds(1)) {
        last_scan = Clock::now();
        scan_progress();
        scan_stopped();
        if (reason_.empty() && Clock::now() - last_progress_ > stall_limit_) {
          abandon(fmt::format(
              "no rank made progress for {} s (stalled)",
              std::chrono::duration_cast<std::chrono::seconds>(stall_limit_).count()));
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (reason_.empty()) {
      for (int r = 0; r < nproc_; ++r) {
        if (!finished_[r]) {
          reason_ = fmt::format("rank {} did not finish", r);
          break;
        }
      }
    }
    return reason_;
  }

  const std::vector<Child>& finished() const { return all_; }
  std::vector<trace::Event>& failures() { return failures_; }

 private:
  using Clock = std::chrono::steady_clock;

  void start(int rank, int generation, int start_step) {
    ScenarioArgs c = a_;
    c.rank = rank;
    c.generation = generation;
    c.start_step = start_step;
    c.store_dir = store_dir_;
    c.output = trace_path(a_.output, rank, generation);
    Child ch{rank, generation, c.output, c.output.substr(0, c.output.size() - 8) + ".log"};
    running_[spawn(c, ch.log)] = ch;
    finished_[rank] = false;
  }

  void failure(const Child& ch, trace::FailureMode mode, const std::string& what) {
    trace::Event e = trace::to_event(trace::ev::Failure{
        .mode = mode, .failed_rank = static_cast<uint32_t>(ch.rank), .description = trace::intern(what)});
    e.t_ns = trace::now_ns();
    e.rank = static_cast<uint16_t>(ch.rank);
    failures_.push_back(e);
  }

  void ended(pid_t pid, int status) {
    auto it = running_.find(pid);
    if (it == running_.end()) return;
    const Child ch = it->second;
    running_.erase(it);
    all_.push_back(ch);
    last_progress_ = Clock::now();
    adopt_temporary(ch, pid);
    int step = 0, group_generation = 0;
    const bool injected = read_pair(
        fmt::format("{}/failed.rank{}.gen{}", store_dir_, ch.rank, ch.generation), step,
        group_generation);
    const bool signaled = WIFSIGNALED(status);
    const int code = signaled ? 0 : WEXITSTATUS(status);
    const std::string who = fmt::format("rank {} (pid {})", ch.rank, pid);
    if (!signaled && code == 0 && !injected) {
      finished_[ch.rank] = true;
      int generation = 0, at_step = 0;
      if (read_pair(fmt::format("{}/progress.rank{}", store_dir_, ch.rank), generation, at_step)) {
        finished_generation_[ch.rank] = generation;
      }
      return;
    }
    if (injected) {
      if (signaled) {
        const std::string what = fmt::format("{} was killed by signal {} at step {} (injected)",
                                             who, WTERMSIG(status), step);
        fmt::print("{}\n", what);
        failure(ch, trace::FailureMode::kKill, what);
      }
      if (!reason_.empty()) return;
      fmt::print("starting a replacement for rank {} (generation {}) from step {}\n", ch.rank,
                 group_generation + 1, step);
      start(ch.rank, group_generation + 1, step);
      return;
    }
    if (killed_by_us_.count(pid)) {
      failure(ch, trace::FailureMode::kKill,
              fmt::format("{} was killed by the launcher: {}; the run did not finish", who, reason_));
      return;
    }
    if (signaled) {
      const int sig = WTERMSIG(status);
      std::string what = fmt::format("{} was killed by signal {} ({}), not injected", who, sig,
                                     signal_name(sig));
      if (reason_.empty() && unplanned_ < kUnplannedReplacements && !running_.empty()) {
        ++unplanned_;
        int generation = 0, at_step = 0;
        const bool known = read_pair(fmt::format("{}/progress.rank{}", store_dir_, ch.rank),
                                     generation, at_step);
        const int next = known && generation >= ch.generation ? generation + 1 : ch.generation;
        fmt::print("{}\nstarting a replacement for rank {} (generation {})\n", what, ch.rank, next);
        failure(ch, trace::FailureMode::kKill, what + "; replaced");
        start(ch.rank, next, known ? at_step : 0);
        return;
      }
      what += "; not replaced: the run did not finish";
      fmt::print("{}\n", what);
      failure(ch, trace::FailureMode::kKill, what);
      abandon(fmt::format("{} was killed by signal {}", who, sig));
      return;
    }
    const std::string error = last_error(ch.log);
    const std::string what =
        fmt::format("{} exited with status {}{}; see {}", who, code,
                    error.empty() ? "" : ": " + error, ch.log);
    fmt::print("{}\n", what);
    failure(ch, trace::FailureMode::kThrow, what + "; the run did not finish");
    abandon(fmt::format("{} exited with status {}", who, code));
  }

  // A rank killed before its first block (or before its header was whole)
  // left its trace under a temporary name (Note [Safe trace writes]): keep
  // it under the rank's name when it reads; one cut inside its header holds
  // no event and would only make every verb refuse the set, so it goes.
  void adopt_temporary(const Child& ch, pid_t pid) {
    const std::string tmp = trace::TraceFileWriter::temporary_name(ch.trace, pid);
    std::error_code ec;
    if (!std::filesystem::exists(tmp, ec) || std::filesystem::exists(ch.trace, ec)) return;
    try {
      (void)trace::read_trace(tmp);
    } catch (const std::exception&) {
      std::filesystem::remove(tmp, ec);
      return;
    }
    std::filesystem::rename(tmp, ch.trace, ec);
  }

  void abandon(const std::string& why) {
    if (reason_.empty()) reason_ = why;
    for (auto& [pid, ch] : running_) {
      if (killed_by_us_.insert(pid).second) ::kill(-pid, SIGKILL);
    }
  }

  void scan_progress() {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (int r = 0; r < nproc_; ++r) {
      const std::string path = fmt::format("{}/progress.rank{}", store_dir_, r);
      auto t = fs::last_write_time(path, ec);
      if (ec) continue;
      if (t > last_seen_) {
        last_seen_ = t;
        last_progress_ = Clock::now();
      }
      // A rank forming a group that a finished rank will never join.
      int generation = 0, step = 0;
      if (finished_[r] || !read_pair(path, generation, step)) continue;
      for (const auto& [done, last] : finished_generation_) {
        if (reason_.empty() && finished_[done] && last < generation) {
          abandon(fmt::format("rank {} forms process group generation {} but rank {} finished in "
                              "generation {}",
                              r, generation, done, last));
        }
      }
    }
  }

  // Note [Stopped ranks]
  // ~~~~~~~~~~~~~~~~~~~~~
  // A rank that is stopped (SIGSTOP, a debugger) is alive and silent: its
  // peers time out and re-form, and no trace of theirs can say which rank
  // went quiet. The launcher sees the stop in /proc and records a failure
  // naming the rank, once per stop (seen again after it was resumed).
  // A stop counts when it is seen at two scans in a row (a second apart):
  // LeakSanitizer stops a process's threads with ptrace while it checks for
  // leaks at exit ('t' in /proc), and a launch of the ASan build recorded
  // every rank of a finished run as stopped, failures that did not happen.
  void scan_stopped() {
    for (const auto& [pid, ch] : running_) {
      if (!process_stopped(pid)) {
        stopped_.erase(pid);
        seen_stopped_.erase(pid);
        continue;
      }
      if (seen_stopped_.insert(pid).second) continue;  // the first sight of this stop
      if (!stopped_.insert(pid).second || killed_by_us_.count(pid)) continue;
      const std::string what = fmt::format("rank {} (pid {}) is stopped (SIGSTOP or a debugger) and does not "
                                           "respond; its peers will time out waiting for it", ch.rank, pid);
      fmt::print("{}\n", what);
      failure(ch, trace::FailureMode::kTimeout, what);
    }
  }

  const ScenarioArgs& a_;
  const int nproc_;
  const std::string store_dir_;
  Clock::duration stall_limit_;
  std::map<pid_t, Child> running_;
  std::map<int, bool> finished_;
  std::map<int, int> finished_generation_;  // rank -> its last group generation
  std::set<pid_t> killed_by_us_;
  std::set<pid_t> stopped_;       // Note [Stopped ranks]: reported, stopped when last looked at
  std::set<pid_t> seen_stopped_;  // stopped when last looked at
  std::vector<Child> all_;
  std::vector<trace::Event> failures_;
  std::string reason_;
  int unplanned_ = 0;
  Clock::time_point last_progress_;
  std::filesystem::file_time_type last_seen_{};
};

void write_launch_trace(const std::string& path, const ScenarioArgs& a, int nproc,
                        std::vector<trace::Event>& events) {
  trace::TraceHeader header;
  header.world_size = nproc;
  header.scenario = "launch --nproc " + std::to_string(nproc) + " " + a.scenario + ": failures seen by the launcher";
  trace::TraceFileWriter writer(path, header);
  auto chunk = std::make_unique<trace::Chunk>();
  for (const trace::Event& e : events) {
    if (chunk->count == trace::kChunkEvents) {
      writer.on_chunk(std::move(chunk));
      chunk = std::make_unique<trace::Chunk>();
    }
    chunk->events[chunk->count++] = e;
  }
  writer.on_chunk(std::move(chunk));
  writer.close();
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
    ddp::check_run_id(a.run_id);
    if (!a.store.empty() && !ddp::parse_redis_spec(a.store)) {
      throw std::invalid_argument("launch --store takes redis://HOST:PORT (without it, ranks meet "
                                  "in a directory under /tmp)");
    }
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
  const auto parent = std::filesystem::path(a.output).parent_path();
  if (!parent.empty() && !std::filesystem::is_directory(parent)) {
    throw CliError(kExitUsage, "launch -o " + a.output + ": the directory " + parent.string() +
                                   " does not exist");
  }
  if (!a.store.empty() && a.run_id.empty()) {
    a.run_id = fmt::format("launch-{}-{}", ::getpid(), trace::now_ns());
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Interrupts are caught from here on, before anything exists that an
  // interrupt could leave behind (the rendezvous directory, a rank); the
  // launcher's loop sees one that came early as soon as it starts.
  struct sigaction sa = {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  struct sigaction old[3];
  const int signals[3] = {SIGINT, SIGTERM, SIGHUP};
  g_interrupt = 0;
  for (int i = 0; i < 3; ++i) ::sigaction(signals[i], &sa, &old[i]);
  sweep_stale_rendezvous();
  std::string tmpl = std::string("/tmp/") + kRendezvousPrefix + "XXXXXX";
  if (!::mkdtemp(tmpl.data())) {
    throw CliError(kExitUsage, "cannot create a rendezvous directory in /tmp: " +
                                   std::string(std::strerror(errno)));
  }
  const std::string store_dir = tmpl;
  std::ofstream(store_dir + "/launcher.pid") << ::getpid() << "\n";

  Launcher launcher(a, nproc, store_dir);
  std::string reason;
  try {
    reason = launcher.run();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(store_dir, ec);
    throw;
  }
  for (int i = 0; i < 3; ++i) ::sigaction(signals[i], &old[i], nullptr);
  std::error_code ec;
  std::filesystem::remove_all(store_dir, ec);

  std::vector<Child> finished = launcher.finished();
  std::sort(finished.begin(), finished.end(), [](const Child& x, const Child& y) {
    return x.rank != y.rank ? x.rank < y.rank : x.generation < y.generation;
  });
  fmt::print("\ntraces:\n");
  for (const Child& ch : finished) {
    // only files that are there (a read-only output directory holds none)
    if (std::error_code missing; std::filesystem::is_regular_file(ch.trace, missing)) {
      fmt::print("  {}\n", ch.trace);
    } else {
      const std::string dir = std::filesystem::path(ch.trace).parent_path().string();
      fmt::print("  rank {} (generation {}): no trace file was written; can {} be written?\n", ch.rank,
                 ch.generation, dir.empty() ? "." : dir);
    }
    std::ifstream log(ch.log);
    std::string line;
    while (std::getline(log, line)) {
      if (line.rfind("  rank", 0) == 0 || line.find("error") != std::string::npos) {
        fmt::print("    {}\n", line);
      }
    }
  }
  if (!launcher.failures().empty()) {
    const std::string path = a.output + ".launch.hstrace";
    try {
      write_launch_trace(path, a, nproc, launcher.failures());
      fmt::print("  {} (failures seen by the launcher)\n", path);
    } catch (const std::exception& e) {
      fmt::print(stderr, "hookscope-cli: cannot write {}: {}\n", path, e.what());
    }
  }
  std::fflush(stdout);
  if (g_interrupt) throw CliError(128 + g_interrupt, "the run did not finish: " + reason);
  if (!reason.empty()) throw CliError(kExitFindings, "the run did not finish: " + reason);
  return kExitOk;
}

}  // namespace hookscope::cli
