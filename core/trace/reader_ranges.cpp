// Decoding the chunks of several writer threads straight into merged order,
// on one thread or on several, each merging one time range (Note [Decoding
// straight into merged order]).

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/reader_blocks.h"

namespace hookscope::trace::detail {

namespace {

// One writer thread's chunks.
struct Stream {
  std::vector<size_t> chunks;   // indices into the chunk list, in file order
  std::vector<uint64_t> start;  // its events before chunks[k]; back(): all its events
  std::vector<uint64_t> hint;   // ChunkCodec::first_time_hint of chunks[k]
  uint32_t most = 0;            // events of its largest chunk
};

// What decoding a chunk showed, written only by the range that holds the
// chunk's first event (so by exactly one thread).
struct ChunkSeen {
  uint64_t first_t = 0, last_t = 0;
  bool ok = false;  // decoded, valid and in time order within
};

struct Plan {
  explicit Plan(const std::vector<ChunkRef>& c) : chunks(c), seen(c.size()) {}
  const std::vector<ChunkRef>& chunks;
  std::vector<Stream> streams;
  uint32_t most = 0;  // events of the largest chunk
  std::vector<ChunkSeen> seen;  // per chunk
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> decoded_bytes{0};
};

// The first i in [0, n) with !below(i), for `below` true then false; for a
// predicate that is not (hostile data), some i in [0, n].
template <class Below>
size_t first_not_below(size_t n, Below below) {
  size_t a = 0, b = n;
  while (a < b) {
    const size_t mid = a + (b - a) / 2;
    if (below(mid)) {
      a = mid + 1;
    } else {
      b = mid;
    }
  }
  return a;
}

// Merges every stream s's events [lo[s], hi[s]) in merge order, passing
// runs of them to emit(const Event*, size_t). False when a chunk is bad or
// out of time order (within, or after the chunk decoded before it here), or
// when another range failed.
template <class Emit>
bool merge_range(Plan& plan, const uint64_t* lo, const uint64_t* hi,
                 const std::function<void(uint64_t)>* progress, Emit&& emit) {
  struct Cursor {
    size_t s = 0;
    size_t k = 0;  // the chunk being merged, an index into its stream
    std::unique_ptr<Event[]> buf;
    size_t pos = 0, len = 0;
    bool loaded = false;
    uint64_t last_t = 0;  // of the chunk decoded before
  };
  ChunkCodec codec;
  std::vector<Cursor> cur;
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    if (lo[s] < hi[s]) cur.emplace_back().s = s;
  }
  // Decodes chunk k of c's stream into c's buffer.
  auto load = [&](Cursor& c, size_t k) {
    if (plan.failed.load(std::memory_order_relaxed)) return false;
    const Stream& st = plan.streams[c.s];
    const ChunkRef& ref = plan.chunks[st.chunks[k]];
    if (!c.buf) c.buf.reset(new Event[st.most]);
    bool sorted = true;
    const char* bad = codec.decode(ref.header, ref.strings_before, c.buf.get(), sorted);
    const uint32_t n = ref.header.count;
    if (bad != nullptr || !sorted || (c.loaded && c.buf[0].t_ns < c.last_t)) {
      plan.failed.store(true);
      return false;
    }
    if (st.start[k] >= lo[c.s]) {  // this range holds its first event
      plan.seen[st.chunks[k]] = {c.buf[0].t_ns, c.buf[n - 1].t_ns, true};
      const uint64_t bytes = ref.end - ref.offset;
      const uint64_t done = plan.decoded_bytes.fetch_add(bytes, std::memory_order_relaxed) + bytes;
      if (progress) (*progress)(done);
    }
    c.loaded = true;
    c.last_t = c.buf[n - 1].t_ns;
    c.k = k;
    c.pos = lo[c.s] > st.start[k] ? lo[c.s] - st.start[k] : 0;
    c.len = std::min<uint64_t>(n, hi[c.s] - st.start[k]);
    return true;
  };
  for (Cursor& c : cur) {
    const std::vector<uint64_t>& start = plan.streams[c.s].start;
    const size_t k = std::upper_bound(start.begin(), start.end(), lo[c.s]) - start.begin() - 1;
    if (!load(c, k)) return false;
  }
  auto head = [&](size_t i) -> const Event& { return cur[i].buf[cur[i].pos]; };
  auto later = [&](size_t a, size_t b) { return merge_before(head(b), head(a)); };  // min-heap
  std::vector<size_t> heap(cur.size());
  for (size_t i = 0; i < heap.size(); ++i) heap[i] = i;
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const size_t i = heap.back();
    heap.pop_back();
    Cursor& c = cur[i];
    // Pass this thread's events up to the next thread's head as one run.
    const Event* bound = heap.empty() ? nullptr : &head(heap.front());
    bool more = true;
    for (;;) {
      size_t stop = c.len;
      if (bound != nullptr) {
        stop = c.pos;
        while (stop < c.len && merge_before(c.buf[stop], *bound)) ++stop;
      }
      emit(c.buf.get() + c.pos, stop - c.pos);
      c.pos = stop;
      if (stop < c.len) break;  // reached the bound inside this chunk
      const Stream& st = plan.streams[c.s];
      if (c.k + 1 == st.chunks.size() || st.start[c.k + 1] >= hi[c.s]) {
        more = false;
        break;
      }
      if (!load(c, c.k + 1)) return false;
    }
    if (more) {
      heap.push_back(i);
      std::push_heap(heap.begin(), heap.end(), later);
    }
  }
  return true;
}

