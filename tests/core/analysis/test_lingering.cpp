// Lingering owners (Note [Lingering owners]): the built-in kept-alive run
// (PyTorch #21344: DDP rebuilt twice on one module while the program keeps
// the old DDPs, 2 ranks, odd steps under no_sync) as the analysis tells it:
// which Reducers are replaced and when, what hook_growth, Lanes and Explain
// say, which no-op fires are alarms and which are no_sync's; and what is
// not lingering (a recovery's destroyed Reducer, two DDPs used in turn).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/explain.h"
#include "analysis/lanes.h"
#include "analysis/model.h"
#include "analysis/owner_status.h"
#include "analysis/synthetic.h"
#include "render/layout/timeline_index.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/findings.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;

namespace {

const Model& kept_alive_model() {
  static const Model m = [] {
    scenarios::DdpScenarioOptions o;
    o.name = "kept-alive";
    o.world_size = 2;
    o.steps = 8;
    return Model(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
  }();
  return m;
}

OwnerIndex owner_named(const Model& m, const std::string& name, uint16_t rank) {
  for (OwnerIndex o = 0; o < m.owners().size(); ++o) {
    if (m.owner_name(o) == name && m.owners()[o].rank == rank) return o;
  }
  FAIL("no owner " << name << " on rank " << rank);
  return kNoIndex;
}

}  // namespace

TEST_CASE("kept-alive: Reducers 1 and 2 are replaced while alive on each rank, Reducer 3 is not") {
  const Model& m = kept_alive_model();
  for (uint16_t rank : {0, 1}) {
    CAPTURE(rank);
    const OwnerIndex r1 = owner_named(m, "Reducer 1", rank), r2 = owner_named(m, "Reducer 2", rank),
                     r3 = owner_named(m, "Reducer 3", rank);
    const OwnerInfo &o1 = m.owners()[r1], &o2 = m.owners()[r2], &o3 = m.owners()[r3];
    REQUIRE(o1.replaced_at != kNever);
    REQUIRE(o2.replaced_at != kNever);
    CHECK(o3.replaced_at == kNever);
    CHECK(o1.replaced_by == r2);
    CHECK(o2.replaced_by == r3);
    // Replaced at the newer Reducer's first prepare; all destroyed at exit, after.
    const ReducerInfo& red2 = m.reducers()[m.reducer_of(r2)];
    CHECK(o1.replaced_at == red2.prepares.front());
    CHECK(m.event(o1.replaced_at).kind == EventKind::kPrepareForBackward);
    CHECK(o1.replaced_at < o2.replaced_at);
    CHECK(o1.destroyed_at != kNever);
    CHECK(o1.destroyed_at > o2.replaced_at);
    // Status over time: alive, lingering, destroyed.
    CHECK(owner_status(o1, o1.replaced_at - 1) == OwnerStatus::kAlive);
    CHECK(owner_status(o1, o1.replaced_at) == OwnerStatus::kLingering);
    CHECK(owner_status(o1, o1.destroyed_at) == OwnerStatus::kDestroyed);
    CHECK(to_string(OwnerStatus::kLingering) == "replaced, still alive");
    CHECK(replaced_text(m, r1, o1.replaced_at) ==
          "Reducer 1 was replaced by Reducer 2 at #" + std::to_string(o1.replaced_at) + " and is still alive");
    CHECK(replaced_text(m, r1).find("stayed alive until it was destroyed at #" + std::to_string(o1.destroyed_at)) !=
          std::string::npos);
  }
}

TEST_CASE("kept-alive: hook_growth says the old Reducers were replaced and alive, never destroyed") {
  const Model& m = kept_alive_model();
  const auto growth = testing::of_kind(diagnose(m), FindingKind::kHookGrowth);
  REQUIRE_FALSE(growth.empty());
  for (const Finding& f : growth) {
    CAPTURE(f.message);
    CHECK(f.count == 3);
    CHECK(testing::mentions(f, "(Reducer 1 replaced, Reducer 2 replaced, Reducer 3)"));
    CHECK(testing::mentions(f, "Reducer 1 was replaced by Reducer 2 at #"));
    CHECK(testing::mentions(f, "Reducer 2 was replaced by Reducer 3 at #"));
    CHECK(testing::mentions(f, "stayed alive until it was destroyed at #"));
    // The old false story: they were alive while their hooks fired.
    CHECK_FALSE(testing::mentions(f, "Reducer 1 destroyed"));
    CHECK_FALSE(testing::mentions(f, "hooks of destroyed owners stay attached"));
  }
}

TEST_CASE("kept-alive: lanes outlive their use, explain calls a replaced Reducer's fire lingering") {
  const Model& m = kept_alive_model();
  const auto lanes = hook_lanes(m);
  size_t unused = 0, outliving = 0;
  for (const HookLane& l : lanes) {
    unused += l.outlives_use();
    outliving += l.outlives_owner();
    if (l.outlives_use()) CHECK(l.fires_lingering > 0);
  }
  CHECK(outliving == 0);  // by-key: every destructor removed its hooks
  CHECK(unused > 0);
  // Reducer 1's fire after it was replaced.
  const OwnerIndex r1 = owner_named(m, "Reducer 1", 0);
  const OwnerInfo& o1 = m.owners()[r1];
  EventIndex fire = kNever;
  for (HookIndex h = 0; h < m.hooks().size() && fire == kNever; ++h) {
    if (m.hooks()[h].owner != r1) continue;
    for (EventIndex e : m.fires(h)) {
      if (e > o1.replaced_at && e < o1.destroyed_at) {
        fire = e;
        break;
      }
    }
  }
  REQUIRE(fire != kNever);
  const Explanation x = explain_fire(m, fire);
  CAPTURE(x.summary);
  CHECK(x.verdict == FireVerdict::kLingering);
  CHECK(to_string(x.verdict) == "lingering");
  CHECK(x.summary == "lingering: Reducer 1 was replaced by Reducer 2 at #" + std::to_string(o1.replaced_at) +
                         " and is still alive - a reference the program kept; its hook did nothing");
  const bool step_at_replacement = std::any_of(x.steps.begin(), x.steps.end(), [&](const ExplainStep& s) {
    return s.at == o1.replaced_at && s.text.find("Reducer 2 prepared its first backward") != std::string::npos;
  });
  CHECK(step_at_replacement);
}

TEST_CASE("kept-alive: no_sync fires are neutral, a lingering Reducer's no-op fires are alarms") {
  const Model& m = kept_alive_model();
  size_t no_sync = 0, lingering = 0, other = 0;
  for (EventIndex i : m.events_of_kind(EventKind::kAutogradHookNoop)) {
    const NoopCause c = noop_cause(m, i);
    const render::TickClass tick = render::tick_class(m, i, EventKind::kAutogradHookNoop);
    if (c == NoopCause::kNoSync) {
      ++no_sync;
      CHECK(tick == render::TickClass::kDdp);
      CHECK_FALSE(is_alarm(c));
      // The current Reducer's own fire inside no_sync: never a lingering one's.
      const OwnerIndex o = m.find_owner(m.source(i), m.event(i).owner);
      CHECK(owner_status(m, o, i) == OwnerStatus::kAlive);
    } else if (c == NoopCause::kLingering) {
      ++lingering;
      CHECK(tick == render::TickClass::kAlarm);
    } else {
      ++other;
      // Not prepared, not lingering yet: its successor was built inside a
      // no_sync step and has not prepared a backward (no evidence yet).
      CHECK(c == NoopCause::kNotPrepared);
      const OwnerIndex o = m.find_owner(m.source(i), m.event(i).owner);
      CHECK(m.owners()[o].replaced_at != kNever);
      CHECK(m.owners()[o].replaced_at > i);
      CHECK(tick == render::TickClass::kDdp);
    }
  }
  CHECK(no_sync > 0);
  CHECK(lingering > 0);
  CHECK(other == 12);  // 6 parameters x 2 ranks, in the one such step
}

TEST_CASE("not lingering: a recovery's destroyed Reducer, two DDPs used in turn, a Reducer never prepared") {
  SUBCASE("recovery: Reducer 1 is destroyed before Reducer 2 takes over") {
    const Model m(testing::record_recovery_trace());
    for (const OwnerInfo& o : m.owners()) CHECK(o.replaced_at == kNever);
  }
  SUBCASE("two DDPs on one module, used in turn") {
    TraceBuilder b;
    const uint64_t acc = b.accumulator("fc.weight [8, 4]");
    const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
    b.reducer_constructed(r1, 1, 1);
    b.add_hook(acc, HookKind::kPost, r1);
    const uint32_t r2 = b.owner(OwnerKind::kReducer, "Reducer 2");
    b.reducer_constructed(r2, 1, 1);
    b.add_hook(acc, HookKind::kPost, r2);
    for (uint64_t step = 0; step < 4; ++step) b.prepare_for_backward(step % 2 ? r2 : r1, step + 1);
    const Model m(b.take());
    for (const OwnerInfo& o : m.owners()) CHECK(o.replaced_at == kNever);
  }
  SUBCASE("a newer Reducer on other parameters replaces nothing") {
    TraceBuilder b;
    const uint64_t a1 = b.accumulator("a.weight [8, 4]"), a2 = b.accumulator("b.weight [8, 4]");
    const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
    b.reducer_constructed(r1, 1, 1);
    b.add_hook(a1, HookKind::kPost, r1);
    b.prepare_for_backward(r1, 1);
    const uint32_t r2 = b.owner(OwnerKind::kReducer, "Reducer 2");
    b.reducer_constructed(r2, 1, 1);
    b.add_hook(a2, HookKind::kPost, r2);
    b.prepare_for_backward(r2, 1);
    const Model m(b.take());
    for (const OwnerInfo& o : m.owners()) CHECK(o.replaced_at == kNever);
  }
  SUBCASE("the same, on the same parameters: replaced at the newer one's prepare") {
    TraceBuilder b;
    const uint64_t acc = b.accumulator("a.weight [8, 4]");
    const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
    b.reducer_constructed(r1, 1, 1);
    b.add_hook(acc, HookKind::kPost, r1);
    b.prepare_for_backward(r1, 1);
    const uint32_t r2 = b.owner(OwnerKind::kReducer, "Reducer 2");
    b.reducer_constructed(r2, 1, 1);
    b.add_hook(acc, HookKind::kPost, r2);
    const size_t at = b.size();
    b.prepare_for_backward(r2, 1);
    const Model m(b.take());
    const OwnerIndex o1 = m.find_owner(0, r1);
    CHECK(m.owners()[o1].replaced_at == at);
    CHECK(m.owners()[o1].replaced_by == m.find_owner(0, r2));
  }
}
