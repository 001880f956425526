// Reducers in replay: a Reducer's progress at any event, and what one
// step does to it (Note [Reducers in a step]).

#include <algorithm>

#include "analysis/replay_reducers.h"

namespace hookscope::analysis::replay {

using trace::EventKind;

namespace {

BucketStatus bucket_status(const Model& m, const ReducerInfo& r, uint64_t collective,
                           EventIndex e) {
  const uint32_t c = m.find_collective(r.source, r.rank, collective);
  if (c == kNoIndex || m.collectives()[c].end_at > e) return BucketStatus::kReady;
  return m.collectives()[c].status == trace::CollectiveStatus::kOk ? BucketStatus::kReduced
                                                                   : BucketStatus::kFailed;
}

// Note [Buckets of a pass]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's DDP rebuilds its buckets once, after the first backward (Note
// [Rebuilt buckets], app/reducer_buckets.h): a bridge trace's first pass
// reduced 1 bucket where the later ones reduced 3. A Reducer's bucket_sizes
// are the largest each bucket ever was, so a pass is shown with the buckets
// it reduced: those its own mark_ready and bucket_ready events name, in the
// window from its prepare to the next one (what the Reducer had decided at
// its prepare, so looking past the current event tells nothing early). Only
// a pass that was finalized says what it reduced; one that was not (inside
// no_sync, cut by a failure, or still running at the trace's end), or one
// that reduced as many buckets as the Reducer's largest layout, shows that
// layout, as before (our runtime's Reducers keep their buckets: always).
// The bridge knows no bucket's members before the rebuild: a single bucket
// then holds every parameter the pass marked.
//
// A step over a collective's end refreshes every Reducer (Note [Reducers in
// a step]): each pass's sizes are worked out once per thread, then looked up
// (BM_CursorStep/1024/1 took 2-3x as long scanning them again).
const std::vector<uint32_t>& pass_bucket_sizes(const Model& m, ReducerIndex index, EventIndex window,
                                               EventIndex next_prepare) {
  struct Pass {
    const Model* model = nullptr;
    size_t events = 0;  // a grown live model at the same address is another
    EventIndex window = kNever, next = kNever;
    bool largest = false;  // the Reducer's largest layout, not `sizes`
    std::vector<uint32_t> sizes;
  };
  thread_local std::vector<Pass> passes;  // per Reducer: its pass last asked for
  const ReducerInfo& r = m.reducers()[index];
  if (passes.size() < m.reducers().size()) passes.resize(m.reducers().size());
  Pass& c = passes[index];
  if (c.model == &m && c.events == m.num_events() && c.window == window && c.next == next_prepare) {
    return c.largest ? r.bucket_sizes : c.sizes;
  }
  c.model = &m, c.events = m.num_events(), c.window = window, c.next = next_prepare;
  std::vector<uint32_t>& sizes = c.sizes;
  thread_local std::vector<uint32_t> marked;
  sizes.clear();
  marked.clear();
  bool finalized = false;
  uint32_t marks = 0;  // with a bucket or without
  auto it = std::upper_bound(r.events.begin(), r.events.end(), window);
  const auto end = std::lower_bound(it, r.events.end(), next_prepare);
  for (; it != end; ++it) {
    const trace::Event ev = m.event(*it);
    uint64_t bucket = UINT64_MAX;
    uint32_t size = 0;
    if (ev.kind == EventKind::kMarkReady) {
      bucket = ev.as<ev::MarkReady>().bucket;
      ++marks;
    } else if (ev.kind == EventKind::kBucketReady) {
      const auto ready = ev.as<ev::BucketReady>();
      bucket = ready.bucket, size = ready.num_params;
    } else if (ev.kind == EventKind::kBucketsFinalized) {
      finalized = true;
    }
    if (bucket >= r.bucket_sizes.size()) continue;  // the model made no room for it (Note [Model memory bound])
    if (bucket >= sizes.size()) sizes.resize(bucket + 1, 0), marked.resize(bucket + 1, 0);
    if (ev.kind == EventKind::kMarkReady) ++marked[bucket];
    sizes[bucket] = std::max({sizes[bucket], size, marked[bucket]});
  }
  c.largest = !finalized || sizes.empty() || sizes.size() == r.bucket_sizes.size();
  if (c.largest) return r.bucket_sizes;
  if (sizes.size() == 1) sizes[0] = std::max(sizes[0], marks);
  return sizes;
}

// A Reducer's progress in its current backward: everything since its last
// prepare_for_backward up to `e`, into `out` (its vectors reused). For a
// destroyed one, only its last backward index.
void reducer_at(const Model& m, ReducerIndex index, EventIndex e, ReducerAt& out) {
  const ReducerInfo& r = m.reducers()[index];
  out.reducer = index;
  out.live = e < r.destroyed_at;
  out.backward = -1;
  out.finalized = false;
  out.noops = 0;
  out.ready_order.clear();
  out.buckets.clear();
  EventIndex window = r.constructed_at;
  // The last prepare up to e: most often the Reducer's last.
  auto p = r.prepares.end();
  if (!r.prepares.empty() && r.prepares.back() > e) {
    p = std::upper_bound(r.prepares.begin(), r.prepares.end(), e);
  }
  if (p != r.prepares.begin()) {
    window = *(p - 1);
    out.backward = static_cast<int64_t>(r.prepare_backwards[p - 1 - r.prepares.begin()]);
  }
  if (!out.live) return;  // a destroyed Reducer has no backward in progress
  const std::vector<uint32_t>& sizes = pass_bucket_sizes(m, index, window, p != r.prepares.end() ? *p : kNever);
  const size_t num_buckets = sizes.size();
  out.buckets.resize(num_buckets);
  for (uint32_t b = 0; b < num_buckets; ++b) {
    out.buckets[b].index = b;
    out.buckets[b].size = out.buckets[b].pending = sizes[b];
    out.buckets[b].status = BucketStatus::kPending;
  }
  // Per bucket: the collective its last kBucketReady named (UINT64_MAX: none).
  thread_local std::vector<uint64_t> collective;
  collective.assign(num_buckets, UINT64_MAX);
  auto it = std::upper_bound(r.events.begin(), r.events.end(), window);
  const auto end = std::upper_bound(it, r.events.end(), e);
  for (; it != end; ++it) {
    const trace::Event ev = m.event(*it);
    switch (ev.kind) {
      case EventKind::kMarkReady: {
        const auto ready = ev.as<ev::MarkReady>();
        out.ready_order.push_back(static_cast<uint32_t>(ready.param));
        // pending = size - min(size, marked)
        if (ready.bucket < num_buckets && out.buckets[ready.bucket].pending > 0) {
          --out.buckets[ready.bucket].pending;
        }
        break;
      }
      case EventKind::kBucketReady: {
        const auto ready = ev.as<ev::BucketReady>();
        if (ready.bucket < num_buckets) collective[ready.bucket] = ready.collective_id;
        break;
      }
      case EventKind::kBucketsFinalized:
        out.finalized = true;
        break;
      case EventKind::kAutogradHookNoop:
        ++out.noops;
        break;
      default:
        break;
    }
  }
  for (uint32_t b = 0; b < num_buckets; ++b) {
    if (collective[b] != UINT64_MAX) out.buckets[b].status = bucket_status(m, r, collective[b], e);
  }
}

}  // namespace

// Note [Reducers in a step]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// A step over a DDP event refreshes every Reducer constructed so far, and a
// long run has hundreds (the synthetic 10M-event traces rebuild theirs
// every 50 steps), nearly all destroyed: each cost two binary searches and
// a packed event decode (Note [Packed events]), most of a step. A Reducer
// destroyed after its last prepare and destroyed in st already is the same
// at every later event: kept as it is. The ReducerAt records (and their
// vectors) st has are reused: such a step allocates nothing.
// Measured: bench_analysis BM_CursorStep.
void fill_reducers(const Model& m, EventIndex e, State& st) {
  size_t n = 0;
  for (ReducerIndex r = 0; r < m.reducers().size(); ++r) {
    const ReducerInfo& info = m.reducers()[r];
    if (info.constructed_at > e) continue;
    if (n == st.reducers.size()) st.reducers.emplace_back();
    ReducerAt& at = st.reducers[n++];
    if (at.reducer == r && !at.live && e >= info.destroyed_at &&
        (info.prepares.empty() || info.prepares.back() <= info.destroyed_at)) {
      continue;  // destroyed at both indices, after every prepare
    }
    reducer_at(m, r, e, at);
  }
  st.reducers.resize(n);
}

// Note [Reducers in a step], continued: next() and prev() move by one
// event x, and what x does to the Reducers is known from x alone for the
// kinds most steps cross. Only a collective's end changes a bucket's status
// (end_at), only a Reducer's own construction, destruction and prepares
// change its life and window, and x is in one Reducer's events at most. So:
//  * a mark ready, a bucket ready, a no-op fire or a finalize changes the
//    one Reducer whose event it is, by what it adds to its window (forward:
//    O(1)); undone (back), a mark ready or no-op is taken off again, and
//    what cannot be told from the state (a bucket that was over-full, the
//    previous bucket ready, finalized before?) works that Reducer out afresh;
//  * any other kind but those of the next item changes no Reducer;
//  * construction, destruction, a prepare or a collective's end refresh every
//    Reducer (fill_reducers).
// True when st.reducers is done (state index `x` forward, `x - 1` back).
bool step_reducers(const Model& m, State& st, EventIndex x, bool forward) {
  const trace::Event ev = m.event(x);
  switch (ev.kind) {
    case EventKind::kReducerConstructed:
    case EventKind::kReducerDestroyed:
    case EventKind::kPrepareForBackward:
    case EventKind::kCollectiveEnd:
      return false;
    case EventKind::kMarkReady:
    case EventKind::kBucketReady:
    case EventKind::kBucketsFinalized:
    case EventKind::kAutogradHookNoop:
      break;
    default:
      return true;
  }
  const ReducerIndex index = m.reducer_of(m.find_owner(m.source(x), ev.owner));
  if (index == kNoIndex) return false;
  const ReducerInfo& r = m.reducers()[index];
  if (!std::binary_search(r.events.begin(), r.events.end(), x)) return false;
  auto slot = std::lower_bound(st.reducers.begin(), st.reducers.end(), index,
                               [](const ReducerAt& a, ReducerIndex i) { return a.reducer < i; });
  if (slot == st.reducers.end() || slot->reducer != index) return false;
  ReducerAt& at = *slot;
  if (!at.live) return true;  // a destroyed Reducer's window is gone
  const EventIndex e = forward ? x : x - 1;
  const size_t num_buckets = at.buckets.size();
  if (forward) {
    switch (ev.kind) {
      case EventKind::kMarkReady: {
        const auto ready = ev.as<ev::MarkReady>();
        at.ready_order.push_back(static_cast<uint32_t>(ready.param));
        if (ready.bucket < num_buckets && at.buckets[ready.bucket].pending > 0) {
          --at.buckets[ready.bucket].pending;
        }
        return true;
      }
      case EventKind::kBucketReady: {
        const auto ready = ev.as<ev::BucketReady>();
        if (ready.bucket < num_buckets) {
          at.buckets[ready.bucket].status = ready.collective_id == UINT64_MAX
                                                ? BucketStatus::kPending
                                                : bucket_status(m, r, ready.collective_id, e);
        }
        return true;
      }
      case EventKind::kBucketsFinalized:
        at.finalized = true;
        return true;
      default:  // kAutogradHookNoop
        ++at.noops;
        return true;
    }
  }
  if (ev.kind == EventKind::kMarkReady && !at.ready_order.empty() &&
      at.ready_order.back() == static_cast<uint32_t>(ev.as<ev::MarkReady>().param)) {
    const uint32_t b = ev.as<ev::MarkReady>().bucket;
    if (b >= num_buckets) {
      at.ready_order.pop_back();
      return true;
    }
    BucketAt& bucket = at.buckets[b];
    if (bucket.pending > 0 || bucket.size == 0) {  // marked < size, or nothing to count
      at.ready_order.pop_back();
      if (bucket.size > 0) ++bucket.pending;
      return true;
    }
  } else if (ev.kind == EventKind::kAutogradHookNoop && at.noops > 0) {
    --at.noops;
    return true;
  }
  reducer_at(m, index, e, at);  // only this Reducer changed
  return true;
}

}  // namespace hookscope::analysis::replay
