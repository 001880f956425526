#pragma once
// Two traces stepped together (the GUI's Compare view): where trace B is
// when trace A is at an event. See Note [Synchronised comparison].

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/compare.h"
#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Synchronised comparison]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Event indices of two runs differ (Note [Matching points]); the Compare
// view keeps B at the point that matches A's current event:
//   kStory        the last story point A has passed ("after rebuild 1",
//                 "after backward 5", failure, Reducer constructed or
//                 destroyed, named as resolve_point() reads them), and B
//                 right after its own point of that name. Before A's first
//                 point B is at its event 0.
//   kKindOrdinal  A's current event is the n-th of its kind: B at its own
//                 n-th event of that kind (finer: every step of A moves B).
// A point B lacks leaves B at its last point of that kind (or its last
// event) and says so.
enum class SyncBy : uint8_t { kStory, kKindOrdinal };

struct StoryPoint {
  EventIndex index = 0;
  std::string name;   // "rebuild:1", as resolve_point() reads it
  std::string label;  // "after rebuild 1"
};

// Every story point of `m` in event order; resolve_point(m, p.name).index == p.index.
std::vector<StoryPoint> story_points(const Model& m);

struct SyncedPoint {
  std::string label;   // "after rebuild 1", "hook_fire 12", "before the first story point"
  size_t a = 0;        // A's event the match is taken at (<= A's current)
  size_t b = 0;        // where B goes
  bool found = true;   // false: B lacks the point (`why` says so)
  std::string why;
};

class CompareSync {
 public:
  // Both models must outlive this object.
  CompareSync(const Model& a, const Model& b);
  SyncedPoint match(size_t at_a, SyncBy by) const;
  const std::vector<StoryPoint>& points_a() const { return points_a_; }
  const std::vector<StoryPoint>& points_b() const { return points_b_; }

 private:
  SyncedPoint match_story(size_t at_a) const;
  SyncedPoint match_kind(size_t at_a) const;
  const std::vector<EventIndex>& of_kind(const Model& m, std::vector<std::vector<EventIndex>>& cache,
                                         trace::EventKind kind) const;

  const Model* a_;
  const Model* b_;
  std::vector<StoryPoint> points_a_, points_b_;
  std::unordered_map<std::string, size_t> b_by_name_;  // into points_b_
  // Per kind, its events (bulk kinds are not indexed by the model): built on first use.
  mutable std::vector<std::vector<EventIndex>> kinds_a_, kinds_b_;
  mutable std::vector<uint8_t> scanned_a_, scanned_b_;
};

}  // namespace hookscope::analysis
