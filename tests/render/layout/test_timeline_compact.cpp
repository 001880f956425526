// Note [Compact timeline index]: the index keeps no per-event copies of the
// model's times and classes, yet answers what the full arrays did: the same
// events, times and classes per track, the same marks and fold colours, and
// a bounded number of bytes per event.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <tuple>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "render/layout/timeline_index.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"
#include "trace/packed_events.h"
#include "trace/recorder.h"

using namespace hookscope;
using namespace hookscope::render;

namespace {

// The full arrays the index once kept, made straight from the model.
struct FullTrack {
  std::vector<int64_t> time;
  std::vector<uint32_t> event;
  std::vector<uint8_t> cls;
};

std::map<std::tuple<uint16_t, uint32_t, uint32_t>, FullTrack> full_tracks(const analysis::Model& m) {
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, FullTrack> out;
  for (size_t i = 0; i < m.num_events(); ++i) {
    const trace::Event e = m.event(i);
    FullTrack& t = out[{e.rank, m.source(i), e.thread}];
    t.time.push_back(m.time_ns(i));
    t.event.push_back(static_cast<uint32_t>(i));
    t.cls.push_back(static_cast<uint8_t>(tick_class(e.kind)));
  }
  for (auto& entry : out) {  // stable by time, as the index sorts an unsorted clock
    FullTrack& t = entry.second;  // not a binding: clang 14 cannot capture one in a lambda
    std::vector<size_t> order(t.time.size());
    for (size_t k = 0; k < order.size(); ++k) order[k] = k;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return t.time[a] < t.time[b]; });
    FullTrack s;
    for (size_t k : order) {
      s.time.push_back(t.time[k]);
      s.event.push_back(t.event[k]);
      s.cls.push_back(t.cls[k]);
    }
    t = std::move(s);
  }
  return out;
}

// Note [Timeline folding] on plain arrays: the walk the index did before.
std::vector<std::pair<size_t, size_t>> reference_marks(const std::vector<int64_t>& time, int64_t t0, int64_t t1,
                                                       int64_t min_gap) {
  std::vector<std::pair<size_t, size_t>> out;
  min_gap = std::max<int64_t>(min_gap, 1);
  auto i = std::lower_bound(time.begin(), time.end(), sub_sat(t0, min_gap));
  const auto end = std::upper_bound(i, time.end(), t1);
  while (i < end) {
    auto j = std::lower_bound(i + 1, end, add_sat(*i, min_gap));
    while (j < end && static_cast<uint64_t>(*j) - static_cast<uint64_t>(*(j - 1)) < static_cast<uint64_t>(min_gap)) {
      j = std::lower_bound(j + 1, end, add_sat(*j, min_gap));
    }
    out.push_back({static_cast<size_t>(i - time.begin()), static_cast<size_t>(j - time.begin())});
    i = j;
  }
  return out;
}

