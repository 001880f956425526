#include "loader.h"

#include <fmt/format.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <exception>
#include <mutex>
#include <new>
#include <thread>

#include "trace/reader.h"

namespace hookscope::app {

namespace {

struct Cancelled {};  // thrown through the reader from its progress callback

}  // namespace

// Note [The first trim runs alone]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// glibc's malloc_trim initialises its malloc state on its first call when
// nothing has yet (ptmalloc_init), and marks it initialised before it has
// set up the main arena's bins: a second thread trimming meanwhile walks
// bins that are still null and reads address 0x8. In a normal build the
// program's first malloc initialises glibc before main, but under ASan no
// malloc reaches glibc (ASan's allocator serves them all, and its mallopt
// does nothing), so the loader and the diagnostics job's first trims race:
// scripts/fuzz.sh's GUI target crashed in CI (SEGV on 0x8 in a loader
// thread, two loads at once: the trace and its Compare). Four threads
// trimming at once crashed 83 of 300 fresh ASan processes
// (fuzz/first_trim_check.cpp), 0 of 300 since the first trim runs under a
// once_flag, the others waiting for it.
void release_free_memory() {
#if defined(__GLIBC__)
  static std::once_flag first;
  bool trimmed = false;
  std::call_once(first, [&trimmed] {
    malloc_trim(0);
    trimmed = true;
  });
  if (!trimmed) malloc_trim(0);
#endif
}

void use_mmap_for_large_blocks() {
#if defined(__GLIBC__)
  constexpr int kMmapThreshold = 256 << 10;  // Note [Returning freed memory]
  constexpr int kMaxArenas = 2;
  static std::once_flag once;
  std::call_once(once, [] {
    mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
    mallopt(M_ARENA_MAX, kMaxArenas);
  });
#endif
}

LoadResult load_traces(const std::vector<std::string>& files,
                       const std::function<void(float, const std::string&)>& progress,
                       const std::atomic<bool>* cancel) {
  use_mmap_for_large_blocks();  // Note [Returning freed memory]
  LoadResult r;
  r.files = files;
  std::vector<trace::TraceData> traces;
  // Reading is ~70% of the time, indexing the rest (measured on a 10M-event trace).
  constexpr float kReadShare = 0.7f;
  for (size_t i = 0; i < files.size(); ++i) {
    const std::string stage = files.size() > 1
                                  ? fmt::format("reading {} ({}/{})", files[i], i + 1, files.size())
                                  : fmt::format("reading {}", files[i]);
    if (progress) progress(kReadShare * static_cast<float>(i) / files.size(), stage);
    trace::ReadOptions options;
    options.packed = true;  // the model keeps them packed (Note [Packed events])
    if (progress || cancel) {
      options.progress = [&, i](uint64_t done, uint64_t total) {
        if (cancel && cancel->load(std::memory_order_relaxed)) throw Cancelled{};
        if (!progress) return;
        const float f = total ? static_cast<float>(done) / static_cast<float>(total) : 1.f;
        progress(kReadShare * (static_cast<float>(i) + f) / files.size(), stage);
      };
    }
    try {
      traces.push_back(trace::read_trace(files[i], options));
      if (!traces.back().truncation.empty()) {
        r.warnings += fmt::format("{}: {}\n", files[i], traces.back().truncation);
      }
      if (const std::string newer = trace::superseded_by_temporary(files[i]); !newer.empty()) {
        r.warnings += fmt::format("{}: {}\n", files[i], newer);
      }
    } catch (const Cancelled&) {
      r.errors = "cancelled\n";
      return r;
    } catch (const std::bad_alloc&) {
      r.errors += fmt::format("out of memory while reading {}\n", files[i]);
    } catch (const std::exception& e) {
      r.errors += fmt::format("{}\n", e.what());
    }
  }
  if (traces.empty() || (cancel && cancel->load())) {
    if (cancel && cancel->load()) r.errors = "cancelled\n";
    return r;
  }
  if (progress) progress(kReadShare, "indexing");
  try {
    r.model = std::make_shared<const analysis::Model>(std::move(traces));
    if (r.model->num_events() == 0) {
      // Nothing to show: say why (the truncations) rather than open an empty view.
      r.errors += r.warnings.empty() ? std::string("no events in these traces\n")
                                     : "no events could be recovered:\n" + r.warnings;
      r.warnings.clear();
      r.model.reset();
    } else if (!(cancel && cancel->load())) {
      if (progress) progress(0.95f, "building the graph");
      // The timeline index on a second thread while the scene and the story
      // build here: all three only read the model (whose const methods may
      // run on several threads at once). Measured by bench_scale_open.
      std::shared_ptr<render::TimelineIndex> timeline;
      std::exception_ptr timeline_error;
      std::thread indexing([&] {
        try {
          timeline = std::make_shared<render::TimelineIndex>(*r.model);
        } catch (...) {
          timeline_error = std::current_exception();
        }
      });
      struct Join {
        std::thread& t;
        ~Join() { t.join(); }
      };
      {
        const Join join{indexing};
        r.scene = std::make_shared<render::GraphScene>(*r.model);
        r.story = std::make_shared<const render::RunStory>(*r.model);
      }
      if (timeline_error) std::rethrow_exception(timeline_error);
      r.timeline = std::move(timeline);
    }
  } catch (const std::bad_alloc&) {
    r.model.reset();
    r.scene.reset();
    r.story.reset();
    r.timeline.reset();
    r.errors += "out of memory while analysing these traces\n";
  } catch (const std::exception& e) {
    r.model.reset();
    r.scene.reset();
    r.story.reset();
    r.timeline.reset();
    r.errors += fmt::format("cannot analyse these traces: {}\n", e.what());
  }
  release_free_memory();  // Note [Returning freed memory]
  if (progress) progress(1.f, "done");
  return r;
}

TraceLoader::~TraceLoader() {
  if (current_) current_->cancel = true;
  reap(true);
}

void TraceLoader::reap(bool all) {
  for (size_t i = 0; i < threads_.size();) {
    if (all || threads_[i].second->done) {
      if (threads_[i].first.joinable()) threads_[i].first.join();
      threads_.erase(threads_.begin() + static_cast<std::ptrdiff_t>(i));
    } else {
      ++i;
    }
  }
}

void TraceLoader::start(std::vector<std::string> files) {
  if (current_) current_->cancel = true;  // Note [Cancelled loads]
  reap(false);
  current_ = std::make_shared<Load>();
  current_->stage = "starting";
  std::thread thread([load = current_, files = std::move(files)] {
    LoadResult r = load_traces(
        files,
        [&load](float f, const std::string& stage) {
          load->progress = f;
          std::lock_guard<std::mutex> lock(load->mutex);
          load->stage = stage;
        },
        &load->cancel);
    std::lock_guard<std::mutex> lock(load->mutex);
    if (!load->cancel) load->result = std::move(r);
    load->done = true;
  });
  threads_.emplace_back(std::move(thread), current_);
}

std::string TraceLoader::stage() const {
  if (!current_) return {};
  std::lock_guard<std::mutex> lock(current_->mutex);
  return current_->stage;
}

std::optional<LoadResult> TraceLoader::poll() {
  if (!current_ || !current_->done) return std::nullopt;
  reap(false);
  std::lock_guard<std::mutex> lock(current_->mutex);
  std::optional<LoadResult> out = std::move(current_->result);
  current_->result.reset();
  return out;
}

std::optional<LoadResult> TraceLoader::wait() {
  if (!current_) return std::nullopt;
  for (auto& [thread, load] : threads_) {
    if (load == current_ && thread.joinable()) thread.join();
  }
  return poll();
}

}  // namespace hookscope::app
