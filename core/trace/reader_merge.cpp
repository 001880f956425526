// Merging the per-thread chunks of a trace file into one stream, in the order
// trace::merge_chunks gives (Note [Event record]): by t_ns, ties by thread,
// each thread's own order kept.

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "trace/event.h"
#include "trace/reader_blocks.h"

namespace hookscope::trace::detail {

namespace {

inline bool before(const Event& a, const Event& b) {
  return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.thread < b.thread;
}

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

// `events` holds the chunks in file order, each chunk one thread's. With
// every thread's events already in time order (the recorder's clock is
// monotonic) a k-way merge gives exactly merge_chunks' stable sort, in
// O(n log k) and one copy; otherwise fall back to that stable sort.
void merge_thread_runs(std::vector<Event>& events, bool all_sorted, size_t threads) {
  if (threads <= 1 && all_sorted) return;
  if (!all_sorted) {
    std::stable_sort(events.begin(), events.end(), before);
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
  auto later = [&](size_t a, size_t b) { return before(head(b), head(a)); };  // min-heap
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
        while (stop < s.end && before(ev[stop], *bound)) ++stop;
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

namespace {

// One writer thread's chunks, decoded one at a time (Note [Decoding straight
// into merged order]).
struct ThreadStream {
  uint32_t thread = 0;
  std::vector<size_t> chunks;  // indices into the chunk list, in file order
  size_t next_chunk = 0;
  std::unique_ptr<Event[]> buf;  // the chunk being merged
  size_t pos = 0, len = 0;
  uint64_t last_t = 0;  // of the previous chunk
};

}  // namespace

bool decode_merged(const std::vector<ChunkRef>& chunks, std::vector<Event>& events,
                   const std::function<void(uint64_t)>& progress) {
  std::unordered_map<uint32_t, size_t> slot;
  std::vector<ThreadStream> streams;
  std::vector<uint32_t> most;  // per stream: the largest chunk
  for (size_t i = 0; i < chunks.size(); ++i) {
    auto [it, fresh] = slot.try_emplace(chunks[i].header.thread, streams.size());
    if (fresh) {
      streams.emplace_back().thread = chunks[i].header.thread;
      most.push_back(0);
    }
    streams[it->second].chunks.push_back(i);
    most[it->second] = std::max(most[it->second], chunks[i].header.count);
  }
  ChunkCodec codec;
  uint64_t decoded_bytes = 0;
  // Decodes stream s's next chunk into its buffer; false when it is bad or
  // its clock goes back (then the caller's slow path takes over).
  auto refill = [&](size_t s) {
    ThreadStream& st = streams[s];
    const ChunkRef& c = chunks[st.chunks[st.next_chunk]];
    if (!st.buf) st.buf.reset(new Event[most[s]]);
    bool sorted = true;
    if (codec.decode(c.header, c.strings_before, st.buf.get(), sorted) != nullptr || !sorted) {
      return false;
    }
    if (st.next_chunk > 0 && st.buf[0].t_ns < st.last_t) return false;
    ++st.next_chunk;
    st.pos = 0;
    st.len = c.header.count;
    st.last_t = st.buf[st.len - 1].t_ns;
    decoded_bytes += c.end - c.offset;
    progress(decoded_bytes);
    return true;
  };
  auto give_up = [&] {
    events.clear();
    return false;
  };
  for (size_t s = 0; s < streams.size(); ++s) {
    if (!refill(s)) return give_up();
  }
  auto head = [&](size_t s) -> const Event& { return streams[s].buf[streams[s].pos]; };
  auto later = [&](size_t a, size_t b) { return before(head(b), head(a)); };  // min-heap
  std::vector<size_t> heap(streams.size());
  for (size_t s = 0; s < heap.size(); ++s) heap[s] = s;
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const size_t s = heap.back();
    heap.pop_back();
    ThreadStream& st = streams[s];
    // Copy this thread's events up to the next thread's head in one run.
    const Event* bound = heap.empty() ? nullptr : &head(heap.front());
    bool more = true;
    for (;;) {
      size_t stop = st.len;
      if (bound != nullptr) {
        stop = st.pos;
        while (stop < st.len && before(st.buf[stop], *bound)) ++stop;
      }
      events.insert(events.end(), st.buf.get() + st.pos, st.buf.get() + stop);
      st.pos = stop;
      if (stop < st.len) break;  // reached the bound inside this chunk
      if (st.next_chunk == st.chunks.size()) {
        more = false;
        break;
      }
      if (!refill(s)) return give_up();
    }
    if (more) {
      heap.push_back(s);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  return true;
}

}  // namespace hookscope::trace::detail