// Every track of `m`'s index against the full arrays: events, times, classes,
// marks at several zooms, and fold colours.
void check_against_full(const analysis::Model& m, uint64_t seed) {
  const TimelineIndex index(m);
  const auto full = full_tracks(m);
  REQUIRE(index.tracks().size() == full.size());
  CHECK(index.num_events() == m.num_events());
  std::mt19937_64 gen(seed);
  for (const TimelineTrack& t : index.tracks()) {
    const auto it = full.find({t.rank, t.source, t.thread});
    REQUIRE(it != full.end());
    const FullTrack& f = it->second;
    REQUIRE(t.size() == f.time.size());
    bool same = true;
    for (size_t k = 0; k < t.size(); ++k) {
      same &= t.event(k) == f.event[k] && t.time(k) == f.time[k] && t.cls(k) == f.cls[k];
    }
    CHECK(same);
    const int64_t lo = f.time.front(), hi = f.time.back();
    for (int trial = 0; trial < 40; ++trial) {
      const int64_t span = std::max<int64_t>(hi - lo, 1);
      int64_t t0 = lo + static_cast<int64_t>(gen() % static_cast<uint64_t>(span));
      int64_t t1 = t0 + static_cast<int64_t>(gen() % static_cast<uint64_t>(span)) + 1;
      if (trial % 4 == 0) t0 = lo - 10, t1 = hi + 10;  // the whole track, fitted
      const int64_t px = 200 + static_cast<int64_t>(gen() % 1800);
      const int64_t gap = std::max<int64_t>(1, 3 * (t1 - t0) / px);
      std::vector<std::pair<size_t, size_t>> marks;
      for_each_mark(t, t0, t1, gap, [&](TickMark mk) { marks.push_back({mk.first, mk.last}); });
      CHECK(marks == reference_marks(f.time, t0, t1, gap));
      bool colours = true;
      for (const auto& [a, b] : marks) {
        uint8_t expect = 0;
        for (size_t k = a; k < b; ++k) expect |= static_cast<uint8_t>(1u << f.cls[k]);
        colours &= t.classes(a, b) == expect;
      }
      CHECK(colours);
    }
    // Collective spans (their key and op looked up apart from the block
    // decode): each begins at a collective_begin with its op, and ends at the
    // collective_end of the same id, failed when that end was not ok.
    size_t collective_spans = 0, begins = 0;
    for (size_t k = 0; k < t.size(); ++k) begins += m.event(t.event(k)).kind == trace::EventKind::kCollectiveBegin;
    bool collectives_ok = true;
    for (const auto& lane : t.lanes) {
      for (const TimelineSpan& span : lane) {
        if (span.kind != SpanKind::kCollective) continue;
        ++collective_spans;
        const trace::Event b = m.event(span.begin_event);
        collectives_ok &= b.kind == trace::EventKind::kCollectiveBegin && span.op == b.sub;
        if (span.open()) continue;
        const trace::Event e = m.event(span.end_event);
        collectives_ok &= e.kind == trace::EventKind::kCollectiveEnd && e.key == b.key &&
                          span.failed == (e.sub != 0);
      }
    }
    CHECK(collectives_ok);
    CHECK(collective_spans == begins);
    // Searches from anywhere, for times present, absent and beyond both ends.
    for (int trial = 0; trial < 200; ++trial) {
      const size_t from = gen() % (t.size() + 1), to = from + gen() % (t.size() + 1 - from);
      const int64_t x = trial % 3 == 0 ? f.time[gen() % f.time.size()]
                                       : lo - 5 + static_cast<int64_t>(gen() % static_cast<uint64_t>(hi - lo + 10));
      const auto b = f.time.begin();
      CHECK(t.lower_bound(from, to, x) == static_cast<size_t>(std::lower_bound(b + from, b + to, x) - b));
      CHECK(t.upper_bound(from, to, x) == static_cast<size_t>(std::upper_bound(b + from, b + to, x) - b));
    }
  }
}

}  // namespace

