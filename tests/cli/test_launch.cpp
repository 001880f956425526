// `hookscope-cli launch` when runs fail (Note [Launch protocol]): a rank
// killed from outside, a launcher interrupted or killed, a rank that cannot
// run. The launcher runs as a user runs it; its ranks are found through
// /proc.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "testing/test_util.h"
#include "testing/temp_dir.h"
#include "trace/reader.h"

using namespace hookscope;
namespace fs = std::filesystem;

namespace {

const std::string kCli = HOOKSCOPE_CLI_PATH;

// Starts the CLI with `args`, its output to `log`; returns its pid.
pid_t start_cli(const std::vector<std::string>& args, const std::string& log) {
  pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    std::vector<char*> argv;
    std::string cli = kCli;
    argv.push_back(cli.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(cli.c_str(), argv.data());
    std::_Exit(127);
  }
  return pid;
}

// Exit status as a shell reports it (128 + signal when killed); -1 on timeout.
int wait_exit(pid_t pid, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto end = std::chrono::steady_clock::now() + limit;
  int status = 0;
  while (std::chrono::steady_clock::now() < end) {
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(pid, SIGKILL);
  ::waitpid(pid, &status, 0);
  return -1;
}

std::vector<pid_t> children_of(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/task/" + std::to_string(pid) + "/children");
  std::vector<pid_t> out;
  pid_t c;
  while (in >> c) out.push_back(c);
  return out;
}

std::string cmdline(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/cmdline");
  std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (char& ch : s) {
    if (ch == '\0') ch = ' ';
  }
  return s;
}

// The rank processes of a launcher once `n` of them run `record` (exec'd).
std::vector<pid_t> wait_for_ranks(pid_t launcher, size_t n) {
  for (int i = 0; i < 1000; ++i) {
    auto c = children_of(launcher);
    size_t started = 0;
    for (pid_t p : c) started += cmdline(p).find("--store-dir") != std::string::npos;
    if (started >= n) return c;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return {};
}

// A launch of 2 ranks of a run too long to finish (output in DIR/launch.out),
// once both ranks are running; `extra` goes before -o; `stall_s`: the
// launcher's HOOKSCOPE_LAUNCH_STALL_S.
struct LongLaunch {
  pid_t launcher;
  std::vector<pid_t> ranks;
};
LongLaunch start_long_launch(const testing::TempDir& dir, std::vector<std::string> extra = {},
                             const char* stall_s = nullptr) {
  std::vector<std::string> args = {"launch", "--nproc", "2", "recovery", "--steps", "1000000", "--fail-step", "999990"};
  args.insert(args.end(), extra.begin(), extra.end());
  args.push_back("-o");
  args.push_back((dir.path / "run").string());
  LongLaunch l;
  if (stall_s) ::setenv("HOOKSCOPE_LAUNCH_STALL_S", stall_s, 1);
  l.launcher = start_cli(args, (dir.path / "launch.out").string());
  if (stall_s) ::unsetenv("HOOKSCOPE_LAUNCH_STALL_S");
  l.ranks = wait_for_ranks(l.launcher, 2);
  REQUIRE(l.ranks.size() == 2);
  return l;
}

std::string store_dir_of(pid_t rank) {
  std::istringstream in(cmdline(rank));
  std::string word;
  while (in >> word) {
    if (word == "--store-dir" && in >> word) return word;
  }
  return "";
}

// Gone, or a zombie nobody reaped yet (the test's container may have no init).
bool dead(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return true;
  const size_t close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] == 'Z';
}

bool all_dead(const std::vector<pid_t>& pids) {
  for (int i = 0; i < 200; ++i) {
    bool gone = true;
    for (pid_t p : pids) gone = gone && dead(p);
    if (gone) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// " -- FILE..." for a CLI verb: the .hstrace files in `dir`.
std::string traces(const fs::path& dir) {
  std::string all = " --";
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() == ".hstrace") all += " " + e.path().string();
  }
  return all;
}

// The last training step each rank recorded.
std::map<int, int> last_steps(const fs::path& dir) {
  auto r = testing::run_command(kCli + " events --kind train_step --format jsonl" + traces(dir));
  std::map<int, int> last;
  std::istringstream in(r.out);
  std::string line;
  while (std::getline(in, line)) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    int& l = last.try_emplace(j.value("rank", 0), -1).first->second;
    l = std::max(l, j.value("arg", 0));
  }
  return last;
}

}  // namespace

