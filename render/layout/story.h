#pragma once
// The moments of the PR #21591 story that every view must show at a glance
// (Note [Run story]): ranks that failed, were killed (lost) or rebuilt, Reducers
// constructed and destroyed, stale fires, removals. No ImGui: the graph, the
// timeline and the Events panel read the same answers, and tests check them.

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model.h"

namespace hookscope::render {

// Note [Run story]
// ~~~~~~~~~~~~~~~~
// * A rank *failed* at a kFailure event (its actor is the failed rank).
// * A rank was *lost* when a trace ended without finishing (the process was
//   killed: TraceData::truncation) while others went on: the trace writes
//   nothing after the kill, so the point is synthesized — the first failure
//   detection by a survivor after the lost trace's last event, else that last
//   event. Its track shows "no data after here" from the last event.
// * A failed or lost rank is *rebuilt* at its next kReducerConstructed (a
//   replacement process or the same one building DDP again).
// * A *stale fire* is a hook firing after its owner was destroyed or after
//   the hook was removed.
// * Severity of an event (Events rows, timeline markers) ranks these.

enum class IncidentKind : uint8_t { kFailed, kLost, kRebuilt };

struct RankIncident {
  analysis::EventIndex at = 0;  // where it shows
  uint16_t rank = 0;
  IncidentKind kind = IncidentKind::kFailed;
  analysis::EventIndex last_data = analysis::kNever;  // kLost: the lost trace's last event
  uint32_t source = UINT32_MAX;                       // kLost: the lost trace
  std::string text;  // "rank 1 failed (throw)", "rank 1 lost (killed)", "rank 1 rebuilt"
};

enum class Severity : uint8_t {
  kNone = 0,
  kLifecycle,      // Reducer constructed, DDP rebuilt, recovery steps
  kFailedRemoval,  // hook_remove_failed
  kDestruction,    // Reducer / owner destroyed, process group aborted
  kStaleFire,      // a hook of a destroyed owner (or removed) firing
  kFailure,        // a rank failed or was lost
};

class RunStory {
 public:
  RunStory() = default;
  explicit RunStory(const analysis::Model& model);

  // Failures, losses and rebuilds, by event.
  const std::vector<RankIncident>& incidents() const { return incidents_; }
  // The rank's last incident at or before `index` (nullptr: none).
  const RankIncident* rank_status(uint16_t rank, size_t index) const;
  // The failure (failed or lost) a rebuilt rank recovered from.
  const RankIncident* failure_before(const RankIncident& rebuilt) const;
  std::vector<uint16_t> ranks() const { return ranks_; }

 private:
  std::vector<RankIncident> incidents_;
  std::vector<uint16_t> ranks_;
};

// Collectives named as a person reads them: "bucket 1, #3" (the 3rd
// collective of bucket 1 of its Reducer), "broadcast #2" outside buckets,
// instead of raw ids. Built once per model.
class CollectiveNames {
 public:
  CollectiveNames() = default;
  explicit CollectiveNames(const analysis::Model& model);
  const analysis::Model* model() const { return model_; }
  // For a collective_begin / collective_end / bucket_ready event; "" otherwise.
  std::string name(size_t index) const;
  // describe(index) with the raw collective id replaced by the name.
  std::string describe(size_t index) const;

 private:
  const analysis::Model* model_ = nullptr;
  std::vector<uint32_t> sequence_;  // per collective: 1-based, per (reducer, bucket) or per op
};

// Note [Module generations]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// After a failure DDP is built again in a new process group generation
// (kProcessGroupCreated carries it in its actor field), and a replaced rank
// runs a fresh incarnation with a new module: its parameters then exist in
// copies with the same names, the old ones often still holding the destroyed
// Reducer's hooks. A Function's or owner's generation is the one of its
// rank's latest process group when it was created (0 before any); a leaf's
// is its first AccumulateGrad's (FunctionInfo::previous), so a parameter
// that lives on keeps its generation. Leaves are labelled "gen N" only where
// copies exist (two leaves of one rank and parameter name in different
// generations), all of a rank's from the event its first copy of another
// generation is created on (before the rebuild nothing needs telling apart); owners likewise:
// only on a rank that holds copies, from the same event (a trace whose
// process groups were made again but whose parameters were never copied
// says no "gen" at all).
class Generations {
 public:
  Generations() = default;
  explicit Generations(const analysis::Model& model);
  bool any() const { return max_ > 0; }
  uint32_t of_function(analysis::FunctionIndex f) const;
  uint32_t of_owner(analysis::OwnerIndex o) const;
  // Whether the Function is a parameter's leaf that has copies of another generation.
  bool copied(analysis::FunctionIndex f) const { return f < copied_.size() && copied_[f]; }
  // From which event the copied leaf shows its generation (kNever: not copied).
  analysis::EventIndex label_from(analysis::FunctionIndex f) const {
    return f < label_from_.size() ? label_from_[f] : analysis::kNever;
  }
  // "gen N" for a copied leaf at event `at` and later, else "".
  std::string function_label(analysis::FunctionIndex f, analysis::EventIndex at = analysis::kNever) const;
  // "gen N" for an owner on a rank holding copies, at `at` and later, else "".
  std::string owner_label(analysis::OwnerIndex o, analysis::EventIndex at = analysis::kNever) const;
  // From which event the owner shows its generation (kNever: its rank has no copies).
  analysis::EventIndex owner_label_from(analysis::OwnerIndex o) const {
    return o < owner_label_from_.size() ? owner_label_from_[o] : analysis::kNever;
  }

 private:
  std::vector<uint32_t> function_gen_, owner_gen_;
  std::vector<uint8_t> copied_;
  std::vector<analysis::EventIndex> label_from_, owner_label_from_;
  uint32_t max_ = 0;
};

// Whether event `index` is a hook firing after its owner was destroyed (or
// after the hook was removed).
bool is_stale_fire(const analysis::Model& model, size_t index);
Severity event_severity(const analysis::Model& model, size_t index);
const char* severity_name(Severity s);

}  // namespace hookscope::render
