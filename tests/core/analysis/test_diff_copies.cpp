// The diff of two recovery runs (policy none vs by-key) once a rank was
// replaced: its parameters exist in copies of several module generations,
// and each copy is one row, matched to the same generation's copy in the
// other trace (Note [Parameter copies in a diff]).
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "analysis/compare.h"
#include "analysis/diff.h"
#include "analysis/model.h"
#include "render/layout/story.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::DestroyPolicy;

namespace {

Model record_recovery(DestroyPolicy policy) {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = policy;
  o.steps = 8;
  auto data = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
  data.header.world_size = o.world_size;
  return Model(std::move(data));
}

// Every row names a different Function, and a row's two sides are the same
// generation's copy (as the GUI labels them, render::Generations).
void check_rows(const ModelDiff& d, const Model& a, const Model& b) {
  const render::Generations gen_a(a), gen_b(b);
  std::set<std::string> names;
  for (const FunctionCounts& c : d.functions) {
    CHECK_MESSAGE(names.insert(c.function).second, "listed twice: ", c.function);
    if (c.a != kNoIndex && c.b != kNoIndex) {
      CHECK_MESSAGE(gen_a.of_function(c.a) == gen_b.of_function(c.b), c.function);
      CHECK(a.functions()[c.a].rank == b.functions()[c.b].rank);
    }
  }
}

}  // namespace

TEST_CASE("diff of recovery none vs by-key: each copy of a parameter once, matched to its own generation") {
  const Model none = record_recovery(DestroyPolicy::kNone);
  const Model by_key = record_recovery(DestroyPolicy::kByKey);
  const render::Generations gens(none);
  REQUIRE(gens.any());  // rank 1 was replaced: its parameters exist in gen 0 and gen 1

  // At the end: with none, rank 1 holds a leaked hook on each gen 0 copy and
  // one on each gen 1 copy; by-key none. Twelve rows for rank 1, each named
  // by its generation.
  const ModelDiff end = diff_models(none, diagnose(none), by_key, diagnose(by_key));
  check_rows(end, none, by_key);
  std::map<uint32_t, int> rank1_rows;  // per generation
  for (const FunctionCounts& c : end.functions) {
    if (c.a == kNoIndex || none.functions()[c.a].rank != 1) continue;
    ++rank1_rows[gens.of_function(c.a)];
    CHECK(c.function.find(", gen " + std::to_string(gens.of_function(c.a))) != std::string::npos);
  }
  CHECK(rank1_rows[0] == 6);
  CHECK(rank1_rows[1] == 6);

  // After backward 4 (past the rebuild) the gen 0 copies differ (1 leaked
  // hook vs 0) and the gen 1 copies hold the new Reducer's hook in both.
  const size_t at_a = resolve_point(none, "backward:4").index, at_b = resolve_point(by_key, "backward:4").index;
  const ModelDiff mid = diff_models_at(none, {}, at_a, by_key, {}, at_b);
  check_rows(mid, none, by_key);
  int gen0_differ = 0, gen1_same = 0;
  for (const FunctionCounts& c : mid.functions) {
    if (c.a == kNoIndex || none.functions()[c.a].rank != 1) continue;
    if (gens.of_function(c.a) == 0) {
      gen0_differ += c.differs() && c.total_a() == 1 && c.total_b() == 0;
    } else {
      REQUIRE(c.b != kNoIndex);
      gen1_same += !c.differs() && c.total_a() == 1;
    }
  }
  CHECK(gen0_differ == 6);
  CHECK(gen1_same == 6);

  // The hook order of each copy is compared with the same copy's.
  const render::Generations gens_b(by_key);
  for (const OrderDiff& o : hook_order_diff(none, at_a, by_key, at_b)) {
    if (o.a != kNoIndex && o.b != kNoIndex) {
      CHECK_MESSAGE(gens.of_function(o.a) == gens_b.of_function(o.b), o.function);
    }
  }
}