// Times that cut the merged events into `parts` ranges of about as many
// events, from the chunks' first times: cut j - 1 starts range j.
std::vector<uint64_t> time_cuts(const std::vector<ChunkRef>& chunks, uint64_t total,
                                unsigned parts) {
  std::vector<std::pair<uint64_t, uint32_t>> by_time(chunks.size());
  for (size_t i = 0; i < chunks.size(); ++i) {
    by_time[i] = {ChunkCodec::first_time_hint(chunks[i].header), chunks[i].header.count};
  }
  std::sort(by_time.begin(), by_time.end());
  std::vector<uint64_t> cuts;
  uint64_t before = 0;
  size_t i = 0;
  for (unsigned j = 1; j < parts; ++j) {
    const uint64_t want = total / parts * j;
    while (i < by_time.size() && before + by_time[i].second <= want) before += by_time[i++].second;
    cuts.push_back(i < by_time.size() ? by_time[i].first : UINT64_MAX);
  }
  return cuts;
}

// Where events at time `cut` or later start in each stream (starts[s]): in
// the last chunk whose header says it starts before `cut`, decoded.
void find_starts(Plan& plan, uint64_t cut, uint64_t* starts) {
  ChunkCodec codec;
  std::unique_ptr<Event[]> buf(new Event[plan.most]);
  for (size_t s = 0; s < plan.streams.size(); ++s) {
    const Stream& st = plan.streams[s];
    const size_t after =
        first_not_below(st.hint.size(), [&](size_t k) { return st.hint[k] < cut; });
    if (after == 0) {
      starts[s] = 0;
      continue;
    }
    const size_t k = after - 1;
    const ChunkRef& ref = plan.chunks[st.chunks[k]];
    bool sorted = true;
    if (codec.decode(ref.header, ref.strings_before, buf.get(), sorted) != nullptr) {
      plan.failed.store(true);
      return;
    }
    starts[s] = st.start[k] + first_not_below(ref.header.count,
                                              [&](size_t i) { return buf[i].t_ns < cut; });
  }
}

// The events of decode_merged go to an array (VectorOut) or a packed store
// (PackedOut). Out: prefault(j, begin, end) while the ranges are found;
// start(offset) with each range's first index (parts + 1 of them, the last
// the total); writer(j) for range j's thread, a callable (const Event*, n);
// append(p, n) with a single range; finish() after; clear() on giving up.
struct VectorOut {
  std::vector<Event>& events;
  void prefault(unsigned, uint64_t begin, uint64_t end) { prefault_events(events, begin, end); }
  void start(const std::vector<uint64_t>& offset) { events.resize(offset.back()); }
  auto writer(unsigned j, const std::vector<uint64_t>& offset) {
    return [out = events.data() + offset[j]](const Event* p, size_t n) mutable {
      std::memcpy(static_cast<void*>(out), p, n * sizeof(Event));
      out += n;
    };
  }
  void append(const Event* p, size_t n) { events.insert(events.end(), p, p + n); }
  void finish() {}
  void clear() { events.clear(); }
};

struct PackedOut {
  PackedEvents& packed;
  std::vector<PackedEventsBuilder> parts{};
  void prefault(unsigned, uint64_t, uint64_t) {}
  void start(const std::vector<uint64_t>& offset) {
    parts.clear();
    for (size_t j = 0; j + 1 < offset.size(); ++j) parts.emplace_back(offset[j]);
  }
  auto writer(unsigned j, const std::vector<uint64_t>&) {
    return [b = &parts[j]](const Event* p, size_t n) { b->append(p, n); };
  }
  void append(const Event* p, size_t n) {
    if (parts.empty()) parts.emplace_back(0);
    parts[0].append(p, n);
  }
  void finish() { packed = join_packed(parts); }
  void clear() {
    parts.clear();
    packed = PackedEvents();
  }
};

