// The data behind the lanes, readiness and "why did this fire" views, on
// traces of the real DDP runtime: each checked against the raw events.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "analysis/compare.h"
#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/explain.h"
#include "analysis/lanes.h"
#include "analysis/model.h"
#include "analysis/readiness.h"
#include "scenarios/ddp_scenarios.h"
#include "scenarios/module_hooks.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::DestroyPolicy;
using trace::EventKind;

namespace {

Model record_scenario(const std::string& name, DestroyPolicy policy = DestroyPolicy::kByKey) {
  scenarios::DdpScenarioOptions o;
  o.name = name;
  o.policy = policy;
  o.recoveries = 2;
  o.steps = 9;
  auto data = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
  data.header.world_size = o.world_size;
  return Model(std::move(data));
}

size_t count_status(const ReadinessGrid& g, Readiness r) {
  return static_cast<size_t>(std::count_if(g.cells.begin(), g.cells.end(),
                                           [r](const ReadinessCell& c) { return c.status == r; }));
}

}  // namespace

TEST_CASE("lanes: policy none leaves bars outliving their owner, with stale fires - by-key none") {
  const Model none = record_scenario("recovery", DestroyPolicy::kNone);
  const auto lanes = hook_lanes(none);
  REQUIRE(lanes.size() == none.hooks().size());
  size_t outliving = 0, stale = 0;
  for (const HookLane& l : lanes) {
    const HookInfo& h = none.hooks()[l.hook];
    CHECK(l.added_at == h.added_at);
    CHECK(l.ended_at == h.ended_at);
    CHECK(l.fires_before + l.fires_after == none.fires(l.hook).size());
    if (!l.outlives_owner()) continue;
    ++outliving;
    // the owner is a destroyed Reducer and the hook was still on when it died
    CHECK(none.owners()[l.owner].kind == trace::OwnerKind::kReducer);
    CHECK(l.owner_died_at < (l.ended_at == kNever ? none.num_events() : l.ended_at));
    for (EventIndex at : none.fires(l.hook)) {
      if (at >= l.owner_died_at) ++stale;
    }
  }
  CHECK(outliving > 0);
  CHECK(stale > 0);
  size_t stale_in_lanes = 0;
  for (const HookLane& l : lanes) stale_in_lanes += l.fires_after;
  CHECK(stale_in_lanes == stale);

  const Model by_key = record_scenario("recovery", DestroyPolicy::kByKey);
  for (const HookLane& l : hook_lanes(by_key)) {
    CHECK_FALSE(l.outlives_owner());
    CHECK(l.fires_after == 0);
  }
}

TEST_CASE("readiness: unused-parameter marks aux.weight and aux.bias unused on every DDP backward") {
  const Model m = record_scenario("unused-parameter");
  const auto grids = readiness_grids(m);
  REQUIRE(grids.size() == 2);  // ranks 0 and 1
  for (const ReadinessGrid& g : grids) {
    CAPTURE(g.rank);
    REQUIRE_FALSE(g.backwards.empty());
    REQUIRE_FALSE(g.parameters.empty());
    size_t unused_rows = 0;
    for (size_t p = 0; p < g.parameters.size(); ++p) {
      const bool aux = g.parameters[p].name.find("aux.") != std::string::npos;
      unused_rows += aux;
      for (size_t b = 0; b < g.backwards.size(); ++b) {
        const ReadinessCell& c = g.cell(p, b);
        if (g.backwards[b].reducer == kNoIndex) continue;
        CAPTURE(g.parameters[p].name);
        CHECK(c.status == (aux ? Readiness::kUnused : Readiness::kOk));
        // the proving event is the kUnusedParameter naming this parameter on this rank
        if (aux) {
          const trace::Event e = m.event(c.event);
          CHECK(e.kind == EventKind::kUnusedParameter);
          CHECK(e.rank == g.rank);
          CHECK(e.actor == g.parameters[p].index);
        }
      }
    }
    CHECK(unused_rows == 2);
  }
}

TEST_CASE("readiness: marked-twice shows the parameter twice, the others ok") {
  const auto grids = readiness_grids(record_scenario("marked-twice"));
  REQUIRE_FALSE(grids.empty());
  size_t twice = 0;
  for (const ReadinessGrid& g : grids) {
    twice += count_status(g, Readiness::kTwice);
    for (size_t p = 0; p < g.parameters.size(); ++p) {
      for (size_t b = 0; b < g.backwards.size(); ++b) {
        if (g.cell(p, b).status == Readiness::kTwice) {
          CHECK(g.parameters[p].name.find("aux.weight") != std::string::npos);
        }
      }
    }
  }
  CHECK(twice >= 1);
}

