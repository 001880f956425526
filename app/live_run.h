#pragma once
// A scenario run in this process (the GUI's --live), recorded to memory on a
// background thread: a few times a second the UI takes a model of everything
// recorded so far. Like loader.h: no GUI code; the App publishes the models
// it hands out (App::publish_model).

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/model.h"
#include "scenarios/registry.h"
#include "trace/recorder.h"

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

class LiveRun {
 public:
  ~LiveRun() { stop(); }
  // Runs the scenario on a thread, recording it; `title` names the trace.
  void start(const scenarios::ScenarioArgs& scenario, std::string title);
  // Waits for the scenario to end and lets go of what was recorded.
  void stop();
  bool active() const { return recorder_ != nullptr; }
  // The recorder's last chunks are in the last model poll() returned.
  bool finished() const { return finished_; }
  // What run_scenario said once it ended ("" while it runs).
  std::string result() const;

  struct Update {
    std::shared_ptr<const analysis::Model> model;  // the whole run so far; null on error
    std::string error;                             // the trace could not be analysed
  };
  // A model of what arrived, when new chunks came and the last one is
  // 400 ms old, or when the run ended; nullopt otherwise. `wait`: let the run
  // end first (headless modes show the finished run).
  std::optional<Update> poll(bool wait);

 private:
  std::string scenario_, title_;
  LiveSink sink_;
  std::unique_ptr<trace::Recorder> recorder_;
  std::thread thread_;
  std::atomic<bool> done_{false};
  bool finished_ = false;
  bool pending_ = false;  // chunks arrived that no model has yet
  std::vector<std::unique_ptr<trace::Chunk>> chunks_;
  std::chrono::steady_clock::time_point rebuilt_{};
  std::string result_;
  mutable std::mutex result_mutex_;
};

}  // namespace hookscope::app