template <class Out>
bool decode_merged_into(const std::vector<ChunkRef>& chunks, unsigned threads, Out& sink,
                        const std::function<void(uint64_t)>& progress) {
  Plan plan(chunks);
  std::unordered_map<uint32_t, size_t> slot;
  uint64_t total = 0;
  for (size_t i = 0; i < chunks.size(); ++i) {
    const ChunkHeader& h = chunks[i].header;
    auto [it, fresh] = slot.try_emplace(h.thread, plan.streams.size());
    if (fresh) plan.streams.emplace_back().start.push_back(0);
    Stream& st = plan.streams[it->second];
    st.chunks.push_back(i);
    st.start.push_back(st.start.back() + h.count);
    st.hint.push_back(ChunkCodec::first_time_hint(h));
    st.most = std::max(st.most, h.count);
    plan.most = std::max(plan.most, h.count);
    total += h.count;
  }
  const size_t n_streams = plan.streams.size();
  // Each range decodes into a buffer per stream: all ranges' buffers
  // together hold no more events than the trace (many writers with big
  // chunks get fewer ranges).
  uint64_t buffered = 0;
  for (const Stream& st : plan.streams) buffered += st.most;
  const unsigned parts = static_cast<unsigned>(
      std::clamp<uint64_t>(std::min<uint64_t>(threads, total / buffered), 1, chunks.size()));
  // Row j of `lo`: where range j starts in each stream; row `parts`: the ends.
  std::vector<uint64_t> lo((parts + 1) * n_streams, 0);
  for (size_t s = 0; s < n_streams; ++s) lo[parts * n_streams + s] = plan.streams[s].start.back();
  auto give_up = [&] {
    sink.clear();
    return false;
  };

  if (parts == 1) {
    auto append = [&](const Event* p, size_t n) { sink.append(p, n); };
    if (!merge_range(plan, lo.data(), lo.data() + n_streams, &progress, append)) return give_up();
  } else {
    const std::vector<uint64_t> cuts = time_cuts(chunks, total, parts);
    run_parallel(
        parts,
        [&](unsigned j) {
          const uint64_t part = total / parts;
          sink.prefault(j, part * j, j + 1 == parts ? total : part * (j + 1));
          if (j > 0) find_starts(plan, cuts[j - 1], &lo[j * n_streams]);
        },
        &plan.failed);
    if (plan.failed.load()) return give_up();
    std::vector<uint64_t> offset(parts + 1, 0);  // of each range's slice of `events`
    for (unsigned j = 0; j <= parts; ++j) {
      for (size_t s = 0; s < n_streams; ++s) {
        const uint64_t at = lo[j * n_streams + s];
        if (j > 0 && at < lo[(j - 1) * n_streams + s]) return give_up();  // ranges overlap
        offset[j] += at;
      }
    }
    sink.start(offset);
    // Each range's first and last event, to check that ranges follow each other.
    std::vector<Event> first(parts), last(parts);
    run_parallel(
        parts,
        [&](unsigned j) {
          auto out = sink.writer(j, offset);
          bool any = false;
          auto write = [&](const Event* p, size_t n) {
            if (n == 0) return;
            if (!any) first[j] = p[0];
            any = true;
            last[j] = p[n - 1];
            out(p, n);
          };
          merge_range(plan, &lo[j * n_streams], &lo[(j + 1) * n_streams],
                      j == 0 ? &progress : nullptr, write);
        },
        &plan.failed);
    if (plan.failed.load()) return give_up();
    const Event* before = nullptr;  // the last event of the ranges so far
    for (unsigned j = 0; j < parts; ++j) {
      if (offset[j + 1] == offset[j]) continue;  // an empty range
      if (before != nullptr && merge_before(first[j], *before)) return give_up();
      before = &last[j];
    }
  }
  // No thread's clock goes back from one of its chunks to the next.
  for (const Stream& st : plan.streams) {
    for (size_t k = 0; k < st.chunks.size(); ++k) {
      const ChunkSeen& seen = plan.seen[st.chunks[k]];
      if (!seen.ok || (k > 0 && seen.first_t < plan.seen[st.chunks[k - 1]].last_t)) {
        return give_up();
      }
    }
  }
  sink.finish();
  return true;
}

}  // namespace

bool decode_merged(const std::vector<ChunkRef>& chunks, unsigned threads,
                   std::vector<Event>& events, const std::function<void(uint64_t)>& progress) {
  VectorOut out{events};
  return decode_merged_into(chunks, threads, out, progress);
}

bool decode_merged(const std::vector<ChunkRef>& chunks, unsigned threads, PackedEvents& events,
                   const std::function<void(uint64_t)>& progress) {
  PackedOut out{events};
  return decode_merged_into(chunks, threads, out, progress);
}


}  // namespace hookscope::trace::detail
