#include "analysis/compare_sync.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace hookscope::analysis {

using trace::EventKind;

namespace {

void add_points(std::vector<StoryPoint>& out, const std::vector<EventIndex>& events, std::string_view name,
                std::string_view words) {
  for (size_t n = 0; n < events.size(); ++n) {
    out.push_back({events[n], fmt::format("{}:{}", name, n + 1), fmt::format("after {} {}", words, n + 1)});
  }
}

}  // namespace

std::vector<StoryPoint> story_points(const Model& m) {
  std::vector<StoryPoint> out;
  add_points(out, backward_pass_ends(m), "backward", "backward");
  const uint16_t lowest = lowest_rank(m, EventKind::kRecoveryStep);
  std::vector<EventIndex> rebuilds;
  for (EventIndex i : m.events_of_kind(EventKind::kRecoveryStep)) {
    const trace::Event e = m.event(i);
    if (e.rank == lowest && e.as<ev::RecoveryStep>().step == trace::RecoveryStep::kDdpRebuilt) {
      rebuilds.push_back(i);
    }
  }
  add_points(out, rebuilds, "rebuild", "rebuild");
  add_points(out, m.events_of_kind(EventKind::kFailure), "failure", "failure");
  add_points(out, m.events_of_kind(EventKind::kReducerConstructed), "constructed", "constructed");
  add_points(out, m.events_of_kind(EventKind::kReducerDestroyed), "destroyed", "destroyed");
  std::stable_sort(out.begin(), out.end(), [](const StoryPoint& x, const StoryPoint& y) { return x.index < y.index; });
  return out;
}

CompareSync::CompareSync(const Model& a, const Model& b)
    : a_(&a), b_(&b), points_a_(story_points(a)), points_b_(story_points(b)), kinds_a_(256), kinds_b_(256),
      scanned_a_(256, 0), scanned_b_(256, 0) {
  for (size_t i = 0; i < points_b_.size(); ++i) b_by_name_.emplace(points_b_[i].name, i);
}

SyncedPoint CompareSync::match(size_t at_a, SyncBy by) const {
  if (a_->num_events() == 0 || b_->num_events() == 0) {
    return {"", 0, 0, false, a_->num_events() == 0 ? "A has no events" : "B has no events"};
  }
  at_a = std::min(at_a, a_->num_events() - 1);
  return by == SyncBy::kStory ? match_story(at_a) : match_kind(at_a);
}

SyncedPoint CompareSync::match_story(size_t at_a) const {
  // The last of A's points at or before at_a: events of one index are in point order.
  const auto it = std::upper_bound(points_a_.begin(), points_a_.end(), at_a,
                                   [](size_t at, const StoryPoint& p) { return at < p.index; });
  if (it == points_a_.begin()) return {"before the first story point", at_a, 0, true, ""};
  const StoryPoint& p = *(it - 1);
  SyncedPoint out{p.label, p.index, 0, true, ""};
  if (auto found = b_by_name_.find(p.name); found != b_by_name_.end()) {
    out.b = points_b_[found->second].index;
    return out;
  }
  // B lacks it: its last point of the same kind, else its last event.
  const std::string kind = p.name.substr(0, p.name.find(':'));
  size_t have = 0;
  out.b = b_->num_events() - 1;
  for (const StoryPoint& q : points_b_) {
    if (q.name.compare(0, kind.size() + 1, kind + ":") == 0) ++have, out.b = q.index;
  }
  out.found = false;
  out.why = fmt::format("B has no {} {} (it has {}); B shows its last", kind, p.name.substr(kind.size() + 1), have);
  return out;
}

const std::vector<EventIndex>& CompareSync::of_kind(const Model& m, std::vector<std::vector<EventIndex>>& cache,
                                                    EventKind kind) const {
  const auto k = static_cast<size_t>(kind);
  const auto& indexed = m.events_of_kind(kind);
  if (!indexed.empty()) return indexed;
  std::vector<uint8_t>& scanned = &m == a_ ? scanned_a_ : scanned_b_;
  if (!scanned[k]) {  // bulk kinds are not indexed: one scan, kept
    scanned[k] = 1;
    for (size_t i = 0; i < m.num_events(); ++i) {
      if (m.event(i).kind == kind) cache[k].push_back(static_cast<EventIndex>(i));
    }
  }
  return cache[k];
}

SyncedPoint CompareSync::match_kind(size_t at_a) const {
  const EventKind kind = a_->event(at_a).kind;
  const auto& in_a = of_kind(*a_, kinds_a_, kind);
  const auto& in_b = of_kind(*b_, kinds_b_, kind);
  const size_t n = static_cast<size_t>(std::lower_bound(in_a.begin(), in_a.end(), at_a) - in_a.begin()) + 1;
  const std::string name(trace::to_string(kind));
  SyncedPoint out{fmt::format("{} {}", name, n), at_a, 0, true, ""};
  if (n <= in_b.size()) {
    out.b = in_b[n - 1];
    return out;
  }
  out.found = false;
  out.b = in_b.empty() ? b_->num_events() - 1 : in_b.back();
  out.why = fmt::format("B has {} {} events, not {}; B shows its last", in_b.size(), name, n);
  return out;
}

}  // namespace hookscope::analysis
