// Diagnostics: each fires on a trace that has the bug, and stays silent on a
// clean one (Note [Findings]).
#include <doctest/doctest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "analysis/diagnostics.h"
#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/stats.h"
#include "analysis/synthetic.h"
#include "testing/findings.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::DestroyPolicy;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

using testing::of_kind;
using testing::mentions;

namespace {

// DDP destroyed and rebuilt on the same module three times; every backward
// fires every hook still on the parameter's AccumulateGrad.
trace::TraceData rebuilds(DestroyPolicy policy) {
  TraceBuilder b;
  const uint64_t acc = b.accumulator("0.weight [4, 3]");
  std::vector<std::pair<uint64_t, uint32_t>> live;  // (key, owner) on acc
  for (int r = 1; r <= 3; ++r) {
    const uint32_t owner = b.owner(OwnerKind::kReducer, "Reducer " + std::to_string(r));
    b.reducer_constructed(owner, 1, 1);
    live.emplace_back(b.add_hook(acc, HookKind::kPost, owner), owner);
    b.prepare_for_backward(owner, 0);
    for (auto [key, o] : live) b.fire(acc, key, HookKind::kPost, o);
    b.mark_ready(owner, acc, 0, 0);
    const uint64_t c = b.bucket_ready(owner, 0, 1);
    b.collective_end(owner, c);
    b.buckets_finalized(owner, 0);
    uint32_t removed = 0;
    if (policy == DestroyPolicy::kByKey) {
      b.remove(acc, live.back().first, HookKind::kPost, owner, owner);
      live.pop_back();
      removed = 1;
    }
    b.reducer_destroyed(owner, policy, removed);
    b.destroy_owner(owner);
  }
  return b.take();
}

}  // namespace

TEST_CASE("leaked_hook, stale_fire and hook_growth after Reducer rebuilds with policy none") {
  Model m(rebuilds(DestroyPolicy::kNone));
  const auto all = diagnose(m);
  const auto leaks = of_kind(all, FindingKind::kLeakedHook);
  REQUIRE(leaks.size() == 3);  // one per (owner, Function)
  for (int r = 0; r < 3; ++r) {
    const Finding& f = leaks[r];
    CAPTURE(f.message);
    CHECK(f.severity == Severity::kError);
    CHECK(m.owner_name(f.owner) == "Reducer " + std::to_string(r + 1));
    CHECK(mentions(f, "Reducer " + std::to_string(r + 1)));
    CHECK(mentions(f, "AccumulateGrad (0.weight [4, 3])"));
    CHECK(mentions(f, "key"));
    CHECK(mentions(f, "until the end of the trace"));
    CHECK(m.function_name(f.function) == "AccumulateGrad (0.weight [4, 3])");
    // The proof: the hook's addition and the owner's destruction.
    const HookIndex h = m.find_hook(0, f.key);
    REQUIRE(h != kNoIndex);
    CHECK(std::count(f.events.begin(), f.events.end(), m.hooks()[h].added_at) == 1);
    CHECK(std::count(f.events.begin(), f.events.end(), m.owners()[f.owner].destroyed_at) == 1);
    CHECK(f.at == m.owners()[f.owner].destroyed_at);
  }
  // Reducer 1's hook fired in the backwards of Reducers 2 and 3, Reducer 2's in 3's.
  const auto stale = of_kind(all, FindingKind::kStaleFire);
  REQUIRE(stale.size() == 2);
  CHECK(m.owner_name(stale[0].owner) == "Reducer 1");
  CHECK(stale[0].count == 2);
  CHECK(m.owner_name(stale[1].owner) == "Reducer 2");
  CHECK(stale[1].count == 1);
  for (size_t e : stale[0].events) CHECK(e < m.num_events());
  CHECK(m.event(stale[0].at).kind == trace::EventKind::kHookFired);

  const auto growth = of_kind(all, FindingKind::kHookGrowth);
  REQUIRE(growth.size() == 1);
  CHECK(growth[0].count == 3);
  CHECK(mentions(growth[0], "1 → 2 → 3"));
  CHECK(mentions(growth[0], "AccumulateGrad (0.weight [4, 3])"));
  CHECK(of_kind(all, FindingKind::kMultiOwner).empty());  // never two live Reducers
  CHECK(of_kind(all, FindingKind::kCollateralRemoval).empty());
}

