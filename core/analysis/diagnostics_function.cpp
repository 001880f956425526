// Per-Function rules of Note [Findings] (multi_owner, hook_growth on a Function).

#include "analysis/diagnostics_growth.h"
#include "analysis/diagnostics_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <map>
#include <queue>
#include <set>

namespace hookscope::analysis::detail {

using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

void Diagnoser::per_function(FunctionIndex f) {
  auto segs = m_.segments_of(f);
  if (segs.size() < 2) return;
  const auto& owners = m_.owners();
  const auto& segments = m_.segments();
  const auto& hooks = m_.hooks();
  constexpr size_t kMaxNamed = 64;     // live Reducers named in one multi_owner finding
  constexpr size_t kMaxReports = 64;   // multi_owner findings per Function
  // Segments on `f` now (on_tensor ones never count), ended by a heap on `to`.
  using Ending = std::pair<EventIndex, uint32_t>;
  std::priority_queue<Ending, std::vector<Ending>, std::greater<Ending>> ending;
  std::array<uint32_t, trace::kNumHookKinds> per_kind{};
  // Reducer owners with hooks here: how many, and where the first began.
  std::map<OwnerIndex, std::pair<uint32_t, EventIndex>> reducer_owners;
  // Per (hook kind, owner kind): the destruction times of the owners of the hooks here.
  std::map<std::pair<HookKind, OwnerKind>, std::multiset<std::pair<EventIndex, OwnerIndex>>> dying;
  // Per hook kind: the last prepared backward of the Reducers with such hooks here.
  std::map<HookKind, std::multiset<std::pair<EventIndex, OwnerIndex>>> prepared;
  std::set<std::pair<HookKind, OwnerIndex>> first_adds;
  std::set<std::vector<OwnerIndex>> reported;
  std::map<std::pair<HookKind, OwnerKind>, HookGrowth> growth;  // owners of one kind
  auto change = [&](uint32_t s, int d) {
    const HookSegment& seg = segments[s];
    if (seg.on_tensor) return;
    const HookInfo& hook = hooks[seg.hook];
    per_kind[static_cast<size_t>(hook.kind)] += d;
    if (hook.owner == kNoIndex) return;
    const OwnerInfo& oi = owners[hook.owner];
    if (oi.kind == OwnerKind::kReducer) {
      auto [r, fresh] = reducer_owners.try_emplace(hook.owner, 0, seg.from);
      r->second.first += d;
      if (r->second.first == 0) reducer_owners.erase(r);
      if (last_prepare_[hook.owner] != kNever) {
        auto& p = prepared[hook.kind];
        const std::pair<EventIndex, OwnerIndex> item{last_prepare_[hook.owner], hook.owner};
        if (d > 0) {
          p.insert(item);
        } else {
          p.erase(p.find(item));
        }
      }
    }
    auto& set = dying[{hook.kind, oi.kind}];
    const std::pair<EventIndex, OwnerIndex> item{oi.destroyed_at, hook.owner};
    if (d > 0) {
      set.insert(item);
    } else {
      set.erase(set.find(item));
    }
  };
  for (uint32_t s : segs) {
    const HookSegment& seg = segments[s];
    const EventIndex a = seg.from;
    while (!ending.empty() && ending.top().first <= a) {
      change(ending.top().second, -1);
      ending.pop();
    }
    const HookInfo& hook = hooks[seg.hook];
    const OwnerIndex o = hook.owner;
    if (hook.added_at == a && hook.announced && !seg.on_tensor && o != kNoIndex &&
        first_adds.emplace(hook.kind, o).second) {
      const uint32_t same = per_kind[static_cast<size_t>(hook.kind)] + 1;
      // Another owner of the same kind, destroyed by now, still has such a hook here.
      bool dead_same = false;
      auto it = dying.find({hook.kind, owners[o].kind});
      if (it != dying.end() && !it->second.empty()) {
        auto d = it->second.begin();  // the earliest destroyed; o's own all share one time
        if (d->second == o) d = it->second.upper_bound({d->first, o});
        dead_same = d != it->second.end() && d->first <= a;
      }
      // Or (a Reducer adding) another Reducer with such a hook here was replaced:
      // it prepared no backward since.
      bool replaced_same = false;
      auto p = prepared.find(hook.kind);
      if (owners[o].kind == OwnerKind::kReducer && p != prepared.end() && !p->second.empty()) {
        auto d = p->second.begin();
        if (d->second == o) d = p->second.upper_bound({d->first, o});
        replaced_same = d != p->second.end() && replaced_by(last_prepare_, d->second, a);
      }
      if (owners[o].kind == OwnerKind::kReducer && reported.size() < kMaxReports) {
        std::vector<OwnerIndex> set;
        size_t live = 0;
        std::vector<EventIndex> since;
        for (const auto& [x, n] : reducer_owners) {
          const OwnerInfo& oo = owners[x];
          if (x == o || !(oo.created_at <= a && a < oo.destroyed_at)) continue;
          ++live;
          if (set.size() < kMaxNamed) set.push_back(x);
          if (since.size() < kMaxEvidence) since.push_back(n.second);
        }
        if (live > 0) {
          set.push_back(o);
          std::sort(set.begin(), set.end());
          if (reported.insert(set).second) {
            Finding out = make(FindingKind::kMultiOwner, Severity::kWarning, f, o);
            out.at = a;
            out.count = live + 1;
            std::string names;
            for (OwnerIndex x : set) names += (names.empty() ? "" : ", ") + m_.owner_name(x);
            if (live + 1 > set.size()) names += fmt::format(" and {} more", live + 1 - set.size());
            add_evidence(out, a);
            for (EventIndex x : since) add_evidence(out, x);
            out.message = fmt::format(
                "{} holds hooks of {} live Reducers at once ({}) from event #{}: every backward "
                "fires all of them, and only the Reducer prepared for that backward acts",
                m_.function_name(f), live + 1, names, a);
            finish_evidence(out);
            emit(std::move(out));
          }
        }
      }
      HookGrowth& g = growth[{hook.kind, owners[o].kind}];
      g.adders.push_back(o);
      g.counts.push_back(same);
      g.at.push_back(a);
      if ((dead_same || replaced_same) && g.first == kNever) g.first = a;
    }
    if (seg.to > a) {
      change(s, +1);
      ending.emplace(seg.to, s);
    }
  }
  for (auto& [kinds, g] : growth) {
    if (g.first == kNever) continue;
    Finding out = make(FindingKind::kHookGrowth, Severity::kError, f, g.adders.back());
    describe_growth(m_, kinds.first, f, g, last_prepare_, out);
    emit(std::move(out));
  }
}

}  // namespace hookscope::analysis::detail
