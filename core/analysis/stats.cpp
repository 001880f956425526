#include "analysis/stats.h"

#include <algorithm>

namespace hookscope::analysis {

using trace::RemoveCause;

std::vector<HookStats> hook_stats(const Model& m) {
  std::vector<HookStats> out(m.hooks().size());
  for (HookIndex h = 0; h < m.hooks().size(); ++h) {
    const HookInfo& hook = m.hooks()[h];
    auto fires = m.fires(h);
    out[h].hook = h;
    out[h].fires = static_cast<uint32_t>(fires.size());
    if (hook.owner == kNoIndex) continue;
    const EventIndex died = m.owners()[hook.owner].destroyed_at;
    out[h].stale_fires =
        static_cast<uint32_t>(fires.end() - std::upper_bound(fires.begin(), fires.end(), died));
  }
  return out;
}

std::vector<OwnerStats> owner_stats(const Model& m) {
  std::vector<OwnerStats> out(m.owners().size());
  for (OwnerIndex o = 0; o < out.size(); ++o) out[o].owner = o;
  const std::vector<HookStats> per_hook = hook_stats(m);
  for (HookIndex h = 0; h < m.hooks().size(); ++h) {
    const HookInfo& hook = m.hooks()[h];
    if (hook.ended_at != kNever && !hook.implicit_end && hook.removed_by != kNoIndex &&
        (hook.cause == RemoveCause::kByKey || hook.cause == RemoveCause::kByType)) {
      ++out[hook.removed_by].removals_it_made;
    }
    if (hook.owner == kNoIndex) continue;
    OwnerStats& s = out[hook.owner];
    ++s.hooks_added;
    s.fires += per_hook[h].fires;
    s.stale_fires += per_hook[h].stale_fires;
    if (hook.ended_at == kNever) {
      ++s.attached_at_end;
    } else if (hook.implicit_end || hook.cause == RemoveCause::kNodeReleased ||
               hook.cause == RemoveCause::kTensorReleased) {
      ++s.dropped;
    } else if (hook.removed_by == hook.owner) {
      ++s.removed_by_self;
    } else {
      ++s.removed_by_others;
    }
  }
  for (EventIndex i : m.events_of_kind(trace::EventKind::kHookRemoveFailed)) {
    const OwnerIndex o = m.find_owner(m.source(i), m.event(i).as<ev::HookRemoveFailed>().remover);
    if (o != kNoIndex) ++out[o].failed_removals;
  }
  return out;
}

std::vector<SeriesPoint> hook_count_series(const Model& m, FunctionIndex function, size_t samples,
                                           bool follow_leaf) {
  std::vector<SeriesPoint> out;
  if (m.num_events() == 0 || samples == 0) return out;
  // The Functions whose segments count.
  std::vector<FunctionIndex> functions;
  if (function != kNoIndex) {
    FunctionIndex f = function;
    if (follow_leaf) {
      while (m.functions()[f].previous != kNoIndex) f = m.functions()[f].previous;
      for (; f != kNoIndex; f = m.functions()[f].next) functions.push_back(f);
    } else {
      functions.push_back(f);
    }
  }
  std::vector<EventIndex> from, to;
  auto take = [&](const HookSegment& s) {
    if (s.to <= s.from) return;
    from.push_back(s.from);
    to.push_back(s.to);
  };
  if (function == kNoIndex) {
    for (const HookSegment& s : m.segments()) take(s);
  } else {
    for (FunctionIndex f : functions) {
      for (uint32_t s : m.segments_of(f)) {
        const HookSegment& seg = m.segments()[s];
        if (!seg.on_tensor || follow_leaf) take(seg);
      }
    }
  }
  std::sort(from.begin(), from.end());
  std::sort(to.begin(), to.end());
  const size_t n = m.num_events();
  for (size_t k = 0; k < samples; ++k) {
    const size_t i = samples == 1 ? n - 1 : k * (n - 1) / (samples - 1);
    const auto started = std::upper_bound(from.begin(), from.end(), i) - from.begin();
    const auto ended = std::upper_bound(to.begin(), to.end(), i) - to.begin();
    out.push_back(SeriesPoint{i, static_cast<uint32_t>(started - ended)});
  }
  return out;
}

}  // namespace hookscope::analysis
