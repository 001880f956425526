#include "app_args.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>

namespace hookscope::app {

int parse_args(int argc, char** argv, Args& a) {
  CLI::App app{"hookscope: visual debugger for autograd graphs, hooks and DDP Reducers"};
  app.add_option("files", a.files, "trace files (.hstrace) to open; several = ranks of one run")
      ->check(CLI::ExistingFile);
  app.add_option("--compare", a.compare, "a second trace (its rank files) to compare with, e.g. "
                 "the same scenario under --policy by-key")
      ->check(CLI::ExistingFile);
  std::string live;
  app.add_option("--live", live, "run a built-in scenario live and watch its events")
      ->check(CLI::IsMember(
          {"autograd-demo", "recovery", "shared-module", "unused-parameter", "marked-twice"}));
  auto& s = a.scenario;
  app.add_option("--steps", s.steps, "training steps")->check(CLI::Range(1, 1000000));
  app.add_option("--seed", s.seed, "seed");
  app.add_option("--policy", s.policy, "Reducer hook removal policy")
      ->check(CLI::IsMember({"by-key", "none", "by-type"}));
  app.add_option("--world-size", s.world_size, "ranks")->check(CLI::Range(1, 64));
  app.add_option("--recoveries", s.recoveries, "failures to inject")->check(CLI::Range(1, 100));
  app.add_option("--fail-rank", s.fail_rank, "the rank that fails");
  app.add_option("--fail-step", s.fail_step, "step of the first failure");
  app.add_option("--fail-mode", s.fail_mode, "throw or timeout")
      ->check(CLI::IsMember({"throw", "timeout"}));
  app.add_option("--device", s.device, "cpu or cuda (live scenarios)")
      ->check(CLI::IsMember({"cpu", "cuda"}));
  app.add_option("--screenshot", a.screenshot, "render, write this PNG and exit");
  app.add_option("--at", a.at, "current event index");
  app.add_option("--select", a.select, "select the Function with this id");
  std::string size;
  app.add_option("--size", size, "window size WxH (default 1600x1000)");
  app.add_option("--frames", a.frames, "run N frames and exit")->check(CLI::Range(1, 1000000));
  app.add_option("--bench-frames", a.bench_frames, "run N frames, print the median CPU frame time")
      ->check(CLI::Range(1, 1000000));
  app.add_flag("--light", a.light, "light theme");
  app.add_option("--play", a.play, "start playing at this many events per second once open")
      ->check(CLI::Range(0.5, 1e7));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  if (!size.empty() && std::sscanf(size.c_str(), "%dx%d", &a.width, &a.height) != 2) {
    fmt::print(stderr, "hookscope: --size must look like 1600x1000, got '{}'\n", size);
    return 2;
  }
  if (a.width < 320 || a.height < 240 || a.width > 8192 || a.height > 8192) {
    fmt::print(stderr, "hookscope: --size {}x{} is out of range (320x240 .. 8192x8192)\n", a.width,
               a.height);
    return 2;
  }
  if (!live.empty()) {
    a.live = true;
    s.scenario = live;
  }
  if (a.files.empty() && !a.live) {
    a.live = true;
    s.scenario = "recovery";  // the story hookscope exists to tell
  }
  if (a.bench_frames > 0) a.frames = a.bench_frames;
  return -1;
}

int run_headless_fallback(const Args& a, const std::string& why) {
  if (!a.live) {
    fmt::print(stderr,
               "hookscope: {}; cannot show a window. Inspect the traces headless with "
               "hookscope-cli (info, events, state, check).\n",
               why);
    return 2;
  }
  fmt::print(stderr, "hookscope: {}; recording the '{}' scenario headless instead.\n", why,
             a.scenario.scenario);
  cli::ScenarioArgs s = a.scenario;
  if (s.output.empty()) s.output = s.scenario + ".hstrace";
  const int rc = cli::run_record(s);
  if (rc == 0) {
    fmt::print("open it later with: hookscope {}\n", s.output);
  }
  return rc;
}

}  // namespace hookscope::app