TEST_CASE("a Reducer that removes its own hooks (by-key) leaves no findings") {
  Model m(rebuilds(DestroyPolicy::kByKey));
  const auto all = diagnose(m);
  CHECK(all.empty());
  for (const Finding& f : all) MESSAGE(f.message);
  CHECK(format_findings(m, all) == "no findings\n");
}

// The shape of `hookscope-cli launch ... recovery` rank traces: a per-process
// trace (header.rank >= 0, one rank), owner ids from 1, Reducer 1 announced by
// the start-of-recording snapshot (actor = kOwnerFromSnapshot) with a hook
// older than the recording, DDP events whose `actor` is a count (buckets,
// hooks removed) equal to an owner id, and every Reducer removing its own
// hooks by key. The owner is its own remover: no collateral_removal, and the
// statistics say "removed by self". Same trace as threads (header.rank -1).
TEST_CASE("process-mode trace: a Reducer removing its own hooks by key is not collateral") {
  for (int32_t header_rank : {0, 2, -1}) {
    CAPTURE(header_rank);
    TraceBuilder b(header_rank);
    const uint64_t w = b.accumulator("0.weight [32, 16]");
    // The bias's AccumulateGrad and its old hook predate the recording (a hook
    // fired with no kHookAdded on a Function created while recording is a
    // malformed trace, Note [Malformed traces]).
    const uint64_t bias = 900;
    b.push(trace::EventKind::kOwnerCreated, static_cast<uint8_t>(OwnerKind::kReducer), 0, 0,
           b.intern("Reducer 1"), 1, trace::kOwnerFromSnapshot);
    b.reducer_constructed(1, 2, 2);  // actor = 2 buckets: not owner 2
    const uint64_t old_key = 1000;   // added before the recording: first seen firing
    b.fire(bias, old_key, HookKind::kPost, 1);
    const uint64_t k1 = b.add_hook(w, HookKind::kPost, 1);
    b.fire(w, k1, HookKind::kPost, 1);
    b.remove(w, k1, HookKind::kPost, 1, 1);
    b.remove(bias, old_key, HookKind::kPost, 1, 1);
    b.reducer_destroyed(1, DestroyPolicy::kByKey, 2);  // actor = 2 hooks removed
    b.destroy_owner(1);
    b.push(trace::EventKind::kOwnerCreated, static_cast<uint8_t>(OwnerKind::kReducer), 0, 0,
           b.intern("Reducer 2"), 2);
    b.reducer_constructed(2, 2, 1);
    const uint64_t k2 = b.add_hook(w, HookKind::kPost, 2);
    const uint64_t k3 = b.add_hook(bias, HookKind::kPost, 2);
    b.remove(w, k2, HookKind::kPost, 2, 2);
    b.remove(bias, k3, HookKind::kPost, 2, 2);
    b.reducer_destroyed(2, DestroyPolicy::kByKey, 2);
    b.destroy_owner(2);
    Model m(b.take());

    REQUIRE(m.owners().size() == 2);  // counts in `actor` made no owners
    for (OwnerIndex o = 0; o < 2; ++o) {
      CHECK(m.owners()[o].id == o + 1);
      CHECK(m.owner_name(o) == "Reducer " + std::to_string(o + 1));
    }
    REQUIRE(m.hooks().size() == 4);
    for (const HookInfo& hook : m.hooks()) {
      CAPTURE(hook.key);
      CHECK(hook.owner != kNoIndex);
      CHECK(hook.removed_by == hook.owner);
      CHECK(hook.cause == RemoveCause::kByKey);
      CHECK_FALSE(hook.implicit_end);
    }
    const auto all = diagnose(m);
    for (const Finding& f : all) MESSAGE(f.message);
    CHECK(of_kind(all, FindingKind::kCollateralRemoval).empty());
    CHECK(all.empty());
    const auto stats = owner_stats(m);
    REQUIRE(stats.size() == 2);
    for (const OwnerStats& s : stats) {
      CHECK(s.hooks_added == 2);
      CHECK(s.removed_by_self == 2);
      CHECK(s.removed_by_others == 0);
      CHECK(s.removals_it_made == 2);
    }
  }
}

