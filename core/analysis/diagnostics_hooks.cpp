// Hook lifecycle rules of Note [Findings]: leaked hooks, stale fires, fires after
// removal, collateral and failed removals.

#include "analysis/diagnostics_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace hookscope::analysis::detail {

using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

void Diagnoser::leaks_and_stale_fires() {
  // One finding per (owner, Function) of each rule, in that order. The hooks
  // are listed as (owner, Function, hook) and sorted, not gathered in a
  // std::map of groups: a node and two vectors per group were a fifth of
  // `diff` on 300k stale lanes (Note [Ordinals by sorting], analysis/diff_match.cpp).
  struct Entry {
    OwnerIndex owner;
    FunctionIndex function;
    HookIndex hook;
    bool on_tensor;
    bool operator<(const Entry& o) const {
      return std::tie(owner, function, hook) < std::tie(o.owner, o.function, o.hook);
    }
  };
  std::vector<Entry> leaked, stale_fired;
  for (HookIndex h = 0; h < m_.hooks().size(); ++h) {
    const HookInfo& hook = m_.hooks()[h];
    fires_after_removal(h);
    if (hook.owner == kNoIndex) continue;
    const EventIndex died = m_.owners()[hook.owner].destroyed_at;
    if (died == kNever) continue;
    const EventIndex start = std::max(died, hook.added_at);
    const bool own_cleanup = !hook.implicit_end && hook.cause == RemoveCause::kByKey &&
                             hook.removed_by == hook.owner;
    if (hook.ended_at > start && !own_cleanup && seg_begin_[h] != seg_begin_[h + 1]) {
      bool tensor = false;
      const FunctionIndex f = function_at(h, start, &tensor);
      leaked.push_back({hook.owner, f, h, tensor});
    }
    auto fires = m_.fires(h);
    auto first = std::upper_bound(fires.begin(), fires.end(), died);
    if (first == fires.end()) continue;
    stale_fired.push_back({hook.owner, function_at(h, *first), h, false});
  }
  // Runs of one (owner, Function), hooks ascending.
  auto groups = [](std::vector<Entry>& entries, auto&& each) {
    std::sort(entries.begin(), entries.end());
    std::vector<HookIndex> hooks;
    for (size_t begin = 0, end = 0; begin < entries.size(); begin = end) {
      hooks.clear();
      while (end < entries.size() && entries[end].owner == entries[begin].owner &&
             entries[end].function == entries[begin].function) {
        hooks.push_back(entries[end++].hook);
      }
      each(entries[begin].owner, entries[begin].function, hooks, entries[end - 1].on_tensor);
    }
  };
  struct Group {
    std::vector<HookIndex> hooks;
    bool on_tensor = false;
    size_t fires = 0;
    EventIndex first_fire = kNever;
    std::vector<EventIndex> fire_events;
  };
  groups(leaked, [&](OwnerIndex o, FunctionIndex f, const std::vector<HookIndex>& hooks, bool on_tensor) {
    const Group g{hooks, on_tensor};
    const OwnerInfo& owner = m_.owners()[o];
    const std::string who = m_.owner_name(o);
    Finding out = make(FindingKind::kLeakedHook, Severity::kError, f, o);
    out.count = g.hooks.size();
    EventIndex last_end = 0;
    std::string keys;
    for (HookIndex h : g.hooks) {
      const HookInfo& hook = m_.hooks()[h];
      if (out.events.size() < kMaxEvidence) add_evidence(out, hook.added_at);
      last_end = std::max(last_end, hook.ended_at);
      if (g.hooks.size() <= 4) keys += fmt::format("{}{}", keys.empty() ? "" : ", ", hook.key);
    }
    add_evidence(out, owner.destroyed_at);
    add_evidence(out, last_end);
    const HookInfo& first = m_.hooks()[g.hooks.front()];
    out.at = std::max(owner.destroyed_at, first.added_at);
    std::string until = last_end == kNever ? "until the end of the trace"
                                           : fmt::format("until event #{}", last_end);
    if (g.hooks.size() == 1) {
      out.key = first.key;
      out.message = fmt::format("{} was destroyed at event #{} but its {} stayed attached to {} {}",
                                who, owner.destroyed_at, hook_words(g.hooks.front()),
                                where(f, g.on_tensor), until);
    } else {
      out.message = fmt::format(
          "{} was destroyed at event #{} but {} of its {} hooks ({}) stayed attached to {} {}", who,
          owner.destroyed_at, g.hooks.size(), trace::to_string(first.kind),
          keys.empty() ? "keys " + std::to_string(first.key) + ", ..." : "keys " + keys,
          where(f, g.on_tensor), until);
    }
    finish_evidence(out);
    emit(std::move(out));
  });
  groups(stale_fired, [&](OwnerIndex o, FunctionIndex f, const std::vector<HookIndex>& hooks, bool) {
    Group g{hooks};
    for (HookIndex h : hooks) {
      const HookInfo& hook = m_.hooks()[h];
      auto fires = m_.fires(h);
      auto first = std::upper_bound(fires.begin(), fires.end(), m_.owners()[hook.owner].destroyed_at);
      g.fires += static_cast<size_t>(fires.end() - first);
      g.first_fire = std::min(g.first_fire, *first);
      for (auto it = first; it != fires.end() && g.fire_events.size() < kMaxEvidence / 2; ++it) {
        g.fire_events.push_back(*it);
      }
    }
    const OwnerInfo& owner = m_.owners()[o];
    Finding out = make(FindingKind::kStaleFire, Severity::kError, f, o);
    out.count = g.fires;
    out.at = g.first_fire;
    add_evidence(out, owner.destroyed_at);
    add_evidence(out, m_.hooks()[g.hooks.front()].added_at);
    for (EventIndex i : g.fire_events) add_evidence(out, i);
    const std::string what = g.hooks.size() == 1
                                 ? "its " + hook_words(g.hooks.front())
                                 : fmt::format("{} of its hooks", g.hooks.size());
    if (g.hooks.size() == 1) out.key = m_.hooks()[g.hooks.front()].key;
    // A hook on no Function (a module's, a Reducer's comm hook) is named by its owner alone.
    const std::string on = f == kNoIndex ? std::string() : " on " + m_.function_name(f);
    out.message = fmt::format(
        "{} was destroyed at event #{} but {}{} fired {} time(s) after that, first at "
        "event #{}",
        m_.owner_name(o), owner.destroyed_at, what, on, g.fires, g.first_fire);
    finish_evidence(out);
    emit(std::move(out));
  });
}

