#include "analysis/explain.h"
#include "analysis/owner_status.h"

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
    case FireVerdict::kUnproven: return "unproven";
    case FireVerdict::kLingering: return "lingering";
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

// Why the Reducer's hook did nothing (Note [Lingering owners]).
std::string noop_words(const Model& m, EventIndex noop, const std::string& who) {
  switch (noop_cause(m, noop)) {
    case NoopCause::kDestroyed: return fmt::format("the hook ran but {} no longer exists: it did nothing", who);
    case NoopCause::kLingering:
      return fmt::format("{} did not prepare for this backward (its DDP is no longer used): its hook did nothing", who);
    case NoopCause::kNoSync:
      return fmt::format("{}'s DDP ran forward inside no_sync(): its hook did nothing, as intended (gradients "
                         "accumulate locally until a synchronised backward)", who);
    case NoopCause::kNotPrepared: break;
  }
  return fmt::format("{} did not prepare for this backward (no forward through its DDP before it): its hook did "
                     "nothing", who);
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
    const auto ready = m.event(mark).as<ev::MarkReady>();
    out.steps.push_back(
        {mark, fmt::format("{} marked parameter {} ready (bucket {})", who, ready.param, ready.bucket)});
  } else if (by_this(noop)) {
    out.steps.push_back({noop, noop_words(m, noop, who)});
  }
}

// Owners as a sentence names them: a module by its path ("module '2'").
std::string owner_words(const Model& m, OwnerIndex o) {
  if (o == kNoIndex) return "an unknown owner";
  if (m.owners()[o].kind == trace::OwnerKind::kModule) return fmt::format("module '{}'", m.owner_name(o));
  return m.owner_name(o);
}

// The Function the fire event names (its own node id), which need not be the
// one the hook was added to, nor one the trace ever created.
std::string fired_on(const Model& m, size_t index, const trace::Event& e, const std::string& fallback) {
  if (e.node == 0) return fallback;
  const FunctionIndex f = m.find_function(m.source(index), e.node);
  return f == kNoIndex ? fmt::format("unknown Function #{}", e.node) : m.function_name(f);
}

// What the trace claims at `index` that cannot be true (Note [Malformed traces]), or null.
const Malformation* malformation_at(const Model& m, size_t index) {
  const auto& v = m.malformations();
  const auto it = std::find_if(v.begin(), v.end(), [&](const Malformation& x) { return x.at == index; });
  return it == v.end() ? nullptr : &*it;
}

// Note [What explain can prove]: why this fire cannot be explained, or "" when it can.
std::string unproven_reason(const Model& m, const HookInfo& hook, const Malformation* bad) {
  if (bad) {
    return fmt::format("the trace cannot be true here ({}: {})", to_string(bad->kind), bad->what);
  }
  if (!hook.announced) {
    return fmt::format("the trace never shows key {} added (the hook may predate the recording)",
                       trace::format_hook_key(hook.key));
  }
  if (hook.owner == kNoIndex) return "the hook names no owner, so nothing shows who keeps it attached";
  if (!m.owners()[hook.owner].announced) {
    return fmt::format("its owner {} was never declared, so nothing shows it alive", m.owner_name(hook.owner));
  }
  return {};
}