TEST_CASE("collateral_removal and multi_owner: two DDPs on one module, by-type sweep") {
  for (auto policy : {DestroyPolicy::kByType, DestroyPolicy::kByKey}) {
    CAPTURE(trace::to_string(policy));
    TraceBuilder b;
    const uint64_t acc = b.accumulator("fc.bias [8]");
    const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
    const uint32_t r2 = b.owner(OwnerKind::kReducer, "Reducer 2");
    const uint64_t k1 = b.add_hook(acc, HookKind::kPost, r1);
    const uint64_t k2 = b.add_hook(acc, HookKind::kPost, r2);
    b.fire(acc, k1, HookKind::kPost, r1);
    b.fire(acc, k2, HookKind::kPost, r2);
    const auto cause =
        policy == DestroyPolicy::kByType ? RemoveCause::kByType : RemoveCause::kByKey;
    b.remove(acc, k1, HookKind::kPost, r1, r1, cause);
    if (policy == DestroyPolicy::kByType) b.remove(acc, k2, HookKind::kPost, r2, r1, cause);
    b.reducer_destroyed(r1, policy, policy == DestroyPolicy::kByType ? 2 : 1);
    b.destroy_owner(r1);
    Model m(b.take());
    const auto all = diagnose(m);
    const auto multi = of_kind(all, FindingKind::kMultiOwner);
    REQUIRE(multi.size() == 1);
    CHECK(multi[0].severity == Severity::kWarning);
    CHECK(mentions(multi[0], "Reducer 1, Reducer 2"));
    CHECK(mentions(multi[0], "AccumulateGrad (fc.bias [8])"));
    const auto collateral = of_kind(all, FindingKind::kCollateralRemoval);
    if (policy == DestroyPolicy::kByType) {
      REQUIRE(collateral.size() == 1);
      CHECK(collateral[0].key == k2);
      CHECK(m.owner_name(collateral[0].owner) == "Reducer 2");
      CHECK(mentions(collateral[0], "removed at event #"));
      CHECK(mentions(collateral[0], "by Reducer 1"));
      CHECK(mentions(collateral[0], "still alive"));
      CHECK(collateral[0].severity == Severity::kError);
    } else {
      CHECK(collateral.empty());
    }
    CHECK(of_kind(all, FindingKind::kLeakedHook).empty());
  }
}

TEST_CASE("failed_removal says why the key matched nothing") {
  TraceBuilder b;
  const uint32_t probe = b.owner(OwnerKind::kUser, "probe");
  const uint64_t f = b.function("MulBackward0");
  const uint64_t key = b.add_hook(f, HookKind::kPre, probe);
  b.remove(f, key, HookKind::kPre, probe, probe);
  b.remove_failed(f, key, HookKind::kPre, probe);  // the stale key
  b.remove_failed(f, 777, HookKind::kPre, probe);  // never existed
  Model m(b.take());
  const auto failed = of_kind(diagnose(m), FindingKind::kFailedRemoval);
  REQUIRE(failed.size() == 2);
  CHECK(mentions(failed[0], "probe asked to remove pre hook key"));
  CHECK(mentions(failed[0], "already removed at event #"));
  CHECK(failed[0].events.size() == 2);
  CHECK(mentions(failed[1], "no hook in the trace ever had this key"));
  CHECK(failed[1].key == 777);

  TraceBuilder clean;
  const uint32_t p = clean.owner(OwnerKind::kUser, "probe");
  const uint64_t g = clean.function("MulBackward0");
  clean.remove(g, clean.add_hook(g, HookKind::kPre, p), HookKind::kPre, p, p);
  CHECK(diagnose(Model(clean.take())).empty());
}

