#pragma once
// compute_layout() off the UI thread: a LayoutJob owns its input, runs on
// its own std::thread, can be cancelled, and hands its Layout over once.

#include <atomic>
#include <future>
#include <optional>
#include <thread>

#include "render/layout/layout.h"

namespace hookscope::render {

class LayoutJob {
 public:
  // Starts at once. `seed`, when given, is owned by the job (Note [Stable layout]).
  explicit LayoutJob(LayoutInput input, LayoutOptions options = {},
                     std::optional<LayoutSeed> seed = std::nullopt);
  // Cancels and joins: dropping a job never blocks for longer than one
  // loop step of the layout.
  ~LayoutJob();
  LayoutJob(const LayoutJob&) = delete;
  LayoutJob& operator=(const LayoutJob&) = delete;

  void cancel() { cancel_.store(true, std::memory_order_relaxed); }
  bool cancelled() const { return cancel_.load(std::memory_order_relaxed); }
  // True once the result is ready (get() will not block).
  bool done() const;
  // Waits, then returns the layout (`cancelled` set when cancelled); rethrows
  // what compute_layout threw. Only once.
  Layout get();

 private:
  LayoutInput input_;
  LayoutOptions options_;
  std::optional<LayoutSeed> seed_;
  std::atomic<bool> cancel_{false};
  std::future<Layout> result_;
  std::thread thread_;
};

}  // namespace hookscope::render
