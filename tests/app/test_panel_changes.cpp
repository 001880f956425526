// "What changed at this event" (app/panel_changes.h): hooks added, removed
// and fired on the rank since the previous event of the same kind.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "panel_changes.h"

using namespace hookscope;
using trace::HookKind;

TEST_CASE("changes: hooks added, removed and fired since the rank's previous event of the same kind") {
  analysis::TraceBuilder b;
  const uint32_t owner = b.owner(trace::OwnerKind::kUser, "probe");
  const uint64_t f = b.function("MulBackward0");
  const uint64_t k1 = b.add_hook(f, HookKind::kPost, owner);
  const size_t fire1 = b.size();
  b.fire(f, k1, HookKind::kPost, owner);
  const size_t added = b.size();
  const uint64_t k2 = b.add_hook(f, HookKind::kPost, owner);
  b.rank(1);
  b.add_hook(b.function("AddBackward0"), HookKind::kPost, owner);  // another rank: not counted
  b.rank(0);
  const size_t removed = b.size();
  b.remove(f, k1, HookKind::kPost, owner, owner);
  const size_t fire2 = b.size();
  b.fire(f, k2, HookKind::kPost, owner);
  const analysis::Model m(b.take());

  const app::EventChanges c = app::changes_since_previous(m, fire2);
  CHECK(c.since == fire1);
  REQUIRE(c.added.size() == 1);
  CHECK(c.added[0] == added);
  REQUIRE(c.removed.size() == 1);
  CHECK(c.removed[0] == removed);
  REQUIRE(c.fired.size() == 1);
  CHECK(c.fired[0] == fire2);

  // The first fire has no earlier one: everything from the start counts.
  const app::EventChanges first = app::changes_since_previous(m, fire1);
  CHECK(first.since == analysis::kNever);
  CHECK(first.num_added == 1);
  CHECK(first.num_fired == 1);
  // A short scan budget stops early and says where it started.
  const app::EventChanges capped = app::changes_since_previous(m, fire2, 2, 1);
  CHECK(capped.since == analysis::kNever);
  CHECK(capped.scanned_from == fire2 - 2);
  CHECK(capped.num_removed == 1);
}

#endif
