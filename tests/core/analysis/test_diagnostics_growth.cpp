// hook_growth (Note [Hook growth]): Reducers rebuilt over the same parameters
// whose old hooks stay, whether the old owners were destroyed or replaced
// while alive, and what is not growth (two DDPs in use, an owner of another
// kind, a Reducer never prepared, an owner that cleaned up).
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "testing/findings.h"

using namespace hookscope;
using namespace hookscope::analysis;
using trace::DestroyPolicy;
using trace::HookKind;
using trace::OwnerKind;

using testing::of_kind;
using testing::mentions;

namespace {

struct Rebuilt {
  trace::TraceData data;
  std::vector<size_t> second_adds;  // where Reducer 2 added its hook, per parameter
};

// PyTorch #21344 with the old DDPs kept alive by a forgotten reference:
// `generations` Reducers in turn over two parameters; each prepares two
// backwards, then a failure and the next DDP is built on the same module.
// Every backward fires every hook on each AccumulateGrad; only the Reducer
// prepared for it marks the parameter ready, the others do nothing. With
// `destroy_first`, Reducer 1 is destroyed (policy none: its hooks stay).
Rebuilt kept_alive(int generations, bool destroy_first = false) {
  TraceBuilder b;
  const std::vector<uint64_t> acc = {b.accumulator("0.weight [16, 8]"),
                                     b.accumulator("0.bias [16]")};
  std::vector<std::vector<std::pair<uint64_t, uint32_t>>> live(acc.size());
  Rebuilt out;
  for (int r = 1; r <= generations; ++r) {
    const uint32_t owner = b.owner(OwnerKind::kReducer, "Reducer " + std::to_string(r));
    b.reducer_constructed(owner, 2, 1);
    for (size_t p = 0; p < acc.size(); ++p) {
      if (r == 2) out.second_adds.push_back(b.size());
      live[p].emplace_back(b.add_hook(acc[p], HookKind::kPost, owner), owner);
    }
    for (uint64_t backward = 1; backward <= 2; ++backward) {
      b.prepare_for_backward(owner, backward);
      for (size_t p = 0; p < acc.size(); ++p) {
        for (auto [key, o] : live[p]) b.fire(acc[p], key, HookKind::kPost, o);
        b.mark_ready(owner, acc[p], static_cast<uint32_t>(p), 0);
      }
    }
    if (destroy_first && r == 1) {
      b.reducer_destroyed(owner, DestroyPolicy::kNone, 0);
      b.destroy_owner(owner);
    }
  }
  out.data = b.take();
  return out;
}

}  // namespace

TEST_CASE("hook_growth: Reducers replaced while alive keep their hooks, 1 -> 2 -> 3 -> 4") {
  Rebuilt t = kept_alive(4);
  Model m(std::move(t.data));
  const auto all = diagnose(m);
  const auto growth = of_kind(all, FindingKind::kHookGrowth);
  REQUIRE(growth.size() == 2);  // one per AccumulateGrad
  for (size_t p = 0; p < growth.size(); ++p) {
    const Finding& f = growth[p];
    CAPTURE(f.message);
    CHECK(f.severity == Severity::kError);
    CHECK(f.count == 4);
    CHECK(mentions(f, "grew 1 → 2 → 3 → 4 as 4 reducer owners"));
    CHECK(mentions(f, "Reducer 1 replaced, Reducer 2 replaced, Reducer 3 replaced, Reducer 4)"));
    CHECK(mentions(f, "still alive"));
    CHECK_FALSE(mentions(f, "destroyed"));
    CHECK(m.owner_name(f.owner) == "Reducer 4");
    // It holds from Reducer 2's addition; the proof is every Reducer's addition.
    CHECK(f.at == t.second_adds[p]);
    CHECK(f.events.size() == 4);
    for (size_t e : f.events) CHECK(m.event(e).kind == trace::EventKind::kHookAdded);
  }
  CHECK(mentions(growth[0], "AccumulateGrad (0.weight [16, 8])"));
  CHECK(mentions(growth[1], "AccumulateGrad (0.bias [16])"));
  // The other rules say what they said before: four live Reducers at once.
  CHECK_FALSE(of_kind(all, FindingKind::kMultiOwner).empty());
  CHECK(of_kind(all, FindingKind::kLeakedHook).empty());
  CHECK(of_kind(all, FindingKind::kStaleFire).empty());
}

