#include "analysis/explain.h"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace hookscope::analysis {

using trace::EventKind;

std::string_view to_string(FireVerdict v) {
  switch (v) {
    case FireVerdict::kNormal: return "normal";
    case FireVerdict::kStale: return "stale";
    case FireVerdict::kAfterRemoval: return "after_removal";
  }
  return "?";
}

namespace {

// The first event of `kind` at or after `from` on the same source and thread
// as `from`, within `window` events; kNever if none.
EventIndex next_of_kind(const Model& m, size_t from, EventKind kind, size_t window) {
  const auto& v = m.events_of_kind(kind);
  const trace::Event e = m.event(from);
  for (auto it = std::lower_bound(v.begin(), v.end(), from); it != v.end() && *it <= from + window; ++it) {
    const trace::Event x = m.event(*it);
    if (m.source(*it) == m.source(from) && x.thread == e.thread) return *it;
  }
  return kNever;
}

// The last backward() or autograd::grad pass begun on the fire's rank before it.
EventIndex backward_of(const Model& m, size_t fire) {
  const auto& v = m.events_of_kind(EventKind::kBackwardBegin);
  const trace::Event e = m.event(fire);
  for (auto it = std::upper_bound(v.begin(), v.end(), fire); it != v.begin();) {
    --it;
    if (m.source(*it) == m.source(fire) && m.event(*it).rank == e.rank) return *it;
  }
  return kNever;
}

std::string_view policy_words(trace::DestroyPolicy p) {
  switch (p) {
    case trace::DestroyPolicy::kByKey: return "by-key";
    case trace::DestroyPolicy::kNone: return "none: it removes no hooks";
    case trace::DestroyPolicy::kByType: return "by-type";
  }
  return "?";
}

void reducer_outcome(const Model& m, size_t fire, const HookInfo& hook, Explanation& out) {
  const ReducerIndex r = m.reducer_of(hook.owner);
  if (r == kNoIndex) return;
  const std::string who = m.owner_name(hook.owner);
  const EventIndex mark = next_of_kind(m, fire, EventKind::kMarkReady, 8);
  const EventIndex twice = next_of_kind(m, fire, EventKind::kMarkedTwice, 8);
  const EventIndex noop = next_of_kind(m, fire, EventKind::kAutogradHookNoop, 8);
  const uint32_t s = m.source(fire);
  auto by_this = [&](EventIndex at) {
    return at != kNever && m.find_owner(s, m.event(at).owner) == hook.owner;
  };
  if (by_this(twice)) {
    out.steps.push_back({twice, fmt::format("{} found the parameter already marked ready in this "
                                            "backward: \"marked ready twice\"", who)});
  } else if (by_this(mark)) {
    out.steps.push_back({mark, fmt::format("{} marked parameter {} ready (bucket {})", who,
                                           m.event(mark).arg, m.event(mark).actor)});
  } else if (by_this(noop)) {
    const bool dead = m.event(noop).sub != 0;
    out.steps.push_back({noop, dead ? fmt::format("the hook ran but {} no longer exists: it did nothing", who)
                                    : fmt::format("{} did not prepare for this backward: its hook did "
                                                  "nothing (another Reducer on the module did)", who)});
  }
}

// Owners as a sentence names them: a module by its path ("module '2'").
std::string owner_words(const Model& m, OwnerIndex o) {
  if (o == kNoIndex) return "an unknown owner";
  if (m.owners()[o].kind == trace::OwnerKind::kModule) return fmt::format("module '{}'", m.owner_name(o));
  return m.owner_name(o);
}

}  // namespace

