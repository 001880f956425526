// The diagnostics of Note [Findings], computed from the model's tables.

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_growth.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <functional>
#include <queue>
#include <map>
#include <set>
#include <stdexcept>

namespace hookscope::analysis {

using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::kLeakedHook: return "leaked_hook";
    case FindingKind::kStaleFire: return "stale_fire";
    case FindingKind::kCollateralRemoval: return "collateral_removal";
    case FindingKind::kMultiOwner: return "multi_owner";
    case FindingKind::kFailedRemoval: return "failed_removal";
    case FindingKind::kHookGrowth: return "hook_growth";
    case FindingKind::kMarkedTwice: return "marked_twice";
    case FindingKind::kUnusedParameter: return "unused_parameter";
    case FindingKind::kMalformedTrace: return "malformed_trace";
    case FindingKind::kUnrecoveredFailure: return "unrecovered_failure";
  }
  return "?";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "?";
}

FindingKind finding_kind_from_string(std::string_view name) {
  std::string all;
  for (int k = 0; k < kNumFindingKinds; ++k) {
    const auto kind = static_cast<FindingKind>(k);
    if (to_string(kind) == name) return kind;
    all += (k ? ", " : "") + std::string(to_string(kind));
  }
  throw std::invalid_argument(
      fmt::format("unknown finding kind '{}'; the kinds are: {}", name, all));
}

namespace {

constexpr size_t kMaxEvidence = 8;  // proving events kept per finding

class Diagnoser {
 public:
  explicit Diagnoser(const Model& m) : m_(m) { index_segments_by_hook(); }
  std::vector<Finding> run();

 private:
  void index_segments_by_hook();
  FunctionIndex function_at(HookIndex h, EventIndex e, bool* on_tensor = nullptr) const;
  Finding make(FindingKind kind, Severity severity, FunctionIndex f, OwnerIndex o) const;
  std::string hook_words(HookIndex h) const;
  std::string where(FunctionIndex f, bool on_tensor) const;
  void leaks_and_stale_fires();
  void collateral_removals();
  void fires_after_removal(HookIndex h);
  void per_function(FunctionIndex f);
  void failed_removals();

  const Model& m_;
  std::vector<uint32_t> seg_begin_, seg_of_hook_;
  std::vector<EventIndex> last_prepare_;  // per owner (Note [Hook growth])
  std::vector<Finding> out_;
};

void add_evidence(Finding& f, size_t index) {
  if (index != kNever) f.events.push_back(index);
}

void finish_evidence(Finding& f) {
  std::sort(f.events.begin(), f.events.end());
  f.events.erase(std::unique(f.events.begin(), f.events.end()), f.events.end());
}

void Diagnoser::index_segments_by_hook() {
  const auto& segs = m_.segments();
  seg_begin_.assign(m_.hooks().size() + 1, 0);
  for (const HookSegment& s : segs) ++seg_begin_[s.hook + 1];
  for (size_t h = 0; h < m_.hooks().size(); ++h) seg_begin_[h + 1] += seg_begin_[h];
  seg_of_hook_.resize(segs.size());
  std::vector<uint32_t> fill(seg_begin_.begin(), seg_begin_.end() - 1);
  for (uint32_t s = 0; s < segs.size(); ++s) seg_of_hook_[fill[segs[s].hook]++] = s;
}

// Where hook `h` was right after event `e` (its last place before, if gone).
FunctionIndex Diagnoser::function_at(HookIndex h, EventIndex e, bool* on_tensor) const {
  FunctionIndex f = m_.hooks()[h].function;
  bool tensor = false;
  // A hook's segments are in time order: the last one starting at or before e.
  const auto first = seg_of_hook_.begin() + seg_begin_[h];
  const auto last = seg_of_hook_.begin() + seg_begin_[h + 1];
  auto it = std::upper_bound(first, last, e, [&](EventIndex x, uint32_t s) {
    return x < m_.segments()[s].from;
  });
  if (it != first) {
    const HookSegment& s = m_.segments()[*(it - 1)];
    f = s.function;
    tensor = s.on_tensor;
  }
  if (on_tensor) *on_tensor = tensor;
  return f;
}

Finding Diagnoser::make(FindingKind kind, Severity severity, FunctionIndex f,
                        OwnerIndex o) const {
  Finding out;
  out.kind = kind;
  out.severity = severity;
  out.function = f;
  out.owner = o;
  if (f != kNoIndex) {
    const FunctionInfo& info = m_.functions()[f];
    out.node = info.id;
    out.rank = info.rank;
    out.source = info.source;
  }
  if (o != kNoIndex) {
    const OwnerInfo& info = m_.owners()[o];
    out.owner_id = info.id;
    out.rank = info.rank;
    out.source = info.source;
  }
  return out;
}

std::string Diagnoser::hook_words(HookIndex h) const {
  const HookInfo& hook = m_.hooks()[h];
  return fmt::format("{} hook (key {})", trace::to_string(hook.kind), trace::format_hook_key(hook.key));
}

std::string Diagnoser::where(FunctionIndex f, bool on_tensor) const {
  if (!on_tensor) return m_.function_name(f);
  return "the leaf tensor of " + m_.function_name(f) + " (released)";
}

void Diagnoser::leaks_and_stale_fires() {
  struct Group {
    std::vector<HookIndex> hooks;
    bool on_tensor = false;
    size_t fires = 0;
    EventIndex first_fire = kNever;
    std::vector<EventIndex> fire_events;
  };
  std::map<std::pair<OwnerIndex, FunctionIndex>, Group> leaks, stale;
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
      Group& g = leaks[{hook.owner, f}];
      g.hooks.push_back(h);
      g.on_tensor = tensor;
    }
    auto fires = m_.fires(h);
    auto first = std::upper_bound(fires.begin(), fires.end(), died);
    if (first == fires.end()) continue;
    Group& g = stale[{hook.owner, function_at(h, *first)}];
    g.hooks.push_back(h);
    g.fires += static_cast<size_t>(fires.end() - first);
    g.first_fire = std::min(g.first_fire, *first);
    for (auto it = first; it != fires.end() && g.fire_events.size() < kMaxEvidence / 2; ++it) {
      g.fire_events.push_back(*it);
    }
  }
  for (auto& [key, g] : leaks) {
    const auto [o, f] = key;
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
    out_.push_back(std::move(out));
  }
  for (auto& [key, g] : stale) {
    const auto [o, f] = key;
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
    out.message = fmt::format(
        "{} was destroyed at event #{} but {} on {} fired {} time(s) after that, first at "
        "event #{}",
        m_.owner_name(o), owner.destroyed_at, what, m_.function_name(f), g.fires, g.first_fire);
    finish_evidence(out);
    out_.push_back(std::move(out));
  }
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
  out_.push_back(std::move(out));
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
    out_.push_back(std::move(out));
  }
}