TEST_CASE("hook_growth: one replaced Reducer is already growth, and destroyed ones are named so") {
  {
    Model m(kept_alive(2).data);
    const auto growth = of_kind(diagnose(m), FindingKind::kHookGrowth);
    REQUIRE(growth.size() == 2);
    CHECK(growth[0].count == 2);
    CHECK(mentions(growth[0], "(Reducer 1 replaced, Reducer 2)"));
  }
  Model m(kept_alive(3, /*destroy_first=*/true).data);
  const auto growth = of_kind(diagnose(m), FindingKind::kHookGrowth);
  REQUIRE(growth.size() == 2);
  CAPTURE(growth[0].message);
  CHECK(mentions(growth[0], "(Reducer 1 destroyed, Reducer 2 replaced, Reducer 3)"));
  // Each old owner as the run had it (Note [Lingering owners]).
  CHECK(mentions(growth[0], "Reducer 1 was destroyed at #"));
  CHECK(mentions(growth[0], "with its hooks attached: they stay and keep firing"));
  CHECK(mentions(growth[0], "Reducer 2 was replaced by Reducer 3 at #"));
  CHECK(mentions(growth[0], "and is still alive"));
}

TEST_CASE("not hook_growth: two DDPs on one module both in use are multi_owner only") {
  TraceBuilder b;
  const uint64_t acc = b.accumulator("fc.weight [8, 4]");
  const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
  b.reducer_constructed(r1, 1, 1);
  const uint64_t k1 = b.add_hook(acc, HookKind::kPost, r1);
  b.prepare_for_backward(r1, 1);  // used before the second arrives, and after
  b.fire(acc, k1, HookKind::kPost, r1);
  const uint32_t r2 = b.owner(OwnerKind::kReducer, "Reducer 2");
  b.reducer_constructed(r2, 1, 1);
  const uint64_t k2 = b.add_hook(acc, HookKind::kPost, r2);
  for (uint64_t step = 0; step < 4; ++step) {
    const uint32_t use = step % 2 ? r2 : r1;
    b.prepare_for_backward(use, step + 2);
    b.fire(acc, k1, HookKind::kPost, r1);
    b.fire(acc, k2, HookKind::kPost, r2);
    b.mark_ready(use, acc, 0, 0);
  }
  Model m(b.take());
  const auto all = diagnose(m);
  CHECK(of_kind(all, FindingKind::kHookGrowth).empty());
  CHECK(of_kind(all, FindingKind::kMultiOwner).size() == 1);
}

TEST_CASE("not hook_growth: a Reducer never prepared, a user's hook, a Reducer that cleaned up") {
  SUBCASE("no Reducer ever prepared a backward: no evidence that one was replaced") {
    TraceBuilder b;
    const uint64_t acc = b.accumulator("fc.bias [8]");
    const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
    const uint32_t r2 = b.owner(OwnerKind::kReducer, "Reducer 2");
    b.add_hook(acc, HookKind::kPost, r1);
    b.add_hook(acc, HookKind::kPost, r2);
    const auto all = diagnose(Model(b.take()));
    CHECK(of_kind(all, FindingKind::kHookGrowth).empty());
    CHECK(of_kind(all, FindingKind::kMultiOwner).size() == 1);
  }
  SUBCASE("a user's post hook next to the lingering Reducer's is no rebuild") {
    TraceBuilder b;
    const uint64_t acc = b.accumulator("fc.bias [8]");
    const uint32_t r1 = b.owner(OwnerKind::kReducer, "Reducer 1");
    const uint32_t probe = b.owner(OwnerKind::kUser, "probe");
    b.add_hook(acc, HookKind::kPost, r1);
    b.prepare_for_backward(r1, 1);
    b.add_hook(acc, HookKind::kPost, probe);
    b.add_hook(acc, HookKind::kPost, probe);
    CHECK(diagnose(Model(b.take())).empty());
  }
  SUBCASE("each Reducer removed its hooks before the next added (the deleted-DDP run)") {
    TraceBuilder b;
    const uint64_t acc = b.accumulator("fc.bias [8]");
    for (int r = 1; r <= 3; ++r) {
      const uint32_t o = b.owner(OwnerKind::kReducer, "Reducer " + std::to_string(r));
      b.reducer_constructed(o, 1, 1);
      const uint64_t k = b.add_hook(acc, HookKind::kPost, o);
      b.prepare_for_backward(o, 1);
      b.fire(acc, k, HookKind::kPost, o);
      b.mark_ready(o, acc, 0, 0);
      if (r < 3) {
        b.remove(acc, k, HookKind::kPost, o, o);
        b.reducer_destroyed(o, DestroyPolicy::kByKey, 1);
        b.destroy_owner(o);
      }
    }
    CHECK(diagnose(Model(b.take())).empty());
  }
}
