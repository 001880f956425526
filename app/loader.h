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

namespace hookscope::app {

struct LoadResult {
  std::vector<std::string> files;
  std::shared_ptr<const analysis::Model> model;  // null when nothing could be loaded
  // Unreadable files (the reader's message, naming file and byte offset) and
  // files read only in part (their truncation). Empty when all went well.
  std::string errors;
  std::string warnings;
};

class TraceLoader {
 public:
  ~TraceLoader();
  // Starts loading `files` (the ranks of one run); a load in progress is
  // abandoned (its result dropped).
  void start(std::vector<std::string> files);
  bool busy() const { return thread_.joinable() && !done_; }
  // 0..1 while reading, then indexing; and what it is doing ("reading x (2/4)").
  float progress() const { return progress_.load(); }
  std::string stage() const;
  // The finished load, once (then nullopt until the next start()).
  std::optional<LoadResult> poll();
  // Blocks until the current load is done (tests, screenshots).
  std::optional<LoadResult> wait();

 private:
  void run(std::vector<std::string> files);

  std::thread thread_;
  std::atomic<bool> done_{false};
  std::atomic<float> progress_{0.f};
  mutable std::mutex mutex_;
  std::string stage_;
  std::optional<LoadResult> result_;
};

// Reads and indexes synchronously (what the loader thread runs).
LoadResult load_traces(const std::vector<std::string>& files,
                       const std::function<void(float, const std::string&)>& progress = nullptr);

}  // namespace hookscope::app