Explanation explain_fire(const Model& m, size_t index) {
  if (index >= m.num_events()) {
    throw std::invalid_argument(fmt::format("event {} is outside the trace (0..{})", index,
                                            m.num_events() ? m.num_events() - 1 : 0));
  }
  const trace::Event e = m.event(index);
  if (e.kind != EventKind::kHookFired) {
    throw std::invalid_argument(fmt::format("event {} is a {}, not a hook_fire: pick a fire (e.g. "
                                            "`events --kind hook_fire`)", index, trace::to_string(e.kind)));
  }
  Explanation out;
  out.fire = static_cast<EventIndex>(index);
  out.hook = m.find_hook(m.source(index), e.key);
  if (out.hook == kNoIndex) {
    out.summary = fmt::format("key {} fired but the trace never shows it added",
                              trace::format_hook_key(e.key));
    out.steps.push_back({out.fire, m.describe(index)});
    return out;
  }
  const HookInfo& hook = m.hooks()[out.hook];
  const std::string owner = owner_words(m, hook.owner);
  const std::string fn = hook.function == kNoIndex ? owner : m.function_name(hook.function);
  out.steps.push_back({hook.added_at, hook.function == kNoIndex
                                          ? fmt::format("{} hook (key {}) registered on {}",
                                                        trace::to_string(hook.kind),
                                                        trace::format_hook_key(hook.key), owner)
                                          : fmt::format("{} hook (key {}) added to {} by {}",
                                                        trace::to_string(hook.kind),
                                                        trace::format_hook_key(hook.key), fn, owner)});
  const ReducerIndex r = hook.owner == kNoIndex ? kNoIndex : m.reducer_of(hook.owner);
  const EventIndex died = hook.owner == kNoIndex ? kNever : m.owners()[hook.owner].destroyed_at;
  if (died != kNever && died <= index) {
    out.verdict = FireVerdict::kStale;
    std::string why = r == kNoIndex ? std::string("without removing it")
                                    : fmt::format("without removing it (destroy policy {})",
                                                  policy_words(m.reducers()[r].policy));
    out.steps.push_back({died, fmt::format("{} destroyed {}", owner, why)});
  }
  if (hook.ended_at != kNever && hook.ended_at <= index && !hook.implicit_end) {
    out.verdict = out.verdict == FireVerdict::kStale ? out.verdict : FireVerdict::kAfterRemoval;
    std::string by = hook.removed_by == kNoIndex ? std::string() : " by " + owner_words(m, hook.removed_by);
    out.steps.push_back({hook.ended_at,
                         fmt::format("hook removed ({}){}; it still ran: the hook list it ran from "
                                     "was taken before the removal", trace::to_string(hook.cause), by)});
  }
  const EventIndex bw = backward_of(m, index);
  if (bw != kNever) {
    out.steps.push_back({bw, fmt::format("{} pass began on rank {}",
                                         m.event(bw).sub == 1 ? "autograd::grad" : "backward", e.rank)});
  }
  const uint32_t nth = m.fires_until(out.hook, index);
  const FunctionIndex at_fn = e.node ? m.find_function(m.source(index), e.node) : kNoIndex;
  out.steps.push_back({out.fire, fmt::format("the hook fired on {} (its fire #{})",
                                             at_fn == kNoIndex ? fn : m.function_name(at_fn), nth)});
  if (hook.owner != kNoIndex) reducer_outcome(m, index, hook, out);
  std::stable_sort(out.steps.begin(), out.steps.end(),
                   [](const ExplainStep& a, const ExplainStep& b) { return a.at < b.at; });
  switch (out.verdict) {
    case FireVerdict::kStale:
      out.summary = fmt::format("stale fire: {} was destroyed at #{} but its hook stayed on {}", owner, died, fn);
      break;
    case FireVerdict::kAfterRemoval:
      out.summary = fmt::format("fire after removal: the hook was removed at #{}, but it ran from a "
                                "hook list taken before that (PyTorch snapshots hook lists)", hook.ended_at);
      break;
    case FireVerdict::kNormal:
      out.summary = fmt::format("normal fire: {} is alive and its hook attached", owner);
      break;
  }
  return out;
}

}  // namespace hookscope::analysis
