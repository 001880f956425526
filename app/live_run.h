#pragma once
// A scenario run live (the GUI's --live), recorded by a hookscope-cli child
// into a file: a few times a second the UI takes a model of everything
// written so far. Like loader.h: no GUI code; the App publishes the models
// it hands out (App::publish_model).
//
// Note [The GUI runs no scenario]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Opening a trace needs only the trace and analysis layers, so the GUI links
// no runtime (no OpenBLAS, Gloo, CUDA or NCCL: `ldd hookscope` shows none;
// tests/check_gui_links.sh asserts it). What needs the runtime it asks the
// hookscope-cli beside it for (app_cli.h): --live records the scenario with
// `hookscope-cli record NAME ... -o TEMP` and reads the file as it grows
// (the writer's chunks are whole and checksummed: a read mid-run ends at
// the last complete one); the options are checked by `record --check` before
// the window opens; the headless fallback is a plain `record`.

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "analysis/model.h"
#include "scenarios/registry.h"

namespace hookscope::app {

class LiveRun {
 public:
  ~LiveRun() { stop(); }
  // Runs the scenario in a child `cli` (empty: the hookscope-cli beside
  // this program), recording it; `title` names the trace.
  void start(const scenarios::ScenarioArgs& scenario, std::string title, std::string cli = "");
  // Ends the run if it still goes and lets go of what was recorded.
  void stop();
  bool active() const { return started_; }
  // The child's last events are in the last model poll() returned.
  bool finished() const { return finished_; }
  // What the run said once it ended ("" while it runs).
  std::string result() const { return result_; }

  struct Update {
    std::shared_ptr<const analysis::Model> model;  // the whole run so far; null on error
    std::string error;                             // the trace could not be analysed
  };
  // A model of what was written, when the file grew and the last model is
  // 400 ms old, or when the run ended; nullopt otherwise. `wait`: let the run
  // end first (headless modes show the finished run).
  std::optional<Update> poll(bool wait);

 private:
  void end(int exit_code);

  std::string scenario_, title_;
  std::string dir_;  // the child's trace and output, removed by stop()
  pid_t pid_ = -1;  // the child while it runs
  bool started_ = false;
  bool finished_ = false;
  uint64_t read_size_ = 0;  // the file's size at the last model
  std::chrono::steady_clock::time_point rebuilt_{};
  std::string result_;
};

}  // namespace hookscope::app
