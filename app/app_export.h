#pragma once
// Export from the GUI (app/app_export.cpp): the graph as SVG (written from
// the layout, render/layout/graph_svg.h) or PNG, of the current view or the
// whole graph, and the lanes as PNG. PNGs are read back from the frame the
// app just drew: the App queues a Capture (a rectangle of the window), and
// main.cpp writes it after rendering. The whole graph is drawn fitted in a
// window of its own that covers the app for the frames it takes.
// File > Export ... asks for a path; `hookscope --export-graph out.svg|png
// [--whole] --export-lanes out.png` exports once the trace is laid out and
// exits (1 when an export failed).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "render/draw/graph_view.h"

namespace hookscope::app {

// A rectangle of the window (pixels, top-left origin) main.cpp writes as PNG.
struct Capture {
  std::string path;
  int x = 0, y = 0, w = 0, h = 0;
};

// The largest side of a whole-graph PNG (pixels): what GL implementations
// render to at least (llvmpipe, Mesa, NVIDIA allow 8192 and more).
constexpr int kMaxExportSide = 8192;

enum class ExportJob : uint8_t { kGraphSvg, kGraphPng, kLanesPng };

struct ExportRequest {
  ExportJob job = ExportJob::kGraphSvg;
  std::string path;
  bool whole = false;  // the graph: the whole of it, else the current view
};

struct ExportState {
  std::vector<ExportRequest> queue;
  std::vector<Capture> captures;          // for main.cpp, after this frame is rendered
  int frames = 0;                          // frames the current request has waited
  // The whole graph: its own view, laid out at the window's size, then drawn
  // at zoom 1 (or less, to fit kMaxExportSide) into an offscreen framebuffer
  // of the size it needs (main.cpp, offscreen_size()).
  std::unique_ptr<render::GraphView> whole;
  bool fitted = false;
  int off_w = 0, off_h = 0;  // the offscreen frame's size; 0: draw on screen
  bool from_args = false;                  // --export-*: exit when done
  int failures = 0;
  std::string message;                     // the last result (status bar, dialog)
  // File > Export ...: the dialog.
  bool dialog = false;
  ExportRequest pending;
  char path[512] = "";
};

// "svg" / "png" from a path's extension (lower case), "" otherwise.
std::string export_format(const std::string& path);

}  // namespace hookscope::app
