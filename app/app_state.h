#pragma once
// The app: what is open (traces or a live run), the current event every panel
// follows, and the panels. See app/panel_*.cpp.

#include <imgui.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "app_args.h"
#include "trace/recorder.h"
#include "trace/trace_data.h"

struct GLFWwindow;

namespace hookscope::app {

// Receives chunks from a live run; the UI takes what arrived once per frame.
class LiveSink : public trace::ChunkSink {
 public:
  void on_chunk(std::unique_ptr<trace::Chunk> chunk) override;
  // Moves the chunks that arrived since the last call into `out` (one lock).
  void drain(std::vector<std::unique_ptr<trace::Chunk>>& out);

 private:
  std::mutex mutex_;
  std::vector<std::unique_ptr<trace::Chunk>> pending_;
};

class App {
 public:
  explicit App(const Args& args);
  ~App();
  void setup_style(GLFWwindow* window);
  void frame();
  void shutdown();
  void report();  // --bench-frames output

  bool quit_requested() const { return quit_; }
  void request_quit(int code) {
    quit_ = true;
    exit_code_ = code;
  }
  int exit_code() const { return exit_code_; }

 private:
  void open_files(const std::vector<std::string>& files);
  void start_live();
  void poll_live();
  void draw_menu();
  void draw_status_bar();
  void draw_events_panel();
  void draw_summary_panel();
  void draw_error_dialog();

  Args args_;
  std::vector<trace::TraceData> traces_;   // one per file, or the live run's
  std::vector<trace::Event> events_;       // all traces merged on one timeline
  std::vector<uint32_t> event_trace_;      // which trace each event came from
  size_t current_ = 0;
  std::string error_;                      // shown in a modal dialog
  char filter_[256] = "";

  // Live run.
  LiveSink live_sink_;
  std::unique_ptr<trace::Recorder> live_recorder_;
  std::thread live_thread_;
  std::atomic<bool> live_done_{false};
  std::vector<std::unique_ptr<trace::Chunk>> live_chunks_;
  std::string live_result_;

  std::vector<double> frame_ms_;
  bool quit_ = false;
  int exit_code_ = 0;
};

}  // namespace hookscope::app
