// Alive, lingering or destroyed (Note [Lingering owners]): which Reducers a
// newer one replaced while they stayed alive, found once when a model is
// built, and the words every view uses for it.

#include "analysis/owner_status.h"

#include <fmt/format.h>

#include <algorithm>

#include "analysis/model_builder.h"

namespace hookscope::analysis {

namespace {

// The Functions a Reducer's owner ever had hooks on, a leaf's AccumulateGrads
// counted as its first one, sorted.
std::vector<FunctionIndex> hooked_functions(const Model& m, const std::vector<std::vector<HookIndex>>& by_owner,
                                            OwnerIndex o) {
  std::vector<FunctionIndex> out;
  for (HookIndex h : by_owner[o]) {
    FunctionIndex f = m.hooks()[h].function;
    if (f == kNoIndex) continue;
    // Bounded: a leaf's chain has no loop (Note [Malformed traces] leaf_link).
    for (size_t steps = 0; m.functions()[f].previous != kNoIndex && steps < m.functions().size(); ++steps) {
      f = m.functions()[f].previous;
    }
    out.push_back(f);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool share_one(const std::vector<FunctionIndex>& a, const std::vector<FunctionIndex>& b) {
  for (size_t i = 0, j = 0; i < a.size() && j < b.size();) {
    if (a[i] == b[j]) return true;
    a[i] < b[j] ? ++i : ++j;
  }
  return false;
}

}  // namespace

void ModelBuilder::find_lingering_owners() {
  const Model& m = m_;
  auto& owners = m_.owners_;
  std::vector<ReducerIndex> prepared;  // Reducers with an owner and a prepare
  for (ReducerIndex r = 0; r < m.reducers().size(); ++r) {
    const ReducerInfo& info = m.reducers()[r];
    if (info.owner < owners.size() && !info.prepares.empty()) prepared.push_back(r);
  }
  if (prepared.size() < 2) return;
  std::vector<std::vector<HookIndex>> by_owner(owners.size());
  for (HookIndex h = 0; h < m.hooks().size(); ++h) {
    const OwnerIndex o = m.hooks()[h].owner;
    if (o < owners.size() && m.reducer_of(o) != kNoIndex) by_owner[o].push_back(h);
  }
  std::vector<std::vector<FunctionIndex>> fns(m.reducers().size());
  for (ReducerIndex r : prepared) fns[r] = hooked_functions(m, by_owner, m.reducers()[r].owner);
  // Reducers per rank are few (one per rebuild): every pair is looked at.
  for (ReducerIndex r : prepared) {
    const ReducerInfo& old = m.reducers()[r];
    OwnerInfo& o = owners[old.owner];
    for (ReducerIndex n : prepared) {
      const ReducerInfo& next = m.reducers()[n];
      if (n == r || next.source != old.source || next.rank != old.rank ||
          next.constructed_at <= old.constructed_at || next.prepares.front() <= old.prepares.back() ||
          next.prepares.front() >= o.replaced_at || !share_one(fns[r], fns[n])) {
        continue;
      }
      o.replaced_at = next.prepares.front();
      o.replaced_by = next.owner;
    }
    if (o.destroyed_at <= o.replaced_at) {  // destroyed first: never lingering
      o.replaced_at = kNever;
      o.replaced_by = kNoIndex;
    }
  }
}

OwnerStatus owner_status(const Model& m, OwnerIndex owner, EventIndex at) {
  return owner < m.owners().size() ? owner_status(m.owners()[owner], at) : OwnerStatus::kAlive;
}

std::string_view to_string(OwnerStatus status) {
  switch (status) {
    case OwnerStatus::kAlive: return "alive";
    case OwnerStatus::kLingering: return "replaced, still alive";
    case OwnerStatus::kDestroyed: return "destroyed";
  }
  return "?";
}

std::string replaced_text(const Model& m, OwnerIndex owner, EventIndex at) {
  if (owner >= m.owners().size()) return {};
  const OwnerInfo& o = m.owners()[owner];
  if (o.replaced_at == kNever) return {};
  const std::string head =
      fmt::format("{} was replaced by {} at #{}", m.owner_name(owner), m.owner_name(o.replaced_by), o.replaced_at);
  if (o.destroyed_at != kNever && o.destroyed_at <= at) return fmt::format("{} and stayed alive until it was destroyed at #{}", head, o.destroyed_at);
  return head + " and is still alive";
}

NoopCause noop_cause(const Model& m, size_t index) {
  const trace::Event e = m.event(index);
  const trace::NoopReason reason = e.as<ev::AutogradHookNoop>().reason;
  if (reason == trace::NoopReason::kOwnerDestroyed) return NoopCause::kDestroyed;
  const OwnerIndex o = m.find_owner(m.source(index), e.owner);
  switch (owner_status(m, o, static_cast<EventIndex>(index))) {
    case OwnerStatus::kDestroyed: return NoopCause::kDestroyed;
    case OwnerStatus::kLingering: return NoopCause::kLingering;
    case OwnerStatus::kAlive: break;
  }
  return reason == trace::NoopReason::kNoSync ? NoopCause::kNoSync : NoopCause::kNotPrepared;
}

}  // namespace hookscope::analysis