TEST_CASE("EventColumn: every encoding reads back what went in") {
  std::mt19937_64 gen(3);
  auto check = [](const std::vector<uint32_t>& v) {
    EventColumn c;
    for (uint32_t x : v) c.push_back(x);
    c.finish();
    REQUIRE(c.size() == v.size());
    bool same = true;
    for (size_t k = 0; k < v.size(); ++k) same &= c[k] == v[k];
    CHECK(same);
    // append() in pieces of every size (whole blocks straight from the
    // array) stores exactly what push_back does.
    for (size_t piece : {size_t{1}, size_t{5}, size_t{64}, size_t{100}, size_t{1000}, v.size() + 1}) {
      EventColumn a;
      for (size_t k = 0; k < v.size(); k += piece) a.append(v.data() + k, std::min(piece, v.size() - k));
      a.finish();
      REQUIRE(a.size() == v.size());
      bool same_appended = true;
      for (size_t k = 0; k < v.size(); ++k) same_appended &= a[k] == v[k];
      CHECK(same_appended);
      CHECK(a.memory_bytes() == c.memory_bytes());
    }
    return c.memory_bytes();
  };
  std::vector<uint32_t> v(10'000);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint32_t>(k);
  CHECK(check(v) == 0);  // every event in order: nothing stored
  v[7000] = 9'999'999;    // off the identity late: runs before, then the rest
  CHECK(check(v) < 2500);
  uint32_t x = 5;
  for (auto& e : v) e = x += static_cast<uint32_t>(gen() % 200);  // byte steps
  CHECK(check(v) <= v.size() + v.size() / 64 * 12 + 64);
  for (auto& e : v) e = x += static_cast<uint32_t>(gen() % 900);  // 16-bit offsets
  CHECK(check(v) <= 2 * v.size() + v.size() / 4);
  for (auto& e : v) e = static_cast<uint32_t>(gen());  // anything: 32 bits
  check(v);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint32_t>(v.size() - k);  // descending
  check(v);
  check({});
  check({0, 1, 2, 7});  // a partial last block
  // Steps wrapping past 2^32 - 1 and 255-byte steps: still exact.
  v.assign(300, 0);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint32_t>(0xFFFFFF00u + 255 * k);
  check(v);
  for (size_t k = 0; k < v.size(); ++k) v[k] = static_cast<uint32_t>(0xFFFFFFF0u + k);
  check(v);
}

TEST_CASE("compact timeline: a track from raw arrays searches its own times") {
  std::mt19937_64 gen(9);
  for (size_t n : {size_t{0}, size_t{1}, size_t{31}, size_t{33}, size_t{5000}}) {
    std::vector<int64_t> time(n);
    std::vector<uint32_t> event(n);
    std::vector<uint8_t> cls(n);
    int64_t t = -100;
    for (size_t k = 0; k < n; ++k) {
      t += static_cast<int64_t>(gen() % 4);  // repeats too
      time[k] = t;
      event[k] = static_cast<uint32_t>(3 * k);
      cls[k] = static_cast<uint8_t>(gen() % 8);
    }
    TimelineIndex index;
    const TimelineTrack& tr = index.add_track("raw", time, event, cls);
    REQUIRE(tr.size() == n);
    bool same = true;
    for (size_t k = 0; k < n; ++k) same &= tr.time(k) == time[k] && tr.event(k) == event[k] && tr.cls(k) == cls[k];
    CHECK(same);
    for (int trial = 0; trial < 300; ++trial) {
      const size_t from = gen() % (n + 1), to = from + gen() % (n + 1 - from);
      const int64_t x = -105 + static_cast<int64_t>(gen() % (4 * n + 10));
      const auto b = time.begin();
      CHECK(tr.lower_bound(from, to, x) == static_cast<size_t>(std::lower_bound(b + from, b + to, x) - b));
      CHECK(tr.upper_bound(from, to, x) == static_cast<size_t>(std::upper_bound(b + from, b + to, x) - b));
    }
  }
}

TEST_CASE("packed events: a decode of some fields gives those as the full decode, the others 0") {
  std::mt19937_64 gen(21);
  std::vector<trace::Event> events(1000);
  for (size_t i = 0; i < events.size(); ++i) {
    trace::Event& e = events[i];
    e.t_ns = 1'000'000 + 37 * i;
    e.node = gen() % 3 == 0 ? 0 : gen();  // zero-escaped
    e.key = (gen() % 5) << 24 | 7;        // a dictionary
    e.arg = gen() % 1000;
    e.owner = static_cast<uint32_t>(gen() % 4);
    e.actor = 9;  // one value throughout
    e.kind = static_cast<trace::EventKind>(1 + gen() % 20);
    e.sub = static_cast<uint8_t>(gen());
    e.rank = static_cast<uint16_t>(i / 300);
    e.thread = static_cast<uint32_t>(gen() % 3);
  }
  const trace::PackedEvents p = trace::PackedEvents::pack(events);
  using P = trace::PackedEvents;
  for (uint32_t fields : {P::kTime | P::kKind | P::kRank | P::kThread, P::kKey | P::kSub, P::kNode | P::kActor,
                          P::kArg | P::kOwner, uint32_t{0}, P::kAllFields}) {
    std::vector<trace::Event> got(events.size());
    p.decode(0, events.size(), got.data(), fields);
    bool ok = true;
    for (size_t i = 0; i < events.size(); ++i) {
      const trace::Event& e = events[i];
      const trace::Event& g = got[i];
      auto want = [&](uint32_t bit, uint64_t v) { return (fields & bit) ? v : 0; };
      ok &= g.t_ns == want(P::kTime, e.t_ns) && g.node == want(P::kNode, e.node) && g.key == want(P::kKey, e.key) &&
            g.arg == want(P::kArg, e.arg) && g.owner == want(P::kOwner, e.owner) &&
            g.actor == want(P::kActor, e.actor) &&
            static_cast<uint64_t>(g.kind) == want(P::kKind, static_cast<uint64_t>(e.kind)) &&
            g.sub == want(P::kSub, e.sub) && g.rank == want(P::kRank, e.rank) &&
            g.thread == want(P::kThread, e.thread);
    }
    CHECK(ok);
  }
}

TEST_CASE("compact timeline: a recovery trace answers as the full arrays did") {
  scenarios::DdpScenarioOptions o;
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 6;
  const analysis::Model m(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
  check_against_full(m, 11);
}

TEST_CASE("compact timeline: many interleaved threads, one clock going backwards, answer as the full arrays did") {
  analysis::TraceBuilder b;
  std::mt19937_64 gen(5);
  constexpr int kThreads = 24;
  std::vector<uint64_t> clock(kThreads + 2, 1'000);
  const trace::EventKind kinds[] = {trace::EventKind::kTrainStep, trace::EventKind::kBackwardBegin,
                                    trace::EventKind::kBackwardEnd, trace::EventKind::kFailure,
                                    trace::EventKind::kBucketReady};
  for (int i = 0; i < 60'000; ++i) {
    // Mostly bursts on one thread, sometimes a hop: every block encoding shows up.
    const auto th = static_cast<uint32_t>(i % 500 < 300 ? (i / 500) % kThreads : gen() % kThreads);
    const auto rank = static_cast<uint16_t>(th % 3);
    // Thread 5's clock steps back now and then: the index sorts that track.
    const uint64_t step = th == 5 && gen() % 7 == 0 ? static_cast<uint64_t>(-40) : 1 + gen() % 50;
    clock[th] += step;
    b.rank(rank).thread(th).time(clock[th]);
    const uint64_t r = gen() % 100;
    if (r < 60) {
      b.function("AddBackward0");
    } else {
      b.push(kinds[r % 5]);
    }
  }
  const analysis::Model m(b.take());
  check_against_full(m, 13);
  const TimelineIndex index(m);
  // A byte or two per event where threads interleave, not 13 (the spans,
  // a fifth of this trace's events, are counted apart).
  size_t spans = 0;
  for (const TimelineTrack& t : index.tracks()) {
    for (const auto& lane : t.lanes) spans += lane.capacity() * sizeof(TimelineSpan);
  }
  const double per_event = static_cast<double>(index.memory_bytes() - spans) / static_cast<double>(m.num_events());
  MESSAGE("bytes per event without spans: " << per_event);
  CHECK(per_event < 3.0);
}

TEST_CASE("compact timeline: a one-track trace keeps under half a byte per event") {
  analysis::TraceBuilder b;
  b.time(1'000);
  for (int i = 0; i < 50'000; ++i) b.function("MulBackward0");
  const analysis::Model m(b.take());
  const TimelineIndex index(m);
  REQUIRE(index.tracks().size() == 1);
  const double per_event = static_cast<double>(index.memory_bytes()) / static_cast<double>(m.num_events());
  CHECK(per_event < 0.5);
  check_against_full(m, 17);
}
