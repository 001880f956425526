#include "app_args.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "app_cli.h"
#include "app_export.h"
#include "scenario_options.h"

namespace hookscope::app {

namespace {

// --live's options: the table's checks here, the runtime's (devices, ranks
// of the world, ...) by `hookscope-cli record --check`, so that a bad option
// stops the GUI before a window opens (Note [The GUI runs no scenario]).
int check_live_options(Args& a) {
  try {
    scenarios::check_options(a.scenario, scenarios::RunMode::kThreads);
  } catch (const std::invalid_argument& e) {
    fmt::print(stderr, "hookscope: error: {}\n", e.what());
    return 2;
  }
  if (a.cli.empty()) a.cli = cli_beside_self();
  if (::access(a.cli.c_str(), X_OK) != 0) return -1;  // the live run says it is missing
  std::vector<std::string> argv = {a.cli, "record", "--check", a.scenario.scenario};
  for (std::string& arg : scenarios::to_arguments(a.scenario)) argv.push_back(std::move(arg));
  std::string out;
  if (run_child(argv, &out) != 2) return -1;
  constexpr std::string_view kPrefix = "hookscope-cli: error: ";
  const size_t at = out.find(kPrefix);
  fmt::print(stderr, "hookscope: error: {}", at == std::string::npos ? out : out.substr(at + kPrefix.size()));
  return 2;
}

}  // namespace

int parse_args(int argc, char** argv, Args& a) {
  CLI::App app{"hookscope: visual debugger for autograd graphs, hooks and DDP Reducers"};
  app.add_option("files", a.files, "trace files (.hstrace) to open; several = ranks of one run")
      ->check(CLI::ExistingFile);
  app.add_option("--compare", a.compare, "a second trace (its rank files) to compare with, e.g. "
                 "the same scenario under --policy by-key")
      ->check(CLI::ExistingFile);
  std::string live;
  app.add_option("--live", live,
                 scenario_help("run a built-in scenario live and watch its events (options as in "
                               "`hookscope-cli record`)", false))
      ->check(scenario_name_check(false));
  auto& s = a.scenario;
  add_scenario_options(&app, s, scenarios::kUseLive);
  app.add_option("--screenshot", a.screenshot, "render, write this PNG and exit");
  app.add_option("--at", a.at.text, "current event index")->check(cli::event_index_check());
  app.add_option("--select", a.select, "select the Function with this id");
  std::string size;
  app.add_option("--size", size, "window size WxH (default 1600x1000)");
  app.add_option("--frames", a.frames, "run N frames and exit")->check(CLI::Range(1, 1000000));
  app.add_option("--bench-frames", a.bench_frames, "run N frames, print the median CPU frame time (--play then moves 1/60 s of events a frame)")
      ->check(CLI::Range(1, 1000000));
  app.add_flag("--light", a.light, "light theme");
  app.add_option("--play", a.play, "start playing at this many events per second once open")
      ->check(CLI::Range(0.5, 1e7));
  app.add_option("--panel", a.panel, "show this panel in front: lanes, readiness, explain, graph, function, "
                 "reducers, timeline, events, diagnostics, compare")
      ->check(CLI::IsMember({"lanes", "readiness", "explain", "graph", "function", "reducers", "timeline", "events",
                             "diagnostics", "compare"}));
  app.add_option("--compare-tab", a.compare_tab, "with --compare: the Compare panel's tab at open: graphs (at "
                 "matching points), order (hook order), end (hooks at the end), findings")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(kCompareTabs), std::end(kCompareTabs))));
  app.add_option("--export-graph", a.export_graph, "write the graph as SVG or PNG (by the name's extension) "
                 "once laid out, then exit");
  app.add_flag("--whole", a.export_whole, "--export-graph: the whole graph, not the current view");
  app.add_option("--export-lanes", a.export_lanes, "write the Lanes panel (hook lifetimes) as PNG, then exit");
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
  if (!a.export_graph.empty() && export_format(a.export_graph).empty()) {
    fmt::print(stderr, "hookscope: --export-graph {}: the name must end in .svg or .png\n", a.export_graph);
    return 2;
  }
  if (!a.compare_tab.empty()) {
    if (a.compare.empty()) {
      fmt::print(stderr, "hookscope: --compare-tab {} picks a tab of the Compare panel: give the second trace "
                 "with --compare FILE\n", a.compare_tab);
      return 2;
    }
    if (a.panel.empty()) a.panel = "compare";  // the tab is what the user asked to see
  }
  if (!a.export_lanes.empty() && export_format(a.export_lanes) != "png") {
    fmt::print(stderr, "hookscope: --export-lanes {}: the name must end in .png\n", a.export_lanes);
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
  if (a.live) return check_live_options(a);
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
  scenarios::ScenarioArgs s = a.scenario;
  if (s.output.empty()) s.output = s.scenario + ".hstrace";
  const std::filesystem::path cli = a.cli.empty() ? cli_beside_self() : a.cli;
  std::vector<std::string> argv = {cli.string(), "record", s.scenario};
  for (std::string& arg : scenarios::to_arguments(s)) argv.push_back(std::move(arg));
  argv.insert(argv.end(), {"-o", s.output});
  if (cli.empty() || ::access(cli.c_str(), X_OK) != 0) {
    fmt::print(stderr, "hookscope: {} is missing; record with: hookscope-cli {}\n", cli.string(),
               fmt::join(argv.begin() + 1, argv.end(), " "));
    return 2;
  }
  const pid_t pid = start_child(argv);
  const int rc = pid < 0 ? -1 : child_exit(pid, true).value_or(-1);
  if (rc < 0) {
    fmt::print(stderr, "hookscope: could not run {}\n", cli.string());
    return 2;
  }
  if (rc == 0) {
    // installed (…/bin): by name; from a build tree: the path that runs it from here
    std::error_code rel_ec;
    const auto dir = cli.parent_path();
    const auto self = std::filesystem::relative(dir / "hookscope", rel_ec);
    const std::string app = dir.filename() == "bin" || rel_ec ? std::string("hookscope") : self.string();
    fmt::print("open it later with: {} {}\n", app, s.output);
  }
  return rc;
}

}  // namespace hookscope::app
