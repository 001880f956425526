#pragma once
// hook_growth (Note [Findings]): what the per-Function sweep of
// diagnostics.cpp needs beyond its counts, and the finding's text.

#include <cstdint>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Hook growth]
// ~~~~~~~~~~~~~~~~~~
// The hooks of one kind on one Function grow when owners are rebuilt over the
// same parameters and the old ones keep their hooks there (PyTorch #21344:
// DDP rebuilt after each failure). The sweep looks at each owner's first hook
// of a kind on a Function; it is growth from the first such addition at which
// an earlier owner of the same kind still has a hook of that kind there and
// that earlier owner is
//  * destroyed (its hooks outlived it: leaked, they keep firing), or
//  * a Reducer that was replaced while alive: it prepared a backward
//    (kPrepareForBackward) before, and never again from this addition on. The
//    DDP object was replaced but something (a reference the user forgot, a
//    list of models, an exception's traceback) keeps it, so its Reducer's
//    hooks stay on every AccumulateGrad and fire as no-ops on every backward.
// Not growth: two Reducers that both keep preparing backwards after the
// second arrives (two DDPs wrapping one module, used in turn: multi_owner
// only), a Reducer never prepared at all (no evidence either way: a trace
// without the DDP story), an owner that removed its hooks before the next one
// added (by-key cleanup), an owner of another kind (a user's post hook next
// to a lingering Reducer's). One finding per (Function, hook kind, owner
// kind); `count` is the most hooks of that kind there at once, the series the
// count after each owner's first addition, and the message names the owners
// in order and says which were destroyed and which were replaced but alive.

// The additions of one hook kind on one Function by owners of one kind, one
// per owner (its first).
struct HookGrowth {
  std::vector<uint32_t> counts;     // hooks of the kind there, this one included
  std::vector<EventIndex> at;       // the additions
  std::vector<OwnerIndex> adders;   // their owners
  EventIndex first = kNever;        // the first addition that made it growth
};

// Per owner: the last kPrepareForBackward of its Reducer; kNever for owners
// that are no Reducer or never prepared one.
std::vector<EventIndex> last_prepares(const Model& m);

// Whether Reducer owner `o`, with a hook on a Function when another owner
// adds one at event `a`, had been replaced by then (Note [Hook growth]).
inline bool replaced_by(const std::vector<EventIndex>& last_prepare, OwnerIndex o,
                        EventIndex a) {
  return o < last_prepare.size() && last_prepare[o] != kNever && last_prepare[o] < a;
}

// Fills the count, proving events and message of `out` (made for `f` and
// the last adder) from growth `g` of hooks of `kind`.
void describe_growth(const Model& m, trace::HookKind kind, FunctionIndex f, const HookGrowth& g,
                     const std::vector<EventIndex>& last_prepare, Finding& out);

}  // namespace hookscope::analysis
