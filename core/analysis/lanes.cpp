#include "analysis/lanes.h"

#include <algorithm>

namespace hookscope::analysis {

std::vector<HookLane> hook_lanes(const Model& model) {
  std::vector<HookLane> lanes;
  lanes.reserve(model.hooks().size());
  for (HookIndex h = 0; h < model.hooks().size(); ++h) {
    const HookInfo& info = model.hooks()[h];
    HookLane lane;
    lane.hook = h;
    lane.function = info.function;
    lane.owner = info.owner;
    lane.added_at = info.added_at;
    lane.ended_at = info.ended_at;
    if (info.owner != kNoIndex) {
      lane.owner_died_at = model.owners()[info.owner].destroyed_at;
      lane.owner_replaced_at = model.owners()[info.owner].replaced_at;
    }
    const auto fires = model.fires(h);
    // fires are ascending: the stale ones are a suffix, the lingering ones just before it
    const auto first_stale = std::lower_bound(fires.begin(), fires.end(), lane.owner_died_at);
    lane.fires_before = static_cast<uint32_t>(first_stale - fires.begin());
    lane.fires_after = static_cast<uint32_t>(fires.end() - first_stale);
    lane.fires_lingering = static_cast<uint32_t>(
        first_stale - std::lower_bound(fires.begin(), first_stale, lane.owner_replaced_at));
    if (info.ended_at != kNever && !info.implicit_end) {
      lane.fires_after_removal =
          static_cast<uint32_t>(fires.end() - std::upper_bound(fires.begin(), fires.end(), info.ended_at));
    }
    lanes.push_back(lane);
  }
  std::stable_sort(lanes.begin(), lanes.end(), [](const HookLane& a, const HookLane& b) {
    if (a.function != b.function) return a.function < b.function;
    return a.added_at < b.added_at;
  });
  return lanes;
}

}  // namespace hookscope::analysis
