// The load pass's derived tables (Note [Fires by event], find_*()), checked
// against the records they are derived from, and the model's memory per
// event on the benchmark's trace shapes (<= 12 bytes, Note [Model memory bound]).

#include <doctest/doctest.h>

#include <cstring>

#include <map>
#include <set>
#include <tuple>
#include <random>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "testing/test_util.h"

namespace an = hookscope::analysis;
namespace tr = hookscope::trace;

namespace {

std::vector<tr::TraceData> synthetic(uint32_t parameters, tr::DestroyPolicy policy, size_t events,
                                     int traces) {
  std::vector<tr::TraceData> out;
  for (int t = 0; t < traces; ++t) {
    an::SyntheticOptions o;
    o.events = events;
    o.parameters = parameters;
    o.policy = policy;
    o.rebuild_every = 5;
    o.seed = static_cast<uint64_t>(t);
    o.header_rank = traces > 1 ? t : -1;
    o.rank = static_cast<uint16_t>(t);
    out.push_back(an::make_synthetic_trace(o));
  }
  return out;
}

// Ids from a few values, so that Functions, hooks and owners are created again
// under ids already used (the find_* tables keep the latest).
tr::TraceData reused_ids(uint32_t seed) {
  std::mt19937 rng(seed);
  tr::TraceData d;
  d.strings = {"", "Fn"};
  const tr::EventKind kinds[] = {tr::EventKind::kNodeCreated, tr::EventKind::kNodeReleased,
                                 tr::EventKind::kOwnerCreated, tr::EventKind::kOwnerDestroyed,
                                 tr::EventKind::kHookAdded, tr::EventKind::kHookFired,
                                 tr::EventKind::kHookRemoved, tr::EventKind::kNodeEdge,
                                 tr::EventKind::kCollectiveBegin, tr::EventKind::kCollectiveEnd};
  for (int i = 0; i < 3000; ++i) {
    tr::Event e;
    e.t_ns = static_cast<uint64_t>(i);
    e.kind = kinds[rng() % std::size(kinds)];
    e.node = 1 + rng() % 12;
    e.key = 1 + rng() % 9;
    e.owner = 1 + rng() % 4;
    e.rank = static_cast<uint16_t>(rng() % 2);
    e.arg = tr::event_arg_is_string(e.kind) ? 1 : rng() % 12;
    d.events.push_back(e);
  }
  return d;
}

void check_fires(const an::Model& m) {
  size_t fires = 0;
  for (an::HookIndex h = 0; h < m.hooks().size(); ++h) {
    for (an::EventIndex i : m.fires(h)) {
      CHECK(m.hook_fired_at(i) == h);
      CHECK(m.event(i).kind == tr::EventKind::kHookFired);
      ++fires;
    }
  }
  size_t named = 0;
  for (size_t i = 0; i < m.num_events(); ++i) named += m.hook_fired_at(i) != an::kNoIndex;
  CHECK(named == fires);
  CHECK(m.hook_fired_at(m.num_events()) == an::kNoIndex);
  CHECK(m.hook_fired_at(m.num_events() + 1000) == an::kNoIndex);
}

// find_*() name the last record made for each (source, id).
void check_lookups(const an::Model& m) {
  std::map<std::pair<uint32_t, uint64_t>, uint32_t> fn, hook, owner;
  std::map<std::tuple<uint32_t, uint16_t, uint64_t>, uint32_t> coll;
  for (uint32_t f = 0; f < m.functions().size(); ++f) fn[{m.functions()[f].source, m.functions()[f].id}] = f;
  for (uint32_t h = 0; h < m.hooks().size(); ++h) hook[{m.hooks()[h].source, m.hooks()[h].key}] = h;
  for (uint32_t o = 0; o < m.owners().size(); ++o) owner[{m.owners()[o].source, m.owners()[o].id}] = o;
  for (uint32_t c = 0; c < m.collectives().size(); ++c) {
    const an::CollectiveInfo& x = m.collectives()[c];
    coll[{x.source, x.rank, x.id}] = c;
  }
  for (const auto& [k, f] : fn) CHECK(m.find_function(k.first, k.second) == f);
  for (const auto& [k, h] : hook) CHECK(m.find_hook(k.first, k.second) == h);
  for (const auto& [k, o] : owner) CHECK(m.find_owner(k.first, static_cast<uint32_t>(k.second)) == o);
  for (const auto& [k, c] : coll) {
    CHECK(m.find_collective(std::get<0>(k), std::get<1>(k), std::get<2>(k)) == c);
  }
  CHECK(coll.size() == m.collectives().size());  // one record per (source, rank, id)
  CHECK(m.find_function(0, 1u << 30) == an::kNoIndex);
  CHECK(m.find_hook(7, 1) == an::kNoIndex);
}

}  // namespace

