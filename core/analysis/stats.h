#pragma once
// Statistics over a model: fires per hook and per owner, and hook counts over time.

#include <cstdint>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

struct HookStats {
  HookIndex hook = kNoIndex;
  uint32_t fires = 0;
  uint32_t stale_fires = 0;  // after its owner was destroyed (Note [Findings])
};

// One per hook, indexed by HookIndex.
std::vector<HookStats> hook_stats(const Model& model);

struct OwnerStats {
  OwnerIndex owner = kNoIndex;
  uint32_t hooks_added = 0;
  uint32_t removed_by_self = 0;    // by key, by this owner
  uint32_t removed_by_others = 0;  // by key or by type, by someone else
  uint32_t dropped = 0;            // went with their Function or leaf tensor
  uint32_t attached_at_end = 0;
  uint64_t fires = 0;
  uint64_t stale_fires = 0;
  uint32_t removals_it_made = 0;   // hooks of anyone this owner removed
  uint32_t failed_removals = 0;    // its removals that found nothing
};

// One per owner, indexed by OwnerIndex.
std::vector<OwnerStats> owner_stats(const Model& model);

struct SeriesPoint {
  size_t index = 0;    // event
  uint32_t hooks = 0;  // attached right after it
};

// Hooks attached to `function` at `samples` evenly spaced events (the first
// and the last included). With `follow_leaf`, an AccumulateGrad counts for
// its whole leaf: every AccumulateGrad the leaf had, and its tensor while it
// had none (Note [Leaf hooks live on the tensor]). function = kNoIndex:
// every hook in the model.
std::vector<SeriesPoint> hook_count_series(const Model& model, FunctionIndex function,
                                           size_t samples, bool follow_leaf = true);

}  // namespace hookscope::analysis
