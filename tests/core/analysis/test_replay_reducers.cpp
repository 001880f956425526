// Replay of Reducers (Note [Reducers in a step]): every ReducerAt that
// Cursor steps, seeks and state_at give equals the one worked out afresh
// from the events themselves, at every event of recorded DDP recovery runs.
#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::EventKind;

namespace {

// The Reducers at event e, from the events as Model::event() decodes them,
// every Reducer worked out afresh: the reference.
std::vector<ReducerAt> reducers_from_events(const Model& m, EventIndex e) {
  std::vector<ReducerAt> out;
  for (ReducerIndex index = 0; index < m.reducers().size(); ++index) {
    const ReducerInfo& r = m.reducers()[index];
    if (r.constructed_at > e) continue;
    ReducerAt at;
    at.reducer = index;
    at.live = e < r.destroyed_at;
    EventIndex window = r.constructed_at;
    for (EventIndex p : r.prepares) {
      if (p > e) break;
      window = p;
      at.backward = static_cast<int64_t>(m.event(p).arg);
    }
    if (at.live) {
      const size_t n = r.bucket_sizes.size();
      std::vector<uint32_t> marked(n, 0);
      std::vector<uint64_t> key(n, UINT64_MAX);
      for (EventIndex i : r.events) {
        if (i <= window || i > e) continue;
        const trace::Event ev = m.event(i);
        if (ev.kind == EventKind::kMarkReady) {
          at.ready_order.push_back(static_cast<uint32_t>(ev.arg));
          if (ev.actor < n) ++marked[ev.actor];
        } else if (ev.kind == EventKind::kBucketReady) {
          if (ev.arg < n) key[ev.arg] = ev.key;
        } else if (ev.kind == EventKind::kBucketsFinalized) {
          at.finalized = true;
        } else if (ev.kind == EventKind::kAutogradHookNoop) {
          ++at.noops;
        }
      }
      for (uint32_t b = 0; b < n; ++b) {
        BucketAt bucket;
        bucket.index = b;
        bucket.size = r.bucket_sizes[b];
        bucket.pending = bucket.size - std::min(bucket.size, marked[b]);
        if (key[b] != UINT64_MAX) {
          const uint32_t c = m.find_collective(r.source, r.rank, key[b]);
          if (c == kNoIndex || m.collectives()[c].end_at > e) {
            bucket.status = BucketStatus::kReady;
          } else {
            bucket.status = m.collectives()[c].status == trace::CollectiveStatus::kOk
                                ? BucketStatus::kReduced
                                : BucketStatus::kFailed;
          }
        }
        at.buckets.push_back(bucket);
      }
    }
    out.push_back(std::move(at));
  }
  return out;
}

// What the walk saw, so that the test proves it covered what it claims.
struct Seen {
  int64_t max_backward = -1;
  size_t max_buckets = 0;
  size_t max_ready = 0;
  bool finalized = false, reduced = false, ready = false, failed = false, destroyed = false;
  void add(const std::vector<ReducerAt>& reducers) {
    for (const ReducerAt& r : reducers) {
      max_backward = std::max(max_backward, r.backward);
      max_buckets = std::max(max_buckets, r.buckets.size());
      max_ready = std::max(max_ready, r.ready_order.size());
      finalized = finalized || r.finalized;
      destroyed = destroyed || !r.live;
      for (const BucketAt& b : r.buckets) {
        reduced = reduced || b.status == BucketStatus::kReduced;
        ready = ready || b.status == BucketStatus::kReady;
        failed = failed || b.status == BucketStatus::kFailed;
      }
    }
  }
};

// Every event forward with next(), every event back with prev(), state_at
// at every 3rd event and seeks of every length around: each Reducer equal
// to the reference.
Seen check_every_event(const Model& m) {
  const size_t n = m.num_events();
  std::vector<std::vector<ReducerAt>> want(n);
  Seen seen;
  for (size_t i = 0; i < n; ++i) {
    want[i] = reducers_from_events(m, static_cast<EventIndex>(i));
    seen.add(want[i]);
  }
  Cursor c(m);
  for (size_t i = 0;; ++i) {
    REQUIRE(c.index() == i);
    CAPTURE(i);
    REQUIRE(c.state().reducers == want[i]);
    if (i % 3 == 0) REQUIRE(m.state_at(i).reducers == want[i]);
    if (!c.next()) break;
  }
  REQUIRE(c.index() == n - 1);
  for (size_t i = n - 1; c.prev();) {
    --i;
    CAPTURE(i);
    REQUIRE(c.index() == i);
    REQUIRE(c.state().reducers == want[i]);
  }
  std::mt19937_64 rng(11);
  for (int k = 0; k < 400; ++k) {
    const size_t to = k % 2 ? rng() % n : std::min(n - 1, c.index() + rng() % 600);
    CAPTURE(to);
    c.seek(to);
    REQUIRE(c.state().reducers == want[to]);
  }
  return seen;
}

Model record_recovery(const std::string& fail_point, int recoveries) {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 6;
  o.recoveries = recoveries;
  o.fail_point = fail_point;
  return Model(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }),
               ModelOptions{256, 8.0});
}

}  // namespace

