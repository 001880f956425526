#include "panel_changes.h"

#include <algorithm>

namespace hookscope::app {

EventChanges changes_since_previous(const analysis::Model& m, size_t index, size_t max_scan, size_t max_list) {
  EventChanges out;
  out.at = index;
  if (index >= m.num_events()) return out;
  const trace::Event e = m.event(index);
  const size_t lo = index > max_scan ? index - max_scan : 0;
  out.scanned_from = lo;
  for (size_t j = index; j-- > lo;) {
    const trace::Event p = m.event(j);
    if (p.rank == e.rank && p.kind == e.kind) {
      out.since = static_cast<analysis::EventIndex>(j);
      break;
    }
  }
  const size_t from = out.since == analysis::kNever ? lo : out.since + 1;
  auto take = [&](std::vector<analysis::EventIndex>& list, size_t& count, size_t j) {
    ++count;
    if (list.size() < max_list) list.push_back(static_cast<analysis::EventIndex>(j));
  };
  for (size_t j = from; j <= index; ++j) {
    const trace::Event x = m.event(j);
    if (x.rank != e.rank) continue;
    switch (x.kind) {
      case trace::EventKind::kHookAdded: take(out.added, out.num_added, j); break;
      case trace::EventKind::kHookRemoved: take(out.removed, out.num_removed, j); break;
      case trace::EventKind::kHookFired: take(out.fired, out.num_fired, j); break;
      default: break;
    }
  }
  return out;
}

}  // namespace hookscope::app