// multi_owner and hook_growth (Note [Hook growth]): one sweep over the hooks
// that ever sat on `f`, in O(n log n) (counts of the hooks on `f` kept as the
// sweep goes, not recounted per hook). Only the first hook an owner adds of a
// kind opens a growth step or a multi-owner check, as a Reducer adds one hook
// per Function.
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
            out_.push_back(std::move(out));
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
    out_.push_back(std::move(out));
  }
}

void Diagnoser::failed_removals() {
  for (EventIndex i : m_.events_of_kind(EventKind::kHookRemoveFailed)) {
    const trace::Event e = m_.event(i);
    const uint32_t source = m_.source(i);
    const FunctionIndex f = m_.find_function(source, e.node);
    const OwnerIndex actor = m_.find_owner(source, e.actor);
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
    const auto kind = static_cast<HookKind>(e.sub % trace::kNumHookKinds);
    out.message = fmt::format("{} asked to remove {} hook key {} from {}, but it was not there: {}",
                              actor == kNoIndex ? "someone" : m_.owner_name(actor),
                              trace::to_string(kind), trace::format_hook_key(e.key),
                              f == kNoIndex ? fmt::format("Function #{}", e.node)
                                            : m_.function_name(f),
                              why);
    finish_evidence(out);
    out_.push_back(std::move(out));
  }
}

std::vector<Finding> Diagnoser::run() {
  leaks_and_stale_fires();
  collateral_removals();
  last_prepare_ = last_prepares(m_);
  for (FunctionIndex f = 0; f < m_.functions().size(); ++f) per_function(f);
  failed_removals();
  for (Finding& f : diagnose_reducers(m_)) out_.push_back(std::move(f));
  for (Finding& f : diagnose_malformed(m_)) out_.push_back(std::move(f));
  for (Finding& f : diagnose_failures(m_)) out_.push_back(std::move(f));
  std::stable_sort(out_.begin(), out_.end(), [](const Finding& a, const Finding& b) {
    return std::tie(a.at, a.kind) < std::tie(b.at, b.kind);
  });
  return std::move(out_);
}

}  // namespace

std::vector<Finding> diagnose(const Model& model) { return Diagnoser(model).run(); }

}  // namespace hookscope::analysis
