// A process killed mid-recording (a rank of a training job) keeps its events:
// every thread's, up to about 100 ms before the kill, including a thread that
// stopped emitting, blocked in a collective (Note [Live chunks reach the
// file]); its trace says it ended without its footer.
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "testing/spawn_self.h"
#include "testing/temp_dir.h"
#include "trace/emit.h"
#include "trace/reader.h"
#include "trace/writer.h"

using namespace hookscope;
namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// The "blocked" thread: node = 1..n, then it waits (as in an allreduce that
// never returns) until released, and emits nothing more.
constexpr uint64_t kBlockedEvents = 500;
constexpr uint32_t kBlockedMark = 1;  // owner of its events
constexpr uint32_t kBusyMark = 2;     // owner of the busy thread's events

struct Gate {
  std::mutex m;
  std::condition_variable cv;
  bool open = false;
  void release() {
    std::lock_guard<std::mutex> lock(m);
    open = true;
    cv.notify_all();
  }
  void wait() {
    std::unique_lock<std::mutex> lock(m);
    cv.wait(lock, [&] { return open; });
  }
};

void emit_blocked_events() {
  for (uint64_t i = 1; i <= kBlockedEvents; ++i) {
    trace::emit(trace::EventKind::kHookFired, 0, i, i, 0, kBlockedMark);
  }
}

// The busy thread: bursts of 100 events every ms (a chunk fills every ~40
// ms, so live copies are taken mid-chunk) with node = 1, 2, ... until `stop`.
uint64_t emit_busy_until(const std::atomic<bool>& stop) {
  uint64_t n = 0;
  while (!stop.load()) {
    for (int k = 0; k < 100; ++k) {
      ++n;
      trace::emit(trace::EventKind::kHookFired, 0, n, n, 0, kBusyMark);
    }
    std::this_thread::sleep_for(milliseconds(1));
  }
  return n;
}

struct PerThread {
  std::vector<uint64_t> nodes;  // in file order
  uint64_t last_t = 0;
};

std::map<uint32_t, PerThread> by_owner(const trace::TraceData& t) {
  std::map<uint32_t, PerThread> out;
  for (const trace::Event& e : t.events) {
    if (e.kind != trace::EventKind::kHookFired) continue;
    PerThread& p = out[e.owner];
    p.nodes.push_back(e.node);
    p.last_t = std::max(p.last_t, e.t_ns);
  }
  return out;
}

// 1..n once each, in order: no event lost, none twice (a live copy and the
// chunk it was taken from), a thread's order kept.
bool exactly_one_to(const std::vector<uint64_t>& nodes, uint64_t n) {
  if (nodes.size() != n) return false;
  for (uint64_t i = 0; i < n; ++i) {
    if (nodes[i] != i + 1) return false;
  }
  return true;
}

// The child's part (spawn_self): record from a blocked thread and a busy
// one until killed; `path`.ready tells the parent the blocked thread blocked.
[[noreturn]] void record_until_killed(const std::string& path) {
  ::alarm(30);  // never outlives a failed parent
  trace::FileRecorder rec(path);
  rec.start();
  Gate never;
  std::thread blocked([&] {
    emit_blocked_events();
    never.wait();
  });
  std::atomic<bool> stop{false};
  std::thread busy([&] { emit_busy_until(stop); });
  // Ready once under its name: an old trace is replaced only after the first
  // block is on disk (fdatasync, Note [Safe trace writes]), which a loaded
  // disk may take long to do; a kill before leaves the old trace.
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!rec.writer().published() && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(5));
  std::ofstream(path + ".ready") << "ready";
  busy.join();  // never: the parent kills this process
  std::_Exit(3);
}

constexpr const char* kChildTest = "a process killed mid-recording keeps each thread's events*";
constexpr const char* kChildEnv = "HOOKSCOPE_KILLED_RECORDING_CHILD";

// Starts a recording child, lets it run `run_for` after its blocked thread
// blocked, SIGKILLs it; returns the time of the kill (trace::now_ns's clock).
uint64_t record_and_kill(const std::string& path, milliseconds run_for) {
  const pid_t pid = testing::spawn_self(kChildTest, std::string(kChildEnv) + "=" + path);
  REQUIRE(pid > 0);
  const auto deadline = Clock::now() + std::chrono::seconds(20);
  while (!fs::exists(path + ".ready") && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(5));
  }
  const bool ready = fs::exists(path + ".ready");
  fs::remove(path + ".ready");
  std::this_thread::sleep_for(run_for);
  const uint64_t killed_at = trace::now_ns();
  ::kill(pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
  REQUIRE(ready);
  REQUIRE(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGKILL);
  return killed_at;
}

