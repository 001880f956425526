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

// Whether event `index` is a hook firing after its owner was destroyed (or
// after the hook was removed).
bool is_stale_fire(const analysis::Model& model, size_t index);
Severity event_severity(const analysis::Model& model, size_t index);
const char* severity_name(Severity s);

}  // namespace hookscope::render
