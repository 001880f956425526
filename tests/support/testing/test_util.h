#pragma once
// Helpers shared by the tests.

#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <barrier>
#include <exception>
#include <memory>

#include "ddp/process_group.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/emit.h"
#include "trace/event.h"
#include "trace/recorder.h"
#include "trace/strings.h"
#include "trace/trace_data.h"

namespace hookscope::testing {

// Saves the trace file `bytes` as a fuzzer seed named `name` when
// HOOKSCOPE_TRACE_CORPUS is set (scripts/fuzz.sh sets it).
inline void save_seed(const std::string& name, const std::string& bytes) {
  const char* dir = std::getenv("HOOKSCOPE_TRACE_CORPUS");
  if (!dir) return;
  std::filesystem::create_directories(dir);
  std::ofstream(std::filesystem::path(dir) / (name + ".hstrace"), std::ios::binary) << bytes;
}

// The recorded events without the start snapshot of owners that predate the
// recording (which depends on what earlier tests created).
inline std::vector<trace::Event> recorded(const trace::MemoryRecorder& rec) {
  std::vector<trace::Event> out;
  for (const auto& e : rec.events()) {
    if (e.kind == trace::EventKind::kOwnerCreated && e.actor == trace::kOwnerFromSnapshot) continue;
    out.push_back(e);
  }
  return out;
}

// Runs `workload` under a MemoryRecorder and returns what a trace file of it
// would hold (events and the string table).
template <class Workload>
trace::TraceData record_trace(Workload&& workload) {
  trace::MemoryRecorder rec;
  rec.start();
  workload();
  return rec.take_trace();
}

// The recovery scenario with policy none (ranks as threads, 6 steps), recorded:
// the trace several analysis tests replay.
inline trace::TraceData record_recovery_trace() {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 6;
  return record_trace([&] { scenarios::run_ddp_scenario(o); });
}

// Runs `fn(rank, group)` on `world` threads, each with its Gloo group over
// one HashStore; the error each rank threw ("" when none), by rank. Every
// group lives until every rank's fn has returned: a group that closes its
// sockets while a peer still finishes its last collective resets that
// peer's connection ("Connection closed by peer"), as a rank exiting early
// does in any DDP program (PyTorch's advice: a barrier before tearing down).
template <class Fn>
std::vector<std::string> run_gloo_ranks(int world, Fn fn,
                                        std::chrono::milliseconds timeout = std::chrono::milliseconds(10000)) {
  auto store = ddp::make_hash_store();
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(world));
  std::barrier done(world);
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      std::shared_ptr<ddp::ProcessGroup> pg;
      try {
        trace::set_thread_rank(static_cast<uint16_t>(r));
        ddp::ProcessGroupOptions opts;
        opts.timeout = timeout;
        pg = ddp::make_gloo_process_group(store, r, world, opts);
        fn(r, pg);
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
      done.arrive_and_wait();
    });
  }
  for (auto& t : threads) t.join();
  return errors;
}

// Runs a shell command as a user would; stdout and stderr together.
struct CommandResult {
  std::string out;
  int exit = -1;
};
inline CommandResult run_command(const std::string& cmd) {
  CommandResult r;
  FILE* p = ::popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[512];
  while (std::fgets(buf, sizeof(buf), p)) r.out += buf;
  const int status = ::pclose(p);
  r.exit = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

// Draws frames until `done()` or `seconds` have passed (background work: a
// load, a layout job, an export). Bounded by time, not by frame count, so a
// loaded machine (CI, sanitizers) only makes it slower. Returns done().
template <class Done, class Frame>
bool frames_until(Done done, Frame frame, int seconds = 60) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    frame();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return done();
}

}  // namespace hookscope::testing