// The first step: the hook's add, or (Note [What explain can prove]) what is missing.
ExplainStep added_step(const Model& m, const HookInfo& hook, const std::string& owner, const std::string& fn) {
  const std::string key = trace::format_hook_key(hook.key);
  if (!hook.announced) {
    return {kNever, fmt::format("no hook_add for key {} anywhere in the trace: when and by whom it was added "
                                "is unknown", key)};
  }
  if (hook.function == kNoIndex) {
    return {hook.added_at, fmt::format("{} hook (key {}) registered on {}", trace::to_string(hook.kind), key, owner)};
  }
  return {hook.added_at, fmt::format("{} hook (key {}) added to {} by {}", trace::to_string(hook.kind), key, fn, owner)};
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
  out.hook = m.hook_fired_at(index);  // not find_hook(): a key added again names a newer hook
  if (out.hook == kNoIndex) {
    out.verdict = FireVerdict::kUnproven;
    out.summary = fmt::format("key {} fired but the trace never shows it added",
                              trace::format_hook_key(e.key));
    out.steps.push_back({out.fire, m.describe(index)});
    return out;
  }
  const HookInfo& hook = m.hooks()[out.hook];
  const std::string owner = owner_words(m, hook.owner);
  const std::string fn = hook.function == kNoIndex ? owner : m.function_name(hook.function);
  const std::string on = fired_on(m, index, e, fn);
  const Malformation* bad = malformation_at(m, index);
  out.steps.push_back(added_step(m, hook, owner, fn));
  const ReducerIndex r = hook.owner == kNoIndex ? kNoIndex : m.reducer_of(hook.owner);
  const EventIndex died = hook.owner == kNoIndex ? kNever : m.owners()[hook.owner].destroyed_at;
  if (died != kNever && died <= index) {
    out.verdict = FireVerdict::kStale;
    std::string why = r == kNoIndex ? std::string("without removing it")
                                    : fmt::format("without removing it (destroy policy {})",
                                                  policy_words(m.reducers()[r].policy));
    out.steps.push_back({died, fmt::format("{} destroyed {}", owner, why)});
  }
  const OwnerIndex o = hook.owner;
  if (o != kNoIndex && owner_status(m, o, out.fire) == OwnerStatus::kLingering) {
    out.verdict = FireVerdict::kLingering;
    out.steps.push_back({m.owners()[o].replaced_at,
                         fmt::format("{} prepared its first backward: {} is no longer used",
                                     owner_words(m, m.owners()[o].replaced_by), owner)});
  }
  if (hook.ended_at != kNever && hook.ended_at <= index && !hook.implicit_end) {
    out.verdict = out.verdict == FireVerdict::kNormal ? FireVerdict::kAfterRemoval : out.verdict;
    std::string by = hook.removed_by == kNoIndex ? std::string() : " by " + owner_words(m, hook.removed_by);
    out.steps.push_back({hook.ended_at,
                         fmt::format("hook removed ({}){}; it still ran: the hook list it ran from "
                                     "was taken before the removal", trace::to_string(hook.cause), by)});
  }
  const EventIndex bw = backward_of(m, index);
  if (bw != kNever) {
    out.steps.push_back({bw, fmt::format("{} pass began on rank {}",
                                         m.event(bw).as<ev::BackwardBegin>().grad ? "autograd::grad" : "backward",
                                         e.rank)});
  }
  const uint32_t nth = m.fires_until(out.hook, index);
  const bool comm = hook.kind == trace::HookKind::kCommHook;  // Note [Comm hooks in traces]
  if (comm) {
    const auto fire = e.as<ev::HookFired>();
    out.steps.push_back({out.fire, fmt::format("{} handed bucket {} ({} bytes) to its comm hook (its fire #{}): "
                                               "what the hook returns replaces DDP's allreduce of it",
                                               owner, fire.bucket, fire.bytes, nth)});
  } else {
    out.steps.push_back({out.fire, fmt::format("the hook fired on {} (its fire #{})", on, nth)});
  }
  const std::string unproven = unproven_reason(m, hook, bad);
  if (bad) out.steps.push_back({out.fire, unproven});
  if (hook.owner != kNoIndex && !comm) reducer_outcome(m, index, hook, out);
  // in event order; a missing add (no event) stays first, where the add would be
  const auto from = out.steps.begin() + (out.steps.front().at == kNever ? 1 : 0);
  std::stable_sort(from, out.steps.end(), [](const ExplainStep& a, const ExplainStep& b) { return a.at < b.at; });
  // What events prove (a death, a removal) stands; "normal" only when nothing is missing.
  if (out.verdict == FireVerdict::kNormal && !unproven.empty()) out.verdict = FireVerdict::kUnproven;
  switch (out.verdict) {
    case FireVerdict::kStale:
      out.summary = fmt::format("stale fire: {} was destroyed at #{} but its hook stayed on {}", owner, died, fn);
      break;
    case FireVerdict::kAfterRemoval:
      out.summary = fmt::format("fire after removal: the hook was removed at #{}, but it ran from a "
                                "hook list taken before that (PyTorch snapshots hook lists)", hook.ended_at);
      break;
    case FireVerdict::kUnproven:
      out.summary = fmt::format("cannot say why it fired on {}: {}", on, unproven);
      break;
    case FireVerdict::kLingering:
      out.summary = fmt::format("lingering: {} - a reference the program kept; its hook did nothing",
                                replaced_text(m, o, out.fire));
      break;
    case FireVerdict::kNormal:
      out.summary = fmt::format("normal fire: {} is alive and its hook attached", owner);
      break;
  }
  return out;
}

}  // namespace hookscope::analysis