TEST_CASE("readiness: policy none shows stale fires after the rebuild, by-key never") {
  size_t stale_none = 0, stale_by_key = 0, cut = 0;
  for (const auto& g : readiness_grids(record_scenario("recovery", DestroyPolicy::kNone))) {
    stale_none += count_status(g, Readiness::kStale);
    cut += count_status(g, Readiness::kNotReached);
    for (const ReadinessCell& c : g.cells) CHECK(c.status != Readiness::kUnused);  // the MLP uses all
  }
  for (const auto& g : readiness_grids(record_scenario("recovery", DestroyPolicy::kByKey))) {
    stale_by_key += count_status(g, Readiness::kStale);
  }
  CHECK(stale_none > 0);
  CHECK(stale_by_key == 0);
  CHECK(cut > 0);  // the failed backward is cut short, not "unused"
}

TEST_CASE("explain: a stale fire in the recovery trace names the add, the owner's death and the pass") {
  const Model m = record_scenario("recovery", DestroyPolicy::kNone);
  const auto lanes = hook_lanes(m);
  auto it = std::find_if(lanes.begin(), lanes.end(), [](const HookLane& l) { return l.fires_after > 0; });
  REQUIRE(it != lanes.end());
  const auto fires = m.fires(it->hook);
  const EventIndex fire = *std::lower_bound(fires.begin(), fires.end(), it->owner_died_at);
  const Explanation x = explain_fire(m, fire);
  CHECK(x.verdict == FireVerdict::kStale);
  CHECK(x.hook == it->hook);
  REQUIRE(x.steps.size() >= 4);
  CHECK(x.steps.front().at == it->added_at);
  const bool names_death = std::any_of(x.steps.begin(), x.steps.end(), [&](const ExplainStep& s) {
    return s.at == it->owner_died_at && s.text.find("policy none") != std::string::npos;
  });
  CHECK(names_death);
  const bool names_pass = std::any_of(x.steps.begin(), x.steps.end(), [&](const ExplainStep& s) {
    return s.at != kNever && m.event(s.at).kind == EventKind::kBackwardBegin && s.at < fire;
  });
  CHECK(names_pass);
  for (size_t i = 1; i < x.steps.size(); ++i) CHECK(x.steps[i - 1].at <= x.steps[i].at);
  CHECK(x.summary.find("stale fire") == 0);

  // a fire while the owner lives is normal; a non-fire event is a usage error
  auto live = std::find_if(lanes.begin(), lanes.end(), [](const HookLane& l) { return l.fires_before > 0; });
  REQUIRE(live != lanes.end());
  CHECK(explain_fire(m, m.fires(live->hook)[0]).verdict == FireVerdict::kNormal);
  CHECK_THROWS_AS(explain_fire(m, it->added_at), std::invalid_argument);
}

TEST_CASE("matching points: story steps resolve to the same step in both runs - missing ones say how many") {
  const Model none = record_scenario("recovery", DestroyPolicy::kNone);
  const Model by_key = record_scenario("recovery", DestroyPolicy::kByKey);
  for (const Model* m : {&none, &by_key}) {
    const MatchPoint rebuild = resolve_point(*m, "rebuild:1");
    const trace::Event e = m->event(rebuild.index);
    CHECK(e.kind == EventKind::kRecoveryStep);
    CHECK(e.sub == static_cast<uint8_t>(trace::RecoveryStep::kDdpRebuilt));
    CHECK(rebuild.label == "after rebuild 1");
    const MatchPoint b3 = resolve_point(*m, "backward:3");
    CHECK(m->event(b3.index).kind == EventKind::kBackwardEnd);
    CHECK(resolve_point(*m, "backward:2").index < b3.index);
    CHECK(m->event(resolve_point(*m, "failure:1").index).kind == EventKind::kFailure);
    CHECK(m->event(resolve_point(*m, "hook_fire:5").index).kind == EventKind::kHookFired);
    CHECK(resolve_point(*m, "end").index == m->num_events() - 1);
  }
  CHECK_THROWS_WITH_AS(resolve_point(none, "rebuild:9"), doctest::Contains("has 2 DDP rebuilds on rank 0"),
                       std::invalid_argument);
  CHECK_THROWS_AS(resolve_point(none, "backward:0"), std::invalid_argument);
  CHECK_THROWS_AS(resolve_point(none, "sideways:1"), std::invalid_argument);
  CHECK_THROWS_AS(resolve_point(none, "backward"), std::invalid_argument);

  // before the first failure both runs hold the same hooks; after the first rebuild, none has more
  const auto before = diff_models_at(by_key, {}, resolve_point(by_key, "failure:1").index, none, {},
                                     resolve_point(none, "failure:1").index);
  CHECK(before.num_differing() == 0);
  const auto after = diff_models_at(by_key, {}, resolve_point(by_key, "rebuild:1").index, none, {},
                                    resolve_point(none, "rebuild:1").index);
  CHECK(after.num_differing() > 0);
  size_t rank0 = 0;
  for (const FunctionCounts& c : after.functions) {
    // the point is on rank 0 (the other rank may be anywhere in its own rebuild)
    if (c.a == kNoIndex || c.b == kNoIndex || by_key.functions()[c.a].rank != 0) continue;
    ++rank0;
    CHECK(c.total_a() == 1);  // the rebuilt Reducer's hook
    CHECK(c.total_b() == 2);  // and, with policy none, the first Reducer's leaked one
  }
  CHECK(rank0 == 6);
}

