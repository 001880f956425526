#pragma once
// Hook lifetime lanes: one bar per hook from its add to its removal, with the
// moment its owner died and its fires split around it. The data behind the
// GUI's lanes view and `hookscope-cli lanes`. See Note [Hook lanes].

#include <cstdint>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Hook lanes]
// ~~~~~~~~~~~~~~~~~
// A lane is a hook's whole life, whatever Functions it sat on (a leaf's
// tensor hooks move between AccumulateGrads). `ended_at` is its removal (or
// the end of its Function / leaf), kNever while it is still attached at the
// end of the trace. `owner_died_at` is the owner's end (Note [Findings]);
// fires at or after it are stale. A lane "outlives its owner" when the owner
// died while the hook was still attached: the picture of a leak. A hook can
// also fire after its removal (Note [Module hooks in traces]): counted apart.
// A lane "outlives its use" when its owner, a Reducer, was replaced while
// alive and the hook still attached (Note [Lingering owners]): from
// `owner_replaced_at` its fires do nothing until the owner is destroyed.
struct HookLane {
  HookIndex hook = kNoIndex;
  FunctionIndex function = kNoIndex;  // where it was added
  OwnerIndex owner = kNoIndex;
  EventIndex added_at = 0;
  EventIndex ended_at = kNever;
  EventIndex owner_died_at = kNever;
  uint32_t fires_before = 0;  // before the owner died (all fires when it never did)
  uint32_t fires_after = 0;   // stale: at or after the owner's death
  uint32_t fires_after_removal = 0;  // after its own removal (PyTorch runs a snapshot of the list)
  EventIndex owner_replaced_at = kNever;  // kNever: never lingering
  uint32_t fires_lingering = 0;  // of fires_before: while its owner lingered (they did nothing)
  bool outlives_owner() const {
    return owner_died_at != kNever && (ended_at == kNever || ended_at > owner_died_at);
  }
  bool outlives_use() const {
    return owner_replaced_at != kNever && (ended_at == kNever || ended_at > owner_replaced_at);
  }
  // An alarm either way: the picture of a leak.
  bool leaks() const { return outlives_owner() || outlives_use(); }
};

// Every hook's lane, ordered by Function (creation order), then by add.
std::vector<HookLane> hook_lanes(const Model& model);

}  // namespace hookscope::analysis
