// The analysis model: several ranks on one timeline, leaf hooks following a
// re-created AccumulateGrad, Functions never announced, diffs and statistics.
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>

#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/stats.h"
#include "analysis/synthetic.h"
#include "autograd/node.h"
#include "tensor/ops.h"
#include "trace/recorder.h"
#include "trace/strings.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::DestroyPolicy;
using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;

namespace {

// One rank's process: the same ids as every other rank's (they collide).
trace::TraceData rank_trace(int rank, bool leak, uint64_t t0) {
  TraceBuilder b(rank);
  b.time(t0);
  b.intern(rank == 0 ? "padding so string ids differ" : "");
  const uint64_t acc = b.accumulator("rank" + std::to_string(rank) + ".weight [2]");
  const uint32_t r = b.owner(OwnerKind::kReducer, "Reducer 1");
  const uint64_t key = b.add_hook(acc, HookKind::kPost, r);
  b.time(t0 + 100);
  b.fire(acc, key, HookKind::kPost, r);
  if (!leak) b.remove(acc, key, HookKind::kPost, r, r);
  b.destroy_owner(r);
  trace::TraceData data = b.take();
  data.header.world_size = 2;
  return data;
}

}  // namespace

TEST_CASE("ranks' traces merge onto one timeline with their ids kept apart") {
  std::vector<trace::TraceData> traces;
  traces.push_back(rank_trace(0, false, 1000));
  traces.push_back(rank_trace(1, true, 1050));
  Model m(std::move(traces));
  REQUIRE(m.num_events() == 13);
  for (size_t i = 1; i < m.num_events(); ++i) CHECK(m.time_ns(i - 1) <= m.time_ns(i));
  // Rank 1's events start between rank 0's (t 1050 vs 1000..1004 and 1100).
  CHECK(m.source(5) == 1);
  CHECK(m.event(5).rank == 1);
  // Node 1 of rank 0 and node 1 of rank 1 are two Functions.
  const FunctionIndex f0 = m.find_function(0, 1);
  const FunctionIndex f1 = m.find_function(1, 1);
  REQUIRE(f0 != kNoIndex);
  REQUIRE(f1 != kNoIndex);
  CHECK(f0 != f1);
  CHECK(m.function_name(f0) == "AccumulateGrad (rank0.weight [2])");
  CHECK(m.function_name(f1) == "AccumulateGrad (rank1.weight [2])");
  CHECK(m.functions()[f1].rank == 1);
  const State mid = m.state_at(8);
  CHECK(mid.functions.size() == 2);
  CHECK(mid.num_hooks() == 2);
  // Only rank 1 leaked, and the finding says so.
  const auto findings = diagnose(m);
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].kind == FindingKind::kLeakedHook);
  CHECK(findings[0].rank == 1);
  CHECK(findings[0].source == 1);
  CHECK(findings[0].function == f1);
}