TEST_CASE("hook order diff: with policy none a destroyed Reducer's hook fires first - a run against itself is equal") {
  const Model none = record_scenario("recovery", DestroyPolicy::kNone);
  const Model by_key = record_scenario("recovery", DestroyPolicy::kByKey);
  const size_t end_a = by_key.num_events() - 1, end_b = none.num_events() - 1;
  CHECK(hook_order_diff(none, end_b, none, end_b).empty());
  const auto diffs = hook_order_diff(by_key, end_a, none, end_b);
  REQUIRE_FALSE(diffs.empty());
  size_t stale_first = 0;
  for (const OrderDiff& d : diffs) {
    CHECK(d.function.rfind("AccumulateGrad (", 0) == 0);
    // none: the first Reducer's hook (post#1, leaked) fires before the rebuilt one's;
    // by-key: the first was removed, so the rebuilt Reducer's hook (post#2) is the one firing
    if (d.position < d.steps_b.size() && d.position < d.steps_a.size() && d.steps_b[d.position].fire &&
        d.steps_b[d.position].hook == "post#1 reducer#1" && d.steps_a[d.position].hook == "post#2 reducer#2") {
      ++stale_first;
    }
  }
  CHECK(stale_first >= 6);  // every parameter of the surviving rank
  const std::string text = format_order_diff(diffs, "by-key", "none");
  CHECK(text.find("fire post#1 reducer#1") != std::string::npos);
  CHECK(hook_order_diff(by_key, end_a, by_key, end_a).empty());
}

TEST_CASE("lanes: the module-hooks story shows the full backward hook firing after its removal (#25723)") {
  auto data = testing::record_trace([] {
    scenarios::ModuleHooksOptions o;
    scenarios::run_module_hooks(o);
  });
  const Model m(std::move(data));
  size_t after_removal = 0;
  for (const HookLane& l : hook_lanes(m)) {
    const HookInfo& h = m.hooks()[l.hook];
    if (h.kind == trace::HookKind::kModuleBackward) {
      CHECK(l.fires_after_removal == 1);
      CHECK(l.function == kNoIndex);  // a module hook: on no Function (Note [Module hooks in traces])
    }
    after_removal += l.fires_after_removal;
  }
  CHECK(after_removal == 1);
}

TEST_CASE("unrecovered_failure: recovered failures are not findings, a failure at the end is") {
  const Model recovered = record_scenario("recovery", DestroyPolicy::kByKey);
  REQUIRE_FALSE(recovered.events_of_kind(EventKind::kFailure).empty());
  CHECK(diagnose_failures(recovered).empty());
  // The same run cut right after its first failure: nothing resumed after it.
  auto data = testing::record_trace([] {
    scenarios::DdpScenarioOptions o;
    o.steps = 6;
    scenarios::run_ddp_scenario(o);
  });
  size_t cut = 0;
  for (size_t i = 0; i < data.events.size(); ++i) {
    if (data.events[i].kind == EventKind::kFailure) {
      cut = i + 1;
      break;
    }
  }
  REQUIRE(cut > 0);
  data.events.resize(cut);
  const Model unfinished(std::move(data));
  const auto findings = diagnose_failures(unfinished);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == FindingKind::kUnrecoveredFailure);
  CHECK(findings[0].severity == Severity::kError);
  CHECK(findings[0].message.find("the run did not finish") != std::string::npos);
  CHECK(unfinished.event(findings[0].at).kind == EventKind::kFailure);
}