TEST_SUITE("launch") {

TEST_CASE("a rank killed from outside is replaced - the run finishes with exit 0 and says so") {
  testing::TempDir dir("hookscope-launch-external");
  const std::string prefix = (dir.path / "run").string();
  const std::string log = (dir.path / "launch.out").string();
  pid_t launcher = start_cli({"launch", "--nproc", "3", "recovery", "--steps", "600", "--fail-step",
                              "590", "--fail-rank", "0", "-o", prefix},
                             log);
  auto ranks = wait_for_ranks(launcher, 3);
  REQUIRE(ranks.size() == 3);
  std::this_thread::sleep_for(std::chrono::milliseconds(400));  // into training
  REQUIRE(::kill(ranks[1], SIGKILL) == 0);
  const int rc = wait_exit(launcher);
  const std::string out = slurp(log);
  CAPTURE(out);
  CHECK(rc == 0);
  CHECK(out.find("killed by signal 9 (Killed), not injected") != std::string::npos);
  CHECK(out.find("starting a replacement for rank") != std::string::npos);
  // Every rank's last incarnation recorded the last step; the launcher's file has the kill.
  CHECK(last_steps(dir.path) == std::map<int, int>{{0, 599}, {1, 599}, {2, 599}});
  auto failures = testing::run_command(kCli + " events --kind failure" + traces(dir.path));
  CHECK(failures.out.find("not injected; replaced") != std::string::npos);
}

TEST_CASE("SIGTERM to the launcher: its ranks die, the rendezvous directory goes, exit 143") {
  testing::TempDir dir("hookscope-launch-term");
  const auto [launcher, ranks] = start_long_launch(dir);
  const std::string rendezvous = store_dir_of(ranks[0]);
  REQUIRE(rendezvous.rfind("/tmp/hookscope-rendezvous-", 0) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(launcher, SIGTERM);
  const int rc = wait_exit(launcher);
  CAPTURE(slurp(dir.path / "launch.out"));
  CHECK(rc == 128 + SIGTERM);
  CHECK(all_dead(ranks));
  CHECK_FALSE(fs::exists(rendezvous));
  CHECK(slurp(dir.path / "launch.out").find("the run did not finish: launch was interrupted") !=
        std::string::npos);
  auto failures = testing::run_command(kCli + " events --kind failure" + traces(dir.path));
  CAPTURE(failures.out);
  CHECK(failures.out.find("killed by the launcher: launch was interrupted by signal 15") !=
        std::string::npos);
}

TEST_CASE("SIGKILL of the launcher: its ranks die with it - the next launch removes its directory") {
  testing::TempDir dir("hookscope-launch-kill");
  const std::string prefix = (dir.path / "run").string();
  const auto [launcher, ranks] = start_long_launch(dir);
  const std::string rendezvous = store_dir_of(ranks[0]);
  REQUIRE(!rendezvous.empty());
  ::kill(launcher, SIGKILL);
  CHECK(wait_exit(launcher) == 128 + SIGKILL);
  CHECK(all_dead(ranks));
  CHECK(fs::exists(rendezvous));  // nobody could clean up...
  auto next = testing::run_command(kCli + " launch --nproc 2 recovery --steps 6 -o " + prefix + "2");
  CAPTURE(next.out);
  CHECK(next.exit == 0);
  CHECK_FALSE(fs::exists(rendezvous));  // ...until the next launch
}

TEST_CASE("a rank that hangs (SIGSTOP): the launcher's watchdog ends the run, exit 1") {
  testing::TempDir dir("hookscope-launch-stall");
  const auto [launcher, ranks] = start_long_launch(dir, {"--timeout-ms", "1000"}, "4");
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(ranks[1], SIGSTOP);  // alive, silent: its peer waits for it in rendezvous
  const int rc = wait_exit(launcher, std::chrono::seconds(60));
  const std::string out = slurp(dir.path / "launch.out");
  CAPTURE(out);
  CHECK(rc == 1);
  CHECK(out.find("no rank made progress for 4 s (stalled)") != std::string::npos);
  CHECK(all_dead(ranks));
}

TEST_CASE("a rank stopped for a while (SIGSTOP, then SIGCONT) is named in a failure event") {
  testing::TempDir dir("hookscope-launch-stop");
  const auto [launcher, ranks] = start_long_launch(dir, {"--timeout-ms", "1000"});
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ::kill(ranks[1], SIGSTOP);  // Note [Stopped ranks]: its peer times out; only the launcher can name it
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));
  ::kill(ranks[1], SIGCONT);
  ::kill(launcher, SIGTERM);
  CHECK(wait_exit(launcher) == 128 + SIGTERM);
  const std::string out = slurp(dir.path / "launch.out");
  CAPTURE(out);
  const std::string named = "rank 1 (pid " + std::to_string(ranks[1]) + ") is stopped";
  CHECK(out.find(named) != std::string::npos);
  auto failures = testing::run_command(kCli + " events --kind failure " + (dir.path / "run.launch.hstrace").string());
  CAPTURE(failures.out);
  CHECK(failures.out.find(named) != std::string::npos);
  CHECK(all_dead(ranks));
}

