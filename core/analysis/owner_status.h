#pragma once
// Whether an owner is alive, lingering (replaced but still alive) or
// destroyed at an event: the one place that decides it (Note [Lingering
// owners]). The graph, the timeline, Lanes, Explain, the Reducers panel,
// hook_growth and the CLI all ask here, so they say the same words.

#include <string>
#include <string_view>

#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Lingering owners]
// ~~~~~~~~~~~~~~~~~~~~~~~
// A DDP rebuilt on the same module while the old DDP object is kept alive
// (a list of models, a forgotten reference: PyTorch #21344) leaves the old
// Reducer's hooks on every AccumulateGrad. They fire on every backward and
// do nothing (kAutogradHookNoop): the old Reducer is *lingering*, a leak in
// kind as much as a destroyed owner whose hooks stayed. The model marks a
// Reducer's owner replaced (OwnerInfo::replaced_at) at the first
// kPrepareForBackward of a newer Reducer (constructed later, same trace and
// rank) that has hooks on a Function the old one has hooks on (the same
// parameters, a leaf's AccumulateGrads counted as one) and whose every
// prepare comes after the old one's last. Not replaced: a Reducer that never
// prepared (no evidence either way), two Reducers used in turn (each prepares
// after the other: two DDPs on one module, multi_owner), one destroyed
// before the newer one took over (destroyed, not lingering). Its status at
// event e is then lingering from replaced_at until it is destroyed, and
// destroyed from destroyed_at on. A hook of a lingering owner is an alarm
// drawn in its own colour (palette().lingering); the fires it makes are
// the evidence.
//
// A Reducer's own hook that does nothing because the DDP ran forward inside
// no_sync() (gradient accumulation, kNoopNoSync) is correct and expected: a
// neutral event, never an alarm (noop_cause).
enum class OwnerStatus : uint8_t { kAlive = 0, kLingering = 1, kDestroyed = 2 };

// At event `at` (right after it): destroyed once destroyed_at <= at,
// lingering once replaced_at <= at.
inline OwnerStatus owner_status(const OwnerInfo& o, EventIndex at) {
  if (o.destroyed_at <= at) return OwnerStatus::kDestroyed;
  if (o.replaced_at <= at) return OwnerStatus::kLingering;
  return OwnerStatus::kAlive;
}
OwnerStatus owner_status(const Model& m, OwnerIndex owner, EventIndex at);
// "alive", "replaced, still alive", "destroyed".
std::string_view to_string(OwnerStatus status);
// From when the owner's hooks still attached are an alarm: replaced or
// destroyed, whichever comes first; kNever if neither.
inline EventIndex alarm_from(const OwnerInfo& o) { return std::min(o.replaced_at, o.destroyed_at); }

// The sentence for a replaced owner, as of event `at` (kNever: the end of
// the trace): "Reducer 1 was replaced by Reducer 3 at #40 and is still
// alive", "... and was destroyed at #90". Empty when it was never replaced.
std::string replaced_text(const Model& m, OwnerIndex owner, EventIndex at = kNever);

// Why a Reducer's hook did nothing (a kAutogradHookNoop event).
enum class NoopCause : uint8_t {
  kNotPrepared = 0,  // the Reducer did not prepare for this backward (no DDP forward before it)
  kNoSync = 1,       // its DDP ran forward inside no_sync(): expected, neutral
  kDestroyed = 2,    // its Reducer is gone (the hook outlived it)
  kLingering = 3,    // its Reducer was replaced by a newer one and is still alive
};
// The runtime's and the bridge's reason codes (the event's sub: Note
// [Event record] kAutogradHookNoop) as the analysis reads them; kNoSync
// only where the trace says so.
NoopCause noop_cause(const Model& m, size_t index);
// Whether a noop of this cause is an alarm (lingering or destroyed owners).
inline bool is_alarm(NoopCause c) { return c == NoopCause::kDestroyed || c == NoopCause::kLingering; }

}  // namespace hookscope::analysis