// A fire after the hook's own removal: PyTorch runs the hooks it snapshotted
// before the removal (Note [Module hooks in traces]), so this is real, and
// it surprises people (PyTorch issues #25723, #58354): a warning.
void Diagnoser::fires_after_removal(HookIndex h) {
  const HookInfo& hook = m_.hooks()[h];
  if (hook.ended_at == kNever || hook.implicit_end) return;
  auto fires = m_.fires(h);
  auto first = std::upper_bound(fires.begin(), fires.end(), hook.ended_at);
  if (first == fires.end()) return;
  const FunctionIndex f = function_at(h, *first);
  Finding out = make(FindingKind::kStaleFire, Severity::kWarning, f, hook.owner);
  out.key = hook.key;
  out.rank = hook.rank;
  out.source = hook.source;
  out.count = static_cast<size_t>(fires.end() - first);
  out.at = *first;
  add_evidence(out, hook.ended_at);
  for (auto it = first; it != fires.end() && out.events.size() < kMaxEvidence; ++it) {
    add_evidence(out, *it);
  }
  const std::string owner =
      hook.owner == kNoIndex ? std::string() : " of " + m_.owner_name(hook.owner);
  const std::string on = f == kNoIndex ? std::string() : " on " + m_.function_name(f);
  out.message = fmt::format(
      "{}{}{} fired at event #{} after its removal at #{} ({} time(s)): hooks snapshotted "
      "before a removal still run in that pass",
      hook_words(h), owner, on, *first, hook.ended_at, out.count);
  finish_evidence(out);
  emit(std::move(out));
}