TEST_CASE("marked_twice and unused_parameter name the parameter and the backward") {
  TraceBuilder b;
  const uint64_t w = b.accumulator("0.weight [4, 3]");
  const uint64_t bias = b.accumulator("0.bias [4]");
  const uint32_t r = b.owner(OwnerKind::kReducer, "Reducer 1");
  b.reducer_constructed(r, 2, 1);
  for (uint64_t backward = 1; backward <= 2; ++backward) {
    b.prepare_for_backward(r, backward);
    b.mark_ready(r, w, 0, 0);
    if (backward == 2) b.marked_twice(r, w, "0.weight", 0);
    b.unused_parameter(r, bias, "0.bias", 1);  // at the end of the backward: unhandled
  }
  Model m(b.take());
  const auto all = diagnose(m);
  const auto twice = of_kind(all, FindingKind::kMarkedTwice);
  REQUIRE(twice.size() == 1);
  CHECK(twice[0].severity == Severity::kError);
  CHECK(mentions(twice[0], "Reducer 1 marked parameter '0.weight' (index 0)"));
  CHECK(mentions(twice[0], "in backward 2"));
  CHECK(twice[0].events.size() == 3);  // prepare, first mark, second mark
  const auto unused = of_kind(all, FindingKind::kUnusedParameter);
  REQUIRE(unused.size() == 1);  // one per (Reducer, parameter)
  CHECK(unused[0].count == 2);
  CHECK(unused[0].severity == Severity::kError);
  CHECK(mentions(unused[0], "'0.bias' (index 1)"));
  CHECK(mentions(unused[0], "AccumulateGrad (0.bias [4])"));

  // find_unused_parameters: marked ready right away, a warning only.
  TraceBuilder ok;
  const uint64_t w2 = ok.accumulator("0.weight [4, 3]");
  const uint64_t b2 = ok.accumulator("0.bias [4]");
  const uint32_t r2 = ok.owner(OwnerKind::kReducer, "Reducer 1");
  ok.reducer_constructed(r2, 2, 1);
  ok.prepare_for_backward(r2, 1);
  ok.unused_parameter(r2, b2, "0.bias", 1);
  ok.mark_ready(r2, b2, 1, 0);
  ok.mark_ready(r2, w2, 0, 0);
  const auto handled = diagnose(Model(ok.take()));
  REQUIRE(handled.size() == 1);
  CHECK(handled[0].severity == Severity::kWarning);
  CHECK(of_kind(handled, FindingKind::kMarkedTwice).empty());
}

TEST_CASE("a leaf hook whose owner is gone is leaked even while the leaf has no AccumulateGrad") {
  TraceBuilder b;
  const uint32_t probe = b.owner(OwnerKind::kUser, "probe");
  const uint64_t acc = b.accumulator("x [3]");
  b.add_hook(acc, HookKind::kPostAccumulate, probe);
  b.release(acc);
  b.destroy_owner(probe);
  Model m(b.take());
  const auto leaks = of_kind(diagnose(m), FindingKind::kLeakedHook);
  REQUIRE(leaks.size() == 1);
  CHECK(mentions(leaks[0], "the leaf tensor of AccumulateGrad (x [3])"));
}

TEST_CASE("a thousand leaked hooks print as a few lines, all of them on request") {
  SyntheticOptions o;
  o.events = 40'000;
  o.parameters = 500;
  o.rebuild_every = 2;
  o.policy = DestroyPolicy::kNone;
  Model m(make_synthetic_trace(o));
  const auto all = diagnose(m);
  const FindingCounts counts = count_findings(all);
  CHECK(counts.per_kind[static_cast<int>(FindingKind::kLeakedHook)] >= 1000);
  CHECK(counts.per_kind[static_cast<int>(FindingKind::kHookGrowth)] == 500);
  const std::string text = format_findings(m, all);
  const auto lines = std::count(text.begin(), text.end(), '\n');
  CHECK(lines < 60);
  const std::string full = format_findings(m, all, SIZE_MAX);
  CHECK(std::count(full.begin(), full.end(), '\n') > static_cast<long>(all.size()));
  CHECK(to_string(FindingKind::kCollateralRemoval) == "collateral_removal");
  CHECK(finding_kind_from_string("hook_growth") == FindingKind::kHookGrowth);
  CHECK_THROWS_WITH_AS(finding_kind_from_string("leak"), doctest::Contains("leaked_hook"),
                       std::invalid_argument);
}