TEST_CASE("Reducer replay: every field at every event of a recorded recovery run") {
  for (const std::string fail_point : {"hook", "collective"}) {
    CAPTURE(fail_point);
    const Model m = record_recovery(fail_point, 2);
    REQUIRE(m.reducers().size() >= 2);  // one per rank, and again after each recovery
    REQUIRE_FALSE(m.events_of_kind(EventKind::kFailure).empty());
    size_t reducer_events = 0, prepares = 0;
    for (const ReducerInfo& r : m.reducers()) {
      reducer_events += r.events.size();
      prepares += r.prepares.size();
      // Each prepare's backward index, kept beside it, is its event's arg.
      REQUIRE(r.prepare_backwards.size() == r.prepares.size());
      for (size_t k = 0; k < r.prepares.size(); ++k) {
        CHECK(r.prepare_backwards[k] == m.event(r.prepares[k]).arg);
      }
    }
    MESSAGE(fail_point, ": ", m.num_events(), " events, ", m.reducers().size(), " Reducers, ",
            reducer_events, " Reducer events, ", prepares, " prepares (",
            8 * prepares, " B of backward indices, model ", m.memory_bytes(), " B)");
    const Seen seen = check_every_event(m);
    CHECK(seen.max_backward >= 3);
    CHECK(seen.max_buckets >= 2);
    CHECK(seen.max_ready >= 2);
    CHECK(seen.finalized);
    CHECK(seen.reduced);
    CHECK(seen.ready);
    CHECK(seen.destroyed);
    if (fail_point == "collective") CHECK(seen.failed);
  }
}

// A kBucketReady on another rank than its Reducer's names a collective that
// only a later event of the Reducer's rank creates: find_collective() of the
// Reducer's rank finds it; a backward index past 32 bits; a key of no
// collective; a bucket past 32 bits.
TEST_CASE("Reducer replay: a bucket's collective named from another rank, created later") {
  trace::TraceData t;
  t.header.world_size = 2;
  t.strings = {""};
  uint64_t time = 0;
  auto add = [&](EventKind kind, uint16_t rank, uint64_t key, uint64_t arg, uint32_t actor,
                 uint8_t sub = 0) {
    trace::Event e;
    e.t_ns = ++time;
    e.kind = kind;
    e.rank = rank;
    e.key = key;
    e.arg = arg;
    e.owner = 7;
    e.actor = actor;
    e.sub = sub;
    t.events.push_back(e);
  };
  add(EventKind::kReducerConstructed, 0, 0, 2, 2);
  add(EventKind::kPrepareForBackward, 0, 0, (uint64_t{5} << 32) | 3, 0);  // backward past 32 bits
  add(EventKind::kMarkReady, 0, 0, 0, 0);
  add(EventKind::kBucketReady, 1, 42, 0, 1);                 // rank 1: not the Reducer's
  add(EventKind::kBucketReady, 0, UINT64_MAX, 1, 1);         // names no collective
  add(EventKind::kBucketReady, 0, 43, uint64_t{1} << 33, 1);  // no such bucket
  add(EventKind::kCollectiveBegin, 0, 42, 0, 0);
  add(EventKind::kCollectiveEnd, 0, 42, 0, 0,
      static_cast<uint8_t>(trace::CollectiveStatus::kTimeout));
  // Destroyed, then (hostile) prepared again: a destroyed Reducer's backward
  // is its last prepare's, even one after its destruction.
  add(EventKind::kReducerDestroyed, 0, 0, 0, 0);
  add(EventKind::kPrepareForBackward, 0, 0, 9, 0);
  add(EventKind::kMarkReady, 0, 0, 1, 1);
  const Model m(std::move(t));
  REQUIRE(m.reducers().size() == 1);
  const size_t n = m.num_events();
  Cursor c(m);
  for (size_t i = 0; i < n; ++i) {
    CAPTURE(i);
    const std::vector<ReducerAt> want = reducers_from_events(m, static_cast<EventIndex>(i));
    CHECK(c.state().reducers == want);
    CHECK(m.state_at(i).reducers == want);
    c.next();
  }
  for (size_t i = n; i-- > 0;) {  // and back
    CAPTURE(i);
    CHECK(c.state().reducers == reducers_from_events(m, static_cast<EventIndex>(i)));
    c.prev();
  }
  const State ended = m.state_at(7);  // the collective's end
  REQUIRE(ended.reducers.size() == 1);
  CHECK(ended.reducers[0].backward == static_cast<int64_t>((uint64_t{5} << 32) | 3));
  REQUIRE(ended.reducers[0].buckets.size() == 2);
  CHECK(ended.reducers[0].buckets[0].status == BucketStatus::kFailed);
  CHECK(ended.reducers[0].buckets[1].status == BucketStatus::kPending);
  CHECK(m.state_at(5).reducers[0].buckets[0].status == BucketStatus::kReady);
  CHECK_FALSE(m.state_at(8).reducers[0].live);
  CHECK(m.state_at(8).reducers[0].backward == static_cast<int64_t>((uint64_t{5} << 32) | 3));
  CHECK(m.state_at(9).reducers[0].backward == 9);
  CHECK(m.state_at(10).reducers[0].buckets.empty());
}