// What a killed recording's file must hold: all of the blocked thread's
// events, the busy thread's up to about 100 ms before the kill (a loaded
// machine may delay the writer thread: 300 ms of slack), and a message.
void check_killed_trace(const std::string& path, uint64_t killed_at) {
  REQUIRE(fs::exists(path));
  const trace::TraceData t = trace::read_trace(path);
  auto threads = by_owner(t);
  CHECK(exactly_one_to(threads[kBlockedMark].nodes, kBlockedEvents));
  const PerThread& busy = threads[kBusyMark];
  REQUIRE(!busy.nodes.empty());
  CHECK(exactly_one_to(busy.nodes, busy.nodes.back()));
  const double lost_ms = (static_cast<double>(killed_at) - static_cast<double>(busy.last_t)) / 1e6;
  MESSAGE("busy thread: " << busy.nodes.size() << " events on disk, the last " << lost_ms
                          << " ms before the kill");
  CHECK(lost_ms < 400);
  CAPTURE(t.truncation);
  CHECK(t.truncation.find("the recording ended without its footer: the process was killed or crashed at about t=") !=
        std::string::npos);
  CHECK(t.truncation.find(std::to_string(t.events.size()) + " events recovered") != std::string::npos);
}

}  // namespace

TEST_SUITE("killed_recording") {

TEST_CASE("a thread that stops emitting has its events in the file while the recording runs") {
  // In-process (ThreadSanitizer sees the writer copying live chunks while
  // their threads emit): the file is read while it is still being written.
  testing::TempDir dir("hookscope-live-chunks");
  const std::string path = dir.file("live.hstrace");
  trace::FileRecorder rec(path);
  rec.start();
  Gate gate;
  std::thread blocked([&] {
    emit_blocked_events();
    gate.wait();
  });
  std::atomic<bool> stop{false};
  uint64_t busy_events = 0;
  std::thread busy([&] { busy_events = emit_busy_until(stop); });

  // Within ~100 ms (a loaded machine: up to 2 s) the blocked thread's events are on disk.
  std::map<uint32_t, PerThread> seen;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  do {
    std::this_thread::sleep_for(milliseconds(20));
    seen = by_owner(trace::read_trace(path));
  } while (seen[kBlockedMark].nodes.size() < kBlockedEvents && Clock::now() < deadline);
  CHECK(exactly_one_to(seen[kBlockedMark].nodes, kBlockedEvents));
  std::this_thread::sleep_for(milliseconds(150));
  const trace::TraceData live = trace::read_trace(path);
  const uint64_t read_at = trace::now_ns();
  seen = by_owner(live);
  CHECK(exactly_one_to(seen[kBusyMark].nodes, seen[kBusyMark].nodes.size()));
  CHECK(static_cast<double>(read_at - seen[kBusyMark].last_t) / 1e6 < 1000);
  CHECK(live.truncation.find("the recording ended without its footer") != std::string::npos);

  stop = true;
  busy.join();
  gate.release();
  blocked.join();
  rec.finish();
  // At finish every event is there once: those copied live and the rest.
  const trace::TraceData done = trace::read_trace(path);
  CHECK(done.truncation.empty());
  seen = by_owner(done);
  CHECK(exactly_one_to(seen[kBlockedMark].nodes, kBlockedEvents));
  CHECK(exactly_one_to(seen[kBusyMark].nodes, busy_events));
}

TEST_CASE("a process killed mid-recording keeps each thread's events up to about the kill") {
  if (const char* path = std::getenv(kChildEnv)) record_until_killed(path);
  testing::TempDir dir("hookscope-killed");
  SUBCASE("a new file: under its own name from its header on") {
    const std::string path = dir.file("new.hstrace");
    const uint64_t killed_at = record_and_kill(path, milliseconds(300));
    check_killed_trace(path, killed_at);
  }
  SUBCASE("an old trace of that name: the killed run's replaces it, no temporary is left") {
    // Note [Safe trace writes]: the temporary is renamed once a block of
    // events is on disk, which the writer's live copies make within ~50 ms.
    const std::string path = dir.file("old.hstrace");
    std::ofstream(path) << "old trace";
    const uint64_t killed_at = record_and_kill(path, milliseconds(300));
    check_killed_trace(path, killed_at);
    for (const auto& e : fs::directory_iterator(dir.path)) {
      CHECK(e.path().filename().string().find(".tmp-") == std::string::npos);
    }
  }
}

}  // TEST_SUITE
