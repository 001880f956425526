// The load pass's tables, sized before the walk (Note [Model tables sized up front]).

#include <array>

#include "analysis/model_builder.h"

namespace hookscope::analysis {

using trace::Event;
using trace::EventKind;

// Note [Model tables sized up front]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// One quick pass counts the events of each kind, and the tables they grow
// are reserved at that size: growing them by doubling would copy each one
// several times (fresh pages faulted in, old ones unmapped) and leave up to
// half of each unused, which memory_bytes() counts. The counts are exact for
// the tables one event kind fills (edges, fires, events_of_kind); tables that
// references can also grow (Functions, hooks, owners never announced) start at
// the announced count and are trimmed in finish() if they grew past it.
void ModelBuilder::reserve_tables() {
  std::array<uint64_t, 256> count{};
  for (const auto& t : m_.traces_) {
    if (!t.packed.empty()) {  // packed already (Note [Packing beside the walk])
      t.packed.count_kinds(count.data());
    } else {
      for (const Event& e : t.events) ++count[static_cast<uint8_t>(e.kind)];
    }
  }
  auto n = [&](EventKind k) { return count[static_cast<uint8_t>(k)]; };
  const uint64_t created = n(EventKind::kNodeCreated);
  m_.functions_.reserve(created);
  open_.reserve(created);
  latest_hint_.reserve(created);
  m_.edges_.reserve(n(EventKind::kNodeEdge));
  const uint64_t added = n(EventKind::kHookAdded);
  m_.hooks_.reserve(added);
  open_of_hook_.reserve(added);
  m_.segments_.reserve(added);
  open_pos_.reserve(added);
  segments_ended_.reserve(added);
  functions_ended_.reserve(n(EventKind::kNodeReleased));
  m_.fire_hook_.reserve(n(EventKind::kHookFired));
  m_.fire_bits_.assign(m_.num_events_ / 64 + 1, 0);
  m_.owners_.reserve(n(EventKind::kOwnerCreated));
  m_.collectives_.reserve(n(EventKind::kCollectiveBegin));
  for (size_t k = 0; k < m_.kind_events_.size(); ++k) {
    const auto kind = static_cast<EventKind>(k);
    if (k >= static_cast<size_t>(EventKind::kHookRemoveFailed) && kind != EventKind::kApplyBegin &&
        kind != EventKind::kApplyEnd) {
      m_.kind_events_[k].reserve(count[k]);
    }
  }
  // Note [Tables populated at once]
  populate(m_.functions_);
  populate(open_);
  populate(latest_hint_);
  populate(m_.edges_);
  populate(m_.hooks_);
  populate(open_of_hook_);
  populate(m_.segments_);
  populate(open_pos_);
  populate(segments_ended_);
  populate(functions_ended_);
  populate(m_.fire_hook_);
  populate(m_.collectives_);
  for (auto& k : m_.kind_events_) populate(k);
  // Per-source id maps: one entry per Function, hook and owner id.
  for (SourceMaps& s : src_) {
    s.functions.reserve(created / src_.size() + 1);
    s.hooks.reserve(added / src_.size() + 1);
    s.collectives_of_rank.reserve(n(EventKind::kCollectiveBegin) / src_.size() + 1);
  }
}

}  // namespace hookscope::analysis
