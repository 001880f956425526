// Merging the per-thread chunks of a trace file into one stream, in the order
// trace::merge_chunks gives (Note [Event record]): by t_ns, ties by thread,
// each thread's own order kept.

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include "trace/event.h"
#include "trace/reader_blocks.h"

namespace hookscope::trace::detail {

namespace {

struct Span {
  size_t begin, end;
};

// One thread's events: its spans of `events`, in file order.
struct Cursor {
  std::vector<Span> spans;
  size_t span = 0;
  size_t pos = 0;
};

}  // namespace

void reserve_events(std::vector<Event>& events, size_t n) {
  events.reserve(n);
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr uintptr_t kHuge = uintptr_t{2} << 20;
  if (n * sizeof(Event) >= 4 * kHuge) {
    const auto begin = (reinterpret_cast<uintptr_t>(events.data()) + kHuge - 1) & ~(kHuge - 1);
    const auto end = reinterpret_cast<uintptr_t>(events.data() + n) & ~(kHuge - 1);
    if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
  }
#endif
}

void prefault_events(std::vector<Event>& events, size_t begin, size_t end) {
  constexpr size_t kPage = 4096;
  // Raw bytes of reserved capacity: no Event lives there yet.
  auto* bytes = reinterpret_cast<volatile unsigned char*>(events.data() + begin);
  const size_t size = (end - begin) * sizeof(Event);
  for (size_t at = 0; at < size; at += kPage) bytes[at] = 0;
}

void run_parallel(unsigned n, const std::function<void(unsigned)>& fn, std::atomic<bool>* stop) {
  std::exception_ptr error;
  std::mutex error_mutex;
  auto guarded = [&](unsigned i) {
    try {
      fn(i);
    } catch (...) {
      if (stop) stop->store(true);
      std::lock_guard<std::mutex> lock(error_mutex);
      if (!error) error = std::current_exception();
    }
  };
  std::vector<std::thread> helpers;
  std::vector<unsigned> here{0};
  for (unsigned i = 1; i < n; ++i) {
    try {
      helpers.emplace_back(guarded, i);
    } catch (const std::system_error&) {  // no more threads: run it here
      here.push_back(i);
    }
  }
  for (unsigned i : here) guarded(i);
  for (std::thread& h : helpers) h.join();
  if (error) std::rethrow_exception(error);
}

// `events` holds the chunks in file order, each chunk one thread's. With
// every thread's events already in time order (the recorder's clock is
// monotonic) a k-way merge gives exactly merge_chunks' stable sort, in
// O(n log k) and one copy; otherwise fall back to that stable sort.
void merge_thread_runs(std::vector<Event>& events, bool all_sorted, size_t threads) {
  if (threads <= 1 && all_sorted) return;
  if (!all_sorted) {
    std::stable_sort(events.begin(), events.end(), merge_before);
    return;
  }
  std::unordered_map<uint32_t, size_t> slot;
  std::vector<Cursor> cursors;
  for (size_t i = 0; i < events.size();) {
    const uint32_t thread = events[i].thread;
    size_t j = i + 1;
    while (j < events.size() && events[j].thread == thread) ++j;
    auto [it, fresh] = slot.try_emplace(thread, cursors.size());
    if (fresh) cursors.emplace_back();
    cursors[it->second].spans.push_back({i, j});
    i = j;
  }
  for (Cursor& c : cursors) c.pos = c.spans[0].begin;

  const Event* ev = events.data();
  auto head = [&](size_t c) -> const Event& { return ev[cursors[c].pos]; };
  auto later = [&](size_t a, size_t b) { return merge_before(head(b), head(a)); };  // min-heap
  std::vector<size_t> heap(cursors.size());
  for (size_t c = 0; c < heap.size(); ++c) heap[c] = c;
  std::make_heap(heap.begin(), heap.end(), later);

  std::vector<Event> out;
  reserve_events(out, events.size());
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const size_t c = heap.back();
    heap.pop_back();
    Cursor& cur = cursors[c];
    // Copy this thread's events up to the next thread's head in one run.
    const Event* bound = heap.empty() ? nullptr : &head(heap.front());
    bool done = false;
    for (;;) {
      const Span& s = cur.spans[cur.span];
      size_t stop = cur.pos;
      if (bound == nullptr) {
        stop = s.end;
      } else {
        while (stop < s.end && merge_before(ev[stop], *bound)) ++stop;
      }
      out.insert(out.end(), ev + cur.pos, ev + stop);
      cur.pos = stop;
      if (stop < s.end) break;  // reached the bound inside this span
      if (++cur.span == cur.spans.size()) {
        done = true;
        break;
      }
      cur.pos = cur.spans[cur.span].begin;
    }
    if (!done) {
      heap.push_back(c);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  events.swap(out);
}

}  // namespace hookscope::trace::detail
