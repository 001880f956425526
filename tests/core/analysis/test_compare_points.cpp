// The Compare view's differences computed off the UI thread and kept per
// pair of events (Note [Differences off the UI thread]).
#include <doctest/doctest.h>

#include <memory>

#include "analysis/compare.h"
#include "analysis/compare_points.h"
#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::analysis;

namespace {

std::shared_ptr<const Model> recovery(trace::DestroyPolicy policy) {
  scenarios::DdpScenarioOptions o;
  o.policy = policy;
  o.steps = 6;
  return std::make_shared<const Model>(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
}

void check_same(const PointDiff& got, const ModelDiff& want, const std::vector<OrderDiff>& want_order) {
  REQUIRE(got.error.empty());
  REQUIRE(got.diff.functions.size() == want.functions.size());
  for (size_t i = 0; i < want.functions.size(); ++i) {
    CHECK(got.diff.functions[i].function == want.functions[i].function);
    CHECK(got.diff.functions[i].a == want.functions[i].a);
    CHECK(got.diff.functions[i].b == want.functions[i].b);
    CHECK(got.diff.functions[i].hooks_a == want.functions[i].hooks_a);
    CHECK(got.diff.functions[i].hooks_b == want.functions[i].hooks_b);
  }
  CHECK(got.diff.only_a.size() == want.only_a.size());
  CHECK(got.diff.only_b.size() == want.only_b.size());
  REQUIRE(got.order.size() == want_order.size());
  for (size_t i = 0; i < want_order.size(); ++i) {
    CHECK(got.order[i].function == want_order[i].function);
    CHECK(got.order[i].steps_a == want_order[i].steps_a);
    CHECK(got.order[i].steps_b == want_order[i].steps_b);
  }
}

}  // namespace

TEST_CASE("compare points: a pair is computed on the worker, equal to the direct diff, and kept") {
  const auto a = recovery(trace::DestroyPolicy::kNone), b = recovery(trace::DestroyPolicy::kByKey);
  const std::vector<Finding> fa = diagnose(*a), fb = diagnose(*b);
  PointDiffs diffs(a, fa, b, fb);
  const size_t pa = resolve_point(*a, "rebuild:1").index, pb = resolve_point(*b, "rebuild:1").index;
  CHECK(diffs.get(pa, pb) == nullptr);  // never computed in the asking frame
  const auto got = diffs.wait(pa, pb);
  REQUIRE(got);
  CHECK(got->at_a == pa);
  CHECK(got->at_b == pb);
  check_same(*got, diff_models_at(*a, fa, pa, *b, fb, pb), hook_order_diff(*a, pa, *b, pb));
  CHECK(got->diff.num_differing() > 0);
  CHECK(diffs.computed() == 1);
  // Asked again: the same result at once, nothing computed.
  CHECK(diffs.get(pa, pb) == got);
  CHECK(diffs.computed() == 1);

  // Stepping: each new pair once; back to an earlier one costs nothing.
  const size_t end_a = a->num_events() - 1, end_b = b->num_events() - 1;
  const auto at_end = diffs.wait(end_a, end_b);
  check_same(*at_end, diff_models_at(*a, fa, end_a, *b, fb, end_b), hook_order_diff(*a, end_a, *b, end_b));
  CHECK(diffs.computed() == 2);
  CHECK(diffs.get(pa, pb) == got);
  CHECK(diffs.computed() == 2);

  // Pairs asked for and abandoned before the worker took them are skipped.
  for (size_t i = 0; i < 50; ++i) diffs.get(pa + i + 1, pb);
  const auto last = diffs.wait(pa + 51, pb);
  REQUIRE(last);
  CHECK(diffs.computed() <= 2 + 51);
}

TEST_CASE("compare points: the oldest result goes past the capacity; a bad pair says why, never hangs") {
  const auto a = recovery(trace::DestroyPolicy::kNone), b = recovery(trace::DestroyPolicy::kByKey);
  PointDiffs diffs(a, {}, b, {}, 2);
  const auto first = diffs.wait(10, 10);
  diffs.wait(20, 20);
  CHECK(diffs.get(10, 10) == first);  // still kept (and now the most recent)
  diffs.wait(30, 30);                 // pushes out (20, 20)
  CHECK(diffs.computed() == 3);
  CHECK(diffs.get(10, 10) == first);
  CHECK(diffs.get(20, 20) == nullptr);
  diffs.wait(20, 20);
  CHECK(diffs.computed() == 4);
  // Past the end: clamped to the last event, as the direct diff does.
  const auto past = diffs.wait(a->num_events() + 5, b->num_events() + 5);
  REQUIRE(past);
  CHECK(past->error.empty());
}
