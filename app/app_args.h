#pragma once
// Command line of the desktop app.

#include <string>
#include <vector>

#include "index_args.h"
#include "scenarios/registry.h"

namespace hookscope::app {

// --compare-tab's names, in the order of the Compare panel's tabs (panel_compare.cpp).
inline constexpr const char* kCompareTabs[] = {"graphs", "order", "end", "findings"};

struct Args {
  std::vector<std::string> files;  // traces to open (several = the ranks of one run)
  std::vector<std::string> compare;  // --compare FILE...: a second trace beside the first
  bool live = false;               // --live SCENARIO: run it on worker threads, show events as they come
  scenarios::ScenarioArgs scenario;  // the scenario for --live (and the headless fallback)
  // The hookscope-cli that records --live (not an option; tests set it; "":
  // the one beside this program, Note [The GUI runs no scenario]).
  std::string cli;
  std::string screenshot;          // --screenshot FILE.png: render, write the PNG, exit
  cli::EventIndexArg at;           // --at I: the current event (Note [Event index arguments])
  long select = -1;                // --select FUNCTION_ID
  int width = 1600, height = 1000; // --size WxH
  int frames = 0;                  // --frames N: run N frames and exit
  int bench_frames = 0;            // --bench-frames N: print the median CPU frame time
  bool light = false;              // --light: light theme
  std::string panel;               // --panel NAME: show that panel in front (lanes, readiness, explain, ...)
  std::string compare_tab;         // --compare-tab NAME: the Compare panel's tab at open (kCompareTabs)
  double play = 0.0;               // --play SPEED: start playing at SPEED events/s once open
  std::string export_graph;        // --export-graph FILE.svg|png: write the graph once laid out, exit
  bool export_whole = false;       // --whole: the whole graph, else the current view
  std::string export_lanes;        // --export-lanes FILE.png: the Lanes panel as PNG, exit

  bool headless_frames() const {
    return !screenshot.empty() || frames > 0 || bench_frames > 0 || !export_graph.empty() || !export_lanes.empty();
  }
  // Frames before the screenshot is taken: enough for layout and fonts to settle.
  int screenshot_frame() const { return 4; }
};

// Returns -1 to go on, or an exit code (help printed, usage error).
int parse_args(int argc, char** argv, Args& args);

// No window possible: say so and record the scenario headless instead, with
// the hookscope-cli installed beside this program.
int run_headless_fallback(const Args& args, const std::string& why);

}  // namespace hookscope::app