TEST_CASE("traces of separate processes merge on the wall clock from their headers") {
  std::vector<trace::TraceData> traces;
  traces.push_back(rank_trace(0, false, 5'000'000));  // a late steady clock...
  traces.push_back(rank_trace(1, false, 1'000));
  traces[0].header.start_mono_ns = 5'000'000;  // ...that started at wall time 10'000
  traces[0].header.start_wall_ns = 10'000;
  traces[1].header.start_mono_ns = 1'000;      // rank 1 started earlier on the wall clock
  traces[1].header.start_wall_ns = 9'000;
  Model m(std::move(traces));
  CHECK(m.source(0) == 1);
  CHECK(m.time_ns(0) == 9'000);
  for (size_t i = 1; i < m.num_events(); ++i) CHECK(m.time_ns(i - 1) <= m.time_ns(i));
  CHECK_THROWS_WITH_AS(Model(std::vector<trace::TraceData>{}),
                       doctest::Contains("at least one trace"), std::invalid_argument);
}

TEST_CASE("leaf hooks follow the leaf to its re-created AccumulateGrad") {
  TraceBuilder b;
  const uint32_t probe = b.owner(OwnerKind::kUser, "probe");
  const uint64_t acc1 = b.accumulator("w [3]");
  const uint64_t pre = b.add_hook(acc1, HookKind::kTensorPre, probe);
  const uint64_t post_acc = b.add_hook(acc1, HookKind::kPostAccumulate, probe);
  const uint64_t post = b.add_hook(acc1, HookKind::kPost, probe);  // lives on the Node
  b.fire(acc1, pre, HookKind::kTensorPre, probe);
  b.remove(acc1, post, HookKind::kPost, probe, 0, trace::RemoveCause::kNodeReleased);
  b.release(acc1);
  const size_t released = b.size() - 1;
  const uint64_t acc2 = b.accumulator("w [3]", acc1);
  const size_t created = b.size() - 2;
  b.fire(acc2, pre, HookKind::kTensorPre, probe);
  Model m(b.take());

  const State between = m.state_at(released);
  CHECK(between.find(m.find_function(0, acc1)) == nullptr);
  REQUIRE(between.tensor_hooks.size() == 2);  // on the tensor, not lost
  CHECK(between.tensor_hooks[0].fires == 1);

  const State after = m.state_at(m.num_events() - 1);
  const FunctionAt* f2 = after.find(m.find_function(0, acc2));
  REQUIRE(f2 != nullptr);
  CHECK(after.tensor_hooks.empty());
  REQUIRE(f2->hooks[static_cast<int>(HookKind::kTensorPre)].size() == 1);
  REQUIRE(f2->hooks[static_cast<int>(HookKind::kPostAccumulate)].size() == 1);
  CHECK(f2->hooks[static_cast<int>(HookKind::kPost)].empty());  // dropped with acc1
  const HookAt& h = f2->hooks[static_cast<int>(HookKind::kTensorPre)][0];
  CHECK(m.hooks()[h.hook].key == pre);
  CHECK(h.fires == 2);  // one hook, counted across both AccumulateGrads
  CHECK(h.since == created);
  CHECK(m.hooks()[m.find_hook(0, post_acc)].ended_at == kNever);
  CHECK(m.functions()[m.find_function(0, acc2)].previous == m.find_function(0, acc1));
  // The per-leaf series sees 2 hooks throughout, the per-Function one does not.
  const auto leaf = hook_count_series(m, m.find_function(0, acc2), 5, true);
  CHECK(leaf.back().hooks == 2);
  const auto only_acc1 = hook_count_series(m, m.find_function(0, acc1), 5, false);
  CHECK(only_acc1.back().hooks == 0);
}

TEST_CASE("leaf hooks migrate in a real runtime trace") {
  Tensor w = Tensor::from_vector({3}, {0.1f, 0.2f, 0.3f}).set_requires_grad(true).set_name("w");
  const OwnerId owner = create_owner(OwnerKind::kUser, "migration probe");
  trace::MemoryRecorder rec;
  rec.start();
  HookKey pre = w.register_hook([](const Tensor& g) { return g; }, owner);
  w.register_post_accumulate_grad_hook([](const Tensor&) {}, owner);
  for (int step = 0; step < 3; ++step) sum(tanh(w)).backward();  // each graph freed after
  w.remove_hook(pre, owner);
  trace::TraceData data = rec.take_trace();
  destroy_owner(owner);
  Model m(std::move(data));

  std::vector<FunctionIndex> accs;
  for (FunctionIndex f = 0; f < m.functions().size(); ++f) {
    if (m.function_name(f) == "AccumulateGrad (w [3])") accs.push_back(f);
  }
  REQUIRE(accs.size() >= 3);  // re-created for each backward
  const HookIndex h = m.find_hook(0, pre.value);
  REQUIRE(h != kNoIndex);
  CHECK(m.fires(h).size() == 3);
  // Each time the leaf's tensor pre hook fired, it was on the AccumulateGrad of that moment.
  for (EventIndex fire : m.fires(h)) {
    const State st = m.state_at(fire);
    const FunctionIndex now = m.find_function(0, m.event(fire).node);
    const FunctionAt* f = st.find(now);
    REQUIRE(f != nullptr);
    CHECK(f->hooks[static_cast<int>(HookKind::kTensorPre)].size() == 1);
    CHECK(f->hooks[static_cast<int>(HookKind::kPostAccumulate)].size() == 1);
  }
  CHECK(m.hooks()[h].ended_at != kNever);
  CHECK(m.hooks()[h].removed_by == m.find_owner(0, owner));
}

TEST_CASE("Functions and owners created before the recording are named, not refused") {
  TraceBuilder b;
  b.push(EventKind::kHookFired, static_cast<uint8_t>(HookKind::kPre), 99, 5, 0, 7);
  b.push(EventKind::kNodeReleased, 0, 99);
  Model m(b.take());
  const FunctionIndex f = m.find_function(0, 99);
  REQUIRE(f != kNoIndex);
  CHECK(m.function_name(f) == "unknown Function #99");
  CHECK(m.owner_name(m.find_owner(0, 7)) == "owner #7");
  const State first = m.state_at(0);
  REQUIRE(first.find(f) != nullptr);
  CHECK(first.find(f)->hooks[static_cast<int>(HookKind::kPre)].size() == 1);
  CHECK(m.state_at(1).functions.empty());
  CHECK(m.describe(0) == "#0 r0 hook_fire pre key 5 on unknown Function #99 of owner #7");

  const Model empty{trace::TraceData{}};
  CHECK(empty.num_events() == 0);
  CHECK(diagnose(empty).empty());
  CHECK(Cursor(empty).state().functions.empty());
  CHECK_THROWS_WITH_AS(empty.state_at(0), doctest::Contains("past the end"), std::out_of_range);
}

TEST_CASE("diff of by-key and none: hook counts per Function and findings only in none") {
  SyntheticOptions o;
  o.events = 20'000;
  o.parameters = 6;
  o.rebuild_every = 5;
  Model by_key(make_synthetic_trace(o));
  o.policy = DestroyPolicy::kNone;
  Model none(make_synthetic_trace(o));
  const ModelDiff d = diff_models(by_key, none);
  CHECK(d.num_differing() == 6);  // the six parameters' AccumulateGrads
  for (const FunctionCounts& c : d.functions) {
    if (!c.differs()) continue;
    CHECK(c.function.rfind("AccumulateGrad (", 0) == 0);
    CHECK(c.a != kNoIndex);
    CHECK(c.b != kNoIndex);
    CHECK(c.hooks_a[static_cast<int>(HookKind::kPost)] == 1);
    CHECK(c.hooks_b[static_cast<int>(HookKind::kPost)] > 5);
  }
  auto has = [](const std::vector<Finding>& v, FindingKind k) {
    return std::any_of(v.begin(), v.end(), [&](const Finding& f) { return f.kind == k; });
  };
  CHECK(has(d.only_b, FindingKind::kLeakedHook));
  CHECK(has(d.only_b, FindingKind::kStaleFire));
  CHECK(has(d.only_b, FindingKind::kHookGrowth));
  CHECK_FALSE(has(d.only_a, FindingKind::kLeakedHook));
  const std::string text = format_diff(d, "by-key", "none");
  CHECK(text.find("post 1 -> ") != std::string::npos);
  // A model against itself: nothing differs.
  const ModelDiff same = diff_models(none, none);
  CHECK(same.num_differing() == 0);
  CHECK(same.only_a.empty());
  CHECK(same.only_b.empty());
}

TEST_CASE("statistics: fires per hook and owner, hook counts over time") {
  SyntheticOptions o;
  o.events = 20'000;
  o.parameters = 4;
  o.rebuild_every = 10;
  o.policy = DestroyPolicy::kNone;
  Model m(make_synthetic_trace(o));
  const auto owners = owner_stats(m);
  const auto hooks = hook_stats(m);
  uint64_t fires = 0, fire_events = 0;
  for (const HookStats& h : hooks) fires += h.fires;
  for (size_t i = 0; i < m.num_events(); ++i) {
    fire_events += m.event(i).kind == EventKind::kHookFired;
  }
  CHECK(fires == fire_events);
  const OwnerIndex r1 = m.find_owner(0, 3);  // user, probe, then Reducer 1
  REQUIRE(m.owner_name(r1) == "Reducer 1");
  CHECK(owners[r1].hooks_added == 4);
  CHECK(owners[r1].attached_at_end == 4);
  CHECK(owners[r1].stale_fires > 0);
  CHECK(owners[r1].fires > owners[r1].stale_fires);
  // Hooks on the first parameter's AccumulateGrad never shrink with policy none.
  const FunctionIndex acc = m.find_function(0, 1);
  const auto series = hook_count_series(m, acc, 50);
  REQUIRE(series.size() == 50);
  CHECK(series.front().hooks <= 1);
  CHECK(series.back().hooks > 5);
  for (size_t k = 1; k < series.size(); ++k) CHECK(series[k].hooks >= series[k - 1].hooks);
  const auto all = hook_count_series(m, kNoIndex, 10);
  CHECK(all.back().hooks == m.state_at(m.num_events() - 1).num_hooks());
}
