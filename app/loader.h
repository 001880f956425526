#pragma once
// Loads trace files and indexes them on a background thread, so the window
// keeps drawing (with a progress bar) while a large trace opens. No GUI code.

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/model.h"
#include "render/layout/graph_scene.h"
#include "render/layout/story.h"
#include "render/layout/timeline_index.h"

namespace hookscope::app {

struct LoadResult {
  std::vector<std::string> files;
  std::shared_ptr<const analysis::Model> model;  // null when nothing could be loaded
  // The graph's slots and the run's story, built on the loader thread too
  // (at a million Functions they take seconds: Note [Scene off the UI thread]).
  std::shared_ptr<render::GraphScene> scene;
  std::shared_ptr<const render::RunStory> story;
  // The timeline's index of every event (0.17 s of CPU at 10M events).
  std::shared_ptr<render::TimelineIndex> timeline;
  // Unreadable files (the reader's message, naming file and byte offset) and
  // files read only in part (their truncation). Empty when all went well.
  std::string errors;
  std::string warnings;
};

// Note [Cancelled loads]
// ~~~~~~~~~~~~~~~~~~~~~~
// Opening a file while another loads must not freeze the window until the
// old read finishes: start() cancels the load in progress and starts the new
// one at once. Each load owns its state (a shared Load); the old thread stops
// at its next progress report (reading) or after indexing, and is joined by a
// later start() or by the destructor. Its result is dropped.
class TraceLoader {
 public:
  ~TraceLoader();
  // Starts loading `files` (the ranks of one run); a load in progress is
  // cancelled and its result dropped (Note [Cancelled loads]).
  void start(std::vector<std::string> files);
  bool busy() const { return current_ && !current_->done; }
  // 0..1 while reading, then indexing; and what it is doing ("reading x (2/4)").
  float progress() const { return current_ ? current_->progress.load() : 0.f; }
  std::string stage() const;
  // The finished load, once (then nullopt until the next start()).
  std::optional<LoadResult> poll();
  // Blocks until the current load is done (tests, screenshots).
  std::optional<LoadResult> wait();
  // Load threads not yet joined, cancelled ones included (tests).
  size_t threads() const { return threads_.size(); }

  struct Load {
    std::atomic<bool> cancel{false};
    std::atomic<bool> done{false};
    std::atomic<float> progress{0.f};
    mutable std::mutex mutex;
    std::string stage;
    std::optional<LoadResult> result;
  };

 private:
  void reap(bool all);

  std::shared_ptr<Load> current_;
  std::vector<std::pair<std::thread, std::shared_ptr<Load>>> threads_;
};

// Note [Returning freed memory]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Reading and indexing a huge trace frees hundreds of MiB of temporaries
// (decode buffers, build-only tables; 230 MiB at 100M events) that glibc
// keeps in its arenas, where the next stages (diagnostics, layout), on other
// threads with arenas of their own, rarely reuse them: the GUI's peak RSS
// counted them twice. The loader and the diagnostics job hand them back to
// the OS when they finish (malloc_trim). And glibc raises its mmap threshold
// up to 32 MiB as large blocks are freed, so that later multi-MiB vectors
// (the layout's, the scene's) come from the arenas and their holes stay
// resident: the first load fixes the threshold at kMmapThreshold, which
// keeps blocks above it in mmaps of their own, unmapped when freed. It also
// caps the arenas at kMaxArenas: each background job's thread (loader,
// diagnostics, layouts) had its own, holding its own freed holes. Only with
// glibc. At 100M events: GUI peak RSS 3304 -> 3132 MiB (threshold) -> 3062
// MiB (arenas); bench/scale_gui.sh measures it.
void release_free_memory();
void use_mmap_for_large_blocks();

// Reads and indexes synchronously (what the loader thread runs). When
// `cancel` turns true, reading stops at its next progress report and the
// result comes back empty with errors "cancelled".
LoadResult load_traces(const std::vector<std::string>& files,
                       const std::function<void(float, const std::string&)>& progress = nullptr,
                       const std::atomic<bool>* cancel = nullptr);

}  // namespace hookscope::app