// Note [Buckets of a pass]: a trace shaped as the torch bridge writes one
// (4 parameters, 1 bucket logged at construction and reduced by the first
// backward, members unknown; rebuilt into 3 from the second on; a no_sync
// pass; a pass cut after its first bucket): each pass shows the buckets it
// reduced, stepping, stepping back and seeking alike.
TEST_CASE("Reducer replay: a pass shows the buckets it reduced, not the Reducer's largest layout") {
  TraceBuilder b;
  std::vector<uint64_t> acc;
  for (int p = 0; p < 4; ++p) acc.push_back(b.accumulator("w" + std::to_string(p)));
  const uint32_t owner = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
  b.reducer_constructed(owner, 4, 1);
  std::vector<EventIndex> mid;  // per pass: an event inside it, after its first mark
  auto pass = [&](uint64_t n, const std::vector<uint32_t>& sizes, bool finalized, bool members_known) {
    b.prepare_for_backward(owner, n);
    uint32_t p = 0;
    for (uint32_t bucket = 0; bucket < sizes.size(); ++bucket) {
      for (uint32_t k = 0; k < sizes[bucket]; ++k, ++p) {
        b.mark_ready(owner, acc[3 - p], 3 - p, members_known ? bucket : trace::kNoBucket);
        if (p == 0) mid.push_back(static_cast<EventIndex>(b.size() - 1));
      }
      b.bucket_ready(owner, bucket, members_known ? sizes[bucket] : 0);
    }
    if (finalized) b.buckets_finalized(owner, n);
  };
  pass(1, {4}, true, false);
  pass(2, {2, 1, 1}, true, false);
  pass(3, {2, 1, 1}, true, true);
  b.prepare_for_backward(owner, 4);  // under no_sync: nothing reduced
  mid.push_back(static_cast<EventIndex>(b.size() - 1));
  pass(5, {2}, false, true);  // a failure after the first bucket
  const Model m(b.take());
  REQUIRE(m.reducers().size() == 1);
  REQUIRE(m.reducers()[0].bucket_sizes == std::vector<uint32_t>{2, 1, 1});
  auto sizes = [](const State& st) {
    std::vector<uint32_t> out;
    for (const BucketAt& bucket : st.reducers.at(0).buckets) out.push_back(bucket.size);
    return out;
  };
  const std::vector<std::vector<uint32_t>> want = {{4}, {2, 1, 1}, {2, 1, 1}, {2, 1, 1}, {2, 1, 1}};
  REQUIRE(mid.size() == want.size());
  for (size_t k = 0; k < mid.size(); ++k) {
    CAPTURE(k);
    CHECK(sizes(m.state_at(mid[k])) == want[k]);
  }
  // The first pass's bucket empties as its parameters are marked: 4 pending at its prepare.
  CHECK(m.state_at(mid[0] - 1).reducers.at(0).buckets.at(0).pending == 4);
  // Stepping forward and back gives what state_at gives, at every event.
  Cursor c(m);
  do {
    CAPTURE(c.index());
    REQUIRE(c.state().reducers == m.state_at(c.index()).reducers);
  } while (c.next());
  while (c.prev()) REQUIRE(c.state().reducers == m.state_at(c.index()).reducers);
}
