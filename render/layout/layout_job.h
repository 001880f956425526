#pragma once
// compute_layout() off the UI thread: a LayoutJob owns its input, runs on
// its own std::thread, can be cancelled, and hands its Layout over once.
// See Note [Layout jobs].

#include <atomic>
#include <functional>
#include <future>
#include <memory>
#include <optional>

#include "render/layout/layout.h"

namespace hookscope::render {

// Note [Layout jobs]
// ~~~~~~~~~~~~~~~~~~
// A newer request replaces the job (the graph view holds one), and dropping
// a job must not freeze the frame that drops it: the destructor sets the
// cancel flag and returns at once. The thread owns everything it reads (a
// shared State), so it may finish the step it is in after the job is gone;
// it is joined later, by the next job dropped or at exit, never by the UI
// thread waiting on it. running_jobs() counts the threads still working,
// cancelled ones included (tests check a cancelled job stops).
class LayoutJob {
 public:
  // Starts at once. `seed`, when given, is owned by the job (Note [Stable layout]).
  explicit LayoutJob(LayoutInput input, LayoutOptions options = {},
                     std::optional<LayoutSeed> seed = std::nullopt);
  // The same with the input made by `prepare` on the job's thread, before
  // the layout (what is too slow for the UI thread: box sizes at a million
  // Functions). `prepare` must own or share everything it reads; the seed
  // its input points to, when no `seed` is given, must live as long as it.
  LayoutJob(std::function<LayoutInput()> prepare, LayoutOptions options,
            std::optional<LayoutSeed> seed = std::nullopt);
  // Cancels and returns without waiting (Note [Layout jobs]).
  ~LayoutJob();
  LayoutJob(const LayoutJob&) = delete;
  LayoutJob& operator=(const LayoutJob&) = delete;

  void cancel();
  bool cancelled() const;
  // True once the result is ready (get() will not block).
  bool done() const;
  // Waits, then returns the layout (`cancelled` set when cancelled); rethrows
  // what compute_layout threw. Only once.
  Layout get();
  // Seconds compute_layout took (valid once done()).
  double seconds() const;

  // Layout threads alive in this process, abandoned ones included.
  static int running_jobs();

  struct State;

 private:
  std::shared_ptr<State> state_;
  std::future<Layout> result_;
};

}  // namespace hookscope::render
