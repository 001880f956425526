#pragma once
// "Why did this fire?": for one hook_fire event, the chain of events that
// explains it — who added the hook and when, whether its owner was destroyed
// or the hook removed before it fired, the backward pass that fired it, and
// what its Reducer did with it. The data behind the Function inspector's
// explanation and `hookscope-cli explain`.

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

struct ExplainStep {
  EventIndex at = kNever;  // the event this step rests on (a link in the GUI)
  std::string text;
};

enum class FireVerdict : uint8_t {
  kNormal = 0,        // owner alive, hook attached
  kStale = 1,         // its owner was destroyed before (Note [Findings] stale_fire)
  kAfterRemoval = 2,  // the hook had been removed: it ran from a snapshot of the list
  // The trace cannot show why it fired: its key was never added, or its
  // owner never declared (Note [What explain can prove]).
  kUnproven = 3,
  // Its owner, a Reducer, was replaced by a newer one and is still alive
  // (Note [Lingering owners]): the hook is attached, fires, and does nothing.
  kLingering = 4,
};
std::string_view to_string(FireVerdict v);  // "normal", "stale", "after_removal", "unproven", "lingering"

// Note [What explain can prove]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// An explanation rests on events the trace holds. A hook whose key was never
// added (the model made it up on first reference, Note [Analysis ids]) has
// no add to point at, and an owner never declared has no life the trace
// shows: "normal fire: alive and attached" would claim what nothing proves.
// Such a fire is `unproven`, its steps say what is missing (with no event
// link: never an invented "#0 ... added"), and a fire the trace itself calls
// impossible (a malformed_trace at that event) says so. The Function named
// is always the event's own (its node id), not the one the hook was added to.

struct Explanation {
  EventIndex fire = kNever;
  HookIndex hook = kNoIndex;
  FireVerdict verdict = FireVerdict::kNormal;
  std::string summary;              // one sentence
  std::vector<ExplainStep> steps;   // in event order
};

// Throws std::invalid_argument when `index` is not a hook_fire event.
Explanation explain_fire(const Model& model, size_t index);

}  // namespace hookscope::analysis