void Diagnoser::collateral_removals() {
  for (HookIndex h = 0; h < m_.hooks().size(); ++h) {
    const HookInfo& hook = m_.hooks()[h];
    if (hook.ended_at == kNever || hook.implicit_end || hook.owner == kNoIndex) continue;
    if (hook.cause != RemoveCause::kByKey && hook.cause != RemoveCause::kByType) continue;
    if (hook.removed_by == hook.owner) continue;
    const bool by_type = hook.cause == RemoveCause::kByType;
    bool tensor = false;
    const FunctionIndex f = function_at(h, hook.ended_at - (hook.ended_at > 0), &tensor);
    Finding out = make(FindingKind::kCollateralRemoval,
                       by_type ? Severity::kError : Severity::kWarning, f, hook.owner);
    out.key = hook.key;
    out.at = hook.ended_at;
    add_evidence(out, hook.added_at);
    add_evidence(out, hook.ended_at);
    const bool owner_live = hook.ended_at < m_.owners()[hook.owner].destroyed_at;
    out.message = fmt::format(
        "{} of {} on {} was removed at event #{} by {} ({}), not by its owner; {} was {}",
        hook_words(h), m_.owner_name(hook.owner), where(f, tensor), hook.ended_at,
        hook.removed_by == kNoIndex ? "an unknown remover" : m_.owner_name(hook.removed_by),
        by_type ? "the by-type sweep removes every hook of that kind of owner" : "by key",
        m_.owner_name(hook.owner), owner_live ? "still alive" : "already destroyed");
    finish_evidence(out);
    emit(std::move(out));
  }
}

// multi_owner and hook_growth (Note [Hook growth]): one sweep over the hooks
// that ever sat on `f`, in O(n log n) (counts of the hooks on `f` kept as the
// sweep goes, not recounted per hook). Only the first hook an owner adds of a
// kind opens a growth step or a multi-owner check, as a Reducer adds one hook
// per Function.

void Diagnoser::failed_removals() {
  for (EventIndex i : m_.events_of_kind(EventKind::kHookRemoveFailed)) {
    const trace::Event e = m_.event(i);
    const uint32_t source = m_.source(i);
    const FunctionIndex f = m_.find_function(source, e.node);
    const OwnerIndex actor = m_.find_owner(source, e.as<ev::HookRemoveFailed>().remover);
    Finding out = make(FindingKind::kFailedRemoval, Severity::kWarning, f, actor);
    out.rank = e.rank;
    out.key = e.key;
    out.at = i;
    add_evidence(out, i);
    std::string why = "no hook in the trace ever had this key";
    const HookIndex h = m_.find_hook(source, e.key);
    if (h != kNoIndex) {
      const HookInfo& hook = m_.hooks()[h];
      if (hook.ended_at < i) {
        add_evidence(out, hook.ended_at);
        const std::string by =
            hook.removed_by == kNoIndex ? "" : ", by " + m_.owner_name(hook.removed_by);
        why = fmt::format("it was already removed at event #{} ({}{})", hook.ended_at,
                          trace::to_string(hook.cause), by);
      } else if (hook.added_at <= i) {
        add_evidence(out, hook.added_at);
        why = fmt::format("the key belongs to a {} hook on {}", trace::to_string(hook.kind),
                          m_.function_name(function_at(h, i)));
      }
    }
    const HookKind kind = trace::shown_hook_kind(e);
    out.message = fmt::format("{} asked to remove {} hook key {} from {}, but it was not there: {}",
                              actor == kNoIndex ? "someone" : m_.owner_name(actor),
                              trace::to_string(kind), trace::format_hook_key(e.key),
                              f == kNoIndex ? fmt::format("Function #{}", e.node)
                                            : m_.function_name(f),
                              why);
    finish_evidence(out);
    emit(std::move(out));
  }
}

}  // namespace hookscope::analysis::detail
