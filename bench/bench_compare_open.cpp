// The GUI's `--compare` on a big trace (a 1.25M-event trace
// against a 50-event one once took 47-58 s to be ready; the goal is 5 s): the App as a user runs
// it, in an ImGui context with no window, interactive (nothing waits for a
// background job: each frame polls, as the window's frames do).
//   bench_compare_open A.hstrace B.hstrace [RUNS=5]
// prints per run, then the medians: `ready_s`, from opening until the
// Compare panel shows both graphs, the counts and the differences at the
// matching point (App::settled()); `longest_frame_ms`, the slowest frame
// meanwhile (work on the UI thread: the window does not answer during it);
// `cpu_s`, the process's CPU seconds until ready, all threads (on a shared
// machine the wall clock says more about the neighbours than the code).
// bench/compare_open.sh makes the traces and runs both orders.
#include <imgui.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "../app/app.h"

using namespace hookscope;
using Clock = std::chrono::steady_clock;

namespace {

double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

double cpu_s() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

struct Run {
  double ready_s = 0, longest_frame_ms = 0, cpu_s = 0;
  int frames = 0;
  bool ready = false;
};

Run run_once(const std::string& a, const std::string& b, double limit_s) {
  ImGuiContext* ctx = ImGui::CreateContext();
  ImGuiIO& io = ImGui::GetIO();
  io.DisplaySize = ImVec2(1600, 1000);
  io.DeltaTime = 1.f / 60.f;
  io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
  Run r;
  {
    app::Args args;
    args.files = {a};
    args.compare = {b};
    const auto start = Clock::now();
    const double cpu0 = cpu_s();
    app::App app(args);
    app.setup_style(1.f);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    while (ms_since(start) < limit_s * 1000) {
      const auto f = Clock::now();
      ImGui::NewFrame();
      app.frame();
      ImGui::Render();
      r.longest_frame_ms = std::max(r.longest_frame_ms, ms_since(f));
      ++r.frames;
      if (app.settled() && app.session().model()) {
        r.ready = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(4));  // a 240 Hz window's pace, at most
    }
    r.ready_s = ms_since(start) / 1000;
    r.cpu_s = cpu_s() - cpu0;
  }
  ImGui::DestroyContext(ctx);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: bench_compare_open A.hstrace B.hstrace [RUNS=5] [LIMIT_S=120]\n");
    return 2;
  }
  const int runs = argc > 3 ? std::max(1, std::atoi(argv[3])) : 5;
  const double limit = argc > 4 ? std::atof(argv[4]) : 120.0;
  // No imgui.ini or recent files of the user's.
  const auto dir = std::filesystem::temp_directory_path() / ("bench_compare_open_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  ::setenv("XDG_CONFIG_HOME", dir.c_str(), 1);
  std::vector<double> ready, longest, cpu;
  for (int i = 0; i < runs; ++i) {
    const Run r = run_once(argv[1], argv[2], limit);
    std::printf("run %d: ready_s %.3f%s, cpu_s %.3f, longest_frame_ms %.1f, frames %d\n", i + 1, r.ready_s,
                r.ready ? "" : " (NOT READY: limit reached)", r.cpu_s, r.longest_frame_ms, r.frames);
    std::fflush(stdout);
    ready.push_back(r.ready_s);
    longest.push_back(r.longest_frame_ms);
    cpu.push_back(r.cpu_s);
  }
  std::printf("median of %d runs: ready_s %.3f, cpu_s %.3f, longest_frame_ms %.1f (target: ready <= 5 s)\n", runs,
              median(ready), median(cpu), median(longest));
  std::filesystem::remove_all(dir);
  return 0;
}
