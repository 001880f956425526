// The data behind the lanes, readiness and "why did this fire" views, on
// traces of the real DDP runtime: each checked against the raw events.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "analysis/explain.h"
#include "analysis/lanes.h"
#include "analysis/model.h"
#include "analysis/readiness.h"
#include "scenarios/ddp_scenarios.h"
#include "test_util.h"

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

TEST_CASE("lanes: policy none leaves bars outliving their owner, with stale fires; by-key none") {
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