TEST_CASE("model load: hook_fired_at and find_* agree with the records, one trace or several") {
  SUBCASE("synthetic, one trace") {
    const an::Model m(synthetic(16, tr::DestroyPolicy::kNone, 40000, 1));
    check_fires(m);
    check_lookups(m);
  }
  SUBCASE("synthetic, three traces merged") {
    const an::Model m(synthetic(8, tr::DestroyPolicy::kByKey, 9000, 3));
    check_fires(m);
    check_lookups(m);
  }
  SUBCASE("recorded recovery scenario") {
    const an::Model m(hookscope::testing::record_recovery_trace());
    REQUIRE(m.num_events() > 0);
    check_fires(m);
    check_lookups(m);
  }
  SUBCASE("ids used again, one trace and two") {
    for (uint32_t seed = 0; seed < 20; ++seed) {
      const an::Model one(reused_ids(seed));
      check_fires(one);
      check_lookups(one);
      // Collectives of both ranks (the trace has no header rank), each (rank, id) its own.
      std::set<std::pair<uint16_t, uint64_t>> named;
      for (size_t i = 0; i < one.num_events(); ++i) {
        const tr::Event& e = one.event(i);
        if (e.kind != tr::EventKind::kCollectiveBegin && e.kind != tr::EventKind::kCollectiveEnd) continue;
        named.insert({e.rank, e.key});
        const uint32_t c = one.find_collective(0, e.rank, e.key);
        REQUIRE(c != an::kNoIndex);
        CHECK(one.collectives()[c].rank == e.rank);
      }
      CHECK(named.size() == one.collectives().size());
      std::vector<tr::TraceData> two;
      two.push_back(reused_ids(seed));
      two.push_back(reused_ids(seed + 100));
      const an::Model both(std::move(two));
      check_fires(both);
      check_lookups(both);
    }
  }
}

TEST_CASE("model load: at most 12 bytes per event on the benchmark's trace shapes") {
  // bench_analysis BM_Load at 10M events. Fewer keep the test quick; the
  // 1024/none shape needs 3M for its stale hooks to pile up as they do at 10M.
  for (const auto& shape : {std::tuple{64u, tr::DestroyPolicy::kByKey, 1'000'000},
                             std::tuple{1024u, tr::DestroyPolicy::kNone, 3'000'000}}) {
    // Named copies, not a structured binding: clang 14 (the ASan build) cannot capture one in CAPTURE.
    const auto parameters = std::get<0>(shape);
    const auto policy = std::get<1>(shape);
    const auto events = std::get<2>(shape);
    an::SyntheticOptions o;
    o.events = static_cast<size_t>(events);
    o.parameters = parameters;
    o.policy = policy;
    o.rebuild_every = 50;
    const an::Model m(an::make_synthetic_trace(o));
    CAPTURE(parameters);
    CHECK(static_cast<double>(m.memory_bytes()) / static_cast<double>(m.num_events()) <= 12.0);
  }
}

TEST_CASE("model load: the same model on one thread and on two") {
  // Note [Finishing on two threads]: from 1M events on, the second thread builds the
  // find_* tables and the interval index.
  an::SyntheticOptions o;
  o.events = 1'200'000;
  o.parameters = 64;
  o.policy = tr::DestroyPolicy::kNone;
  o.rebuild_every = 20;
  const tr::TraceData trace = an::make_synthetic_trace(o);
  an::ModelOptions one_thread;
  one_thread.threads = 1;
  const an::Model a{tr::TraceData(trace), one_thread};
  const an::Model b{tr::TraceData(trace)};
  REQUIRE(a.num_events() == b.num_events());
  CHECK(a.memory_bytes() == b.memory_bytes());
  CHECK(a.num_checkpoints() == b.num_checkpoints());
  REQUIRE(a.functions().size() == b.functions().size());
  REQUIRE(a.hooks().size() == b.hooks().size());
  REQUIRE(a.segments().size() == b.segments().size());
  for (uint32_t f = 0; f < a.functions().size(); f += 97) {
    CHECK(a.functions()[f].edges_begin == b.functions()[f].edges_begin);
    CHECK(a.find_function(0, a.functions()[f].id) == b.find_function(0, b.functions()[f].id));
    CHECK(a.segments_of(f).size() == b.segments_of(f).size());
  }
  for (uint32_t h = 0; h < a.hooks().size(); ++h) {
    CHECK(a.fires(h).size() == b.fires(h).size());
    CHECK(a.find_hook(0, a.hooks()[h].key) == b.find_hook(0, b.hooks()[h].key));
  }
  for (size_t i = 0; i < a.num_events(); i += a.num_events() / 23) {
    CHECK(a.state_at(i) == b.state_at(i));
    CHECK(a.hook_fired_at(i) == b.hook_fired_at(i));
  }
  // Note [Packing beside the walk]: on two threads the arrays were packed
  // by the second, beside the walk; every event is the one given.
  CHECK(a.event_bytes() == b.event_bytes());
  std::vector<tr::Event> ea(a.num_events()), eb(b.num_events());
  a.events(0, a.num_events(), ea.data());
  b.events(0, b.num_events(), eb.data());
  size_t differ = 0;
  for (size_t i = 0; i < ea.size(); ++i) {
    const tr::Event& x = ea[i];
    const tr::Event& y = eb[i];
    const tr::Event& given = trace.events[i];
    differ += std::memcmp(&x, &y, sizeof x) != 0;
    differ += x.t_ns != given.t_ns || x.node != given.node || x.key != given.key ||
              x.kind != given.kind || x.owner != given.owner || x.actor != given.actor;
  }
  CHECK(differ == 0);
}
