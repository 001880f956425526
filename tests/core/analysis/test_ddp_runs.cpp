// The analysis on traces of the real DDP runtime (ranks as threads): the
// stories the README tells (PR #21591) show up as the findings that name them.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/model.h"
#include "analysis/state.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/recorder.h"
#include "trace/strings.h"
#include "testing/findings.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::DestroyPolicy;
using trace::EventKind;

using testing::of_kind;

namespace {

trace::TraceData record(const scenarios::DdpScenarioOptions& o) {
  trace::MemoryRecorder rec;
  rec.start();
  scenarios::run_ddp_scenario(o);
  trace::TraceData data = rec.take_trace();
  data.header.world_size = o.world_size;
  return data;
}

scenarios::DdpScenarioOptions recovery(DestroyPolicy policy) {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = policy;
  o.recoveries = 2;
  o.steps = 9;
  return o;
}

}  // namespace

TEST_CASE("recovery with policy none: leaked hooks, stale fires, hooks growing 1 -> 2 -> 3") {
  Model none(record(recovery(DestroyPolicy::kNone)));
  const auto all = diagnose(none);
  const auto leaks = of_kind(all, FindingKind::kLeakedHook);
  REQUIRE_FALSE(leaks.empty());
  for (const Finding& f : leaks) {
    CAPTURE(f.message);
    CHECK(none.owners()[f.owner].kind == trace::OwnerKind::kReducer);
    CHECK(none.function_name(f.function).rfind("AccumulateGrad (", 0) == 0);
  }
  CHECK_FALSE(of_kind(all, FindingKind::kStaleFire).empty());
  const auto growth = of_kind(all, FindingKind::kHookGrowth);
  REQUIRE_FALSE(growth.empty());
  // The survivor (rank 0) rebuilt DDP twice on the same module.
  CHECK(std::any_of(growth.begin(), growth.end(), [](const Finding& f) {
    return f.rank == 0 && f.count == 3 && f.message.find("1 → 2 → 3") != std::string::npos;
  }));

  Model by_key(record(recovery(DestroyPolicy::kByKey)));
  const auto clean = diagnose(by_key);
  CHECK(of_kind(clean, FindingKind::kLeakedHook).empty());
  CHECK(of_kind(clean, FindingKind::kStaleFire).empty());
  CHECK(of_kind(clean, FindingKind::kHookGrowth).empty());
  CHECK(of_kind(clean, FindingKind::kCollateralRemoval).empty());

  const ModelDiff d = diff_models(by_key, clean, none, all);
  CHECK(d.num_differing() > 0);
  for (const FunctionCounts& c : d.functions) {
    if (c.differs()) CHECK(c.total_b() > c.total_a());
  }
}

TEST_CASE("a Reducer's buckets and ready order, replayed from a real backward") {
  Model m(record(recovery(DestroyPolicy::kByKey)));
  const auto& finalized = m.events_of_kind(EventKind::kBucketsFinalized);
  REQUIRE_FALSE(finalized.empty());
  const EventIndex done = finalized.front();
  const ReducerIndex r = m.reducer_of(m.find_owner(0, m.event(done).owner));
  REQUIRE(r != kNoIndex);
  const ReducerInfo& info = m.reducers()[r];
  CHECK(info.bucket_sizes.size() == info.num_buckets);
  auto reducer_at = [&](size_t i) {
    const State st = m.state_at(i);
    auto it = std::find_if(st.reducers.begin(), st.reducers.end(),
                           [&](const ReducerAt& x) { return x.reducer == r; });
    REQUIRE(it != st.reducers.end());
    return *it;
  };
  const ReducerAt end = reducer_at(done);
  CHECK(end.finalized);
  CHECK(end.ready_order.size() == info.num_parameters);
  for (const BucketAt& b : end.buckets) {
    CHECK(b.pending == 0);
    CHECK(b.status == BucketStatus::kReduced);
  }
  // Halfway through that backward some buckets still wait for gradients.
  const auto& events = info.events;
  const auto prepare = std::upper_bound(info.prepares.begin(), info.prepares.end(), done) - 1;
  const auto first_mark = std::find_if(events.begin(), events.end(), [&](EventIndex i) {
    return i > *prepare && m.event(i).kind == EventKind::kMarkReady;
  });
  REQUIRE(first_mark != events.end());
  const ReducerAt early = reducer_at(*first_mark);
  CHECK(early.ready_order.size() == 1);
  CHECK_FALSE(early.finalized);
  uint32_t pending = 0;
  for (const BucketAt& b : early.buckets) pending += b.pending;
  CHECK(pending == info.num_parameters - 1);
}

TEST_CASE("shared-module: the by-type sweep is collateral removal - two live DDPs are multi_owner") {
  scenarios::DdpScenarioOptions o;
  o.name = "shared-module";
  o.steps = 4;
  o.policy = DestroyPolicy::kByType;
  Model by_type(record(o));
  const auto bad = diagnose(by_type);
  const auto collateral = of_kind(bad, FindingKind::kCollateralRemoval);
  CHECK(collateral.size() == 2 * 6);  // each rank: the other DDP's hook on all 6 parameters
  for (const Finding& f : collateral) CHECK(f.severity == Severity::kError);
  CHECK(of_kind(bad, FindingKind::kMultiOwner).size() == 2 * 6);

  o.policy = DestroyPolicy::kByKey;
  const auto good = diagnose(Model(record(o)));
  CHECK(of_kind(good, FindingKind::kCollateralRemoval).empty());
  CHECK(of_kind(good, FindingKind::kMultiOwner).size() == 2 * 6);
}

TEST_CASE("marked-twice and unused-parameter scenarios name the parameters") {
  scenarios::DdpScenarioOptions o;
  o.name = "marked-twice";
  const auto twice = of_kind(diagnose(Model(record(o))), FindingKind::kMarkedTwice);
  REQUIRE_FALSE(twice.empty());
  for (const Finding& f : twice) CHECK(f.message.find("'aux.weight'") != std::string::npos);

  o.name = "unused-parameter";
  const auto unused = of_kind(diagnose(Model(record(o))), FindingKind::kUnusedParameter);
  REQUIRE(unused.size() == 2 * 2);  // aux.weight and aux.bias on each rank
  for (const Finding& f : unused) {
    CHECK((f.message.find("'aux.weight'") != std::string::npos ||
           f.message.find("'aux.bias'") != std::string::npos));
    CHECK(f.count >= 1);
  }
}