TEST_CASE("an output directory nobody can write: launch lists no trace file that does not exist") {
  // /proc takes no new files, even from root (a chmod'ed directory would not stop root, as in CI)
  const std::string prefix = "/proc/hookscope-unwritable-" + std::to_string(::getpid());
  auto r = testing::run_command(kCli + " launch --nproc 2 recovery --steps 4 -o " + prefix);
  CAPTURE(r.out);
  CHECK(r.exit != 0);
  CHECK(r.out.find("no trace file was written; can /proc be written?") != std::string::npos);
  CHECK(r.out.find("  " + prefix + ".rank0.hstrace\n") == std::string::npos);
  CHECK(r.out.find("  " + prefix + ".rank1.hstrace\n") == std::string::npos);
}

TEST_CASE("a rank that cannot run ends the run at once: exit 1, the failure in the traces") {
  testing::TempDir dir("hookscope-launch-error");
  const std::string prefix = (dir.path / "run").string();
  const auto t0 = std::chrono::steady_clock::now();
  // Port 1 on the loopback: connection refused.
  auto r = testing::run_command(kCli + " launch --nproc 2 recovery --store redis://127.0.0.1:1 -o " +
                                prefix);
  CAPTURE(r.out);
  CHECK(r.exit == 1);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(20));
  CHECK(r.out.find("the run did not finish") != std::string::npos);
  CHECK(r.out.find("cannot reach the Redis rendezvous store") != std::string::npos);
  auto failures = testing::run_command(kCli + " events --kind failure" + traces(dir.path));
  CAPTURE(failures.out);
  // Whichever rank fails first ends the run (the other may be killed before it fails).
  CHECK(failures.out.find("(throw): rank ") != std::string::npos);
  CHECK(failures.out.find(" could not run: cannot reach the Redis rendezvous store") !=
        std::string::npos);
  CHECK(failures.out.find("the run did not finish") != std::string::npos);
  // and `check` on the run says so: a failure nobody recovered from is an error, not "clean"
  auto check = testing::run_command(kCli + " check" + traces(dir.path));
  CAPTURE(check.out);
  CHECK(check.exit == 1);
  CHECK(check.out.find("unrecovered_failure") != std::string::npos);
}

TEST_CASE("record --rank: a rank that stops early exits 1 and records why") {
  testing::TempDir dir("hookscope-record-rank");
  const std::string trace = (dir.path / "r1.hstrace").string();
  // A store that refuses connections.
  auto r = testing::run_command(kCli + " record recovery --rank 1 --world-size 2 --store redis://127.0.0.1:1 " +
                                "--run-id t1 -o " + trace);
  CAPTURE(r.out);
  CHECK(r.exit == 1);
  auto t = trace::read_trace(trace);
  bool found = false;
  for (const auto& e : t.events) found = found || e.kind == trace::EventKind::kFailure;
  CHECK(found);
  // Usage errors: exit 2 with what to do.
  for (const std::string bad : {"--rank 2 --world-size 2 --store-dir /tmp/x",
                                "--rank 0 --world-size 2",
                                "--rank 0 --world-size 2 --store redis://127.0.0.1:6379",
                                "--rank 0 --world-size 2 --store redis://127.0.0.1:x --run-id a",
                                "--rank 0 --world-size 2 --store redis://h:1 --run-id 'a b'",
                                "--store redis://127.0.0.1:6379 --run-id a"}) {
    auto u = testing::run_command(kCli + " record recovery " + bad);
    CAPTURE(bad);
    CAPTURE(u.out);
    CHECK(u.exit == 2);
    CHECK(u.out.find("error") != std::string::npos);
  }
  auto u = testing::run_command(kCli + " launch recovery --store /tmp -o " + trace);
  CHECK(u.exit == 2);
}

}  // TEST_SUITE
