// marked_twice and unused_parameter (Note [Findings]): what a Reducer itself
// reported about its parameters.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/diagnostics.h"

namespace hookscope::analysis {

using trace::EventKind;

namespace {

struct Context {
  OwnerIndex owner = kNoIndex;
  ReducerIndex reducer = kNoIndex;
  FunctionIndex function = kNoIndex;
  EventIndex prepare = kNever;  // the prepare_for_backward this event belongs to
  int64_t backward = -1;
};

Context context_of(const Model& m, EventIndex i, const trace::Event& e) {
  Context c;
  const uint32_t source = m.source(i);
  c.owner = m.find_owner(source, e.owner);
  c.reducer = m.reducer_of(c.owner);
  if (e.node) c.function = m.find_function(source, e.node);
  if (c.reducer == kNoIndex) return c;
  const auto& prepares = m.reducers()[c.reducer].prepares;
  auto p = std::upper_bound(prepares.begin(), prepares.end(), i);
  if (p == prepares.begin()) return c;
  c.prepare = *(p - 1);
  c.backward = static_cast<int64_t>(m.reducers()[c.reducer].prepare_backwards[p - 1 - prepares.begin()]);
  return c;
}

Finding make(const Model& m, FindingKind kind, Severity severity, EventIndex i,
             const trace::Event& e, const Context& c) {
  Finding out;
  out.kind = kind;
  out.severity = severity;
  out.at = i;
  out.function = c.function;
  out.node = e.node;
  out.owner = c.owner;
  out.owner_id = e.owner;
  out.rank = e.rank;
  out.source = m.source(i);
  return out;
}

std::string parameter_words(const Model& m, const trace::Event& e, const Context& c) {
  const auto named = trace::parameter_named(e);
  std::string s = fmt::format("parameter '{}' (index {})", m.str(named.param_name), named.param);
  if (c.function != kNoIndex) s += " on " + m.function_name(c.function);
  return s;
}

std::string owner_words(const Model& m, const Context& c, uint32_t raw) {
  return c.owner == kNoIndex ? fmt::format("owner #{}", raw) : m.owner_name(c.owner);
}

}  // namespace

std::vector<Finding> diagnose_reducers(const Model& m) {
  std::vector<Finding> out;
  // (Reducer, prepare, parameter) -> its first kMarkReady in that backward:
  // one pass over the Reducers' events, not a scan per finding.
  std::map<std::tuple<ReducerIndex, EventIndex, uint64_t>, EventIndex> first_ready;
  if (!m.events_of_kind(EventKind::kMarkedTwice).empty()) {
    for (ReducerIndex r = 0; r < m.reducers().size(); ++r) {
      EventIndex prepare = kNever;
      for (EventIndex x : m.reducers()[r].events) {
        const trace::Event ev = m.event(x);
        if (ev.kind == EventKind::kPrepareForBackward) prepare = x;
        if (ev.kind == EventKind::kMarkReady && prepare != kNever) {
          first_ready.try_emplace({r, prepare, ev.as<ev::MarkReady>().param}, x);
        }
      }
    }
  }
  for (EventIndex i : m.events_of_kind(EventKind::kMarkedTwice)) {
    const trace::Event e = m.event(i);
    const Context c = context_of(m, i, e);
    Finding f = make(m, FindingKind::kMarkedTwice, Severity::kError, i, e, c);
    EventIndex first = kNever;
    if (c.reducer != kNoIndex && c.prepare != kNever) {
      auto it = first_ready.find({c.reducer, c.prepare, e.as<ev::MarkedTwice>().param});
      if (it != first_ready.end() && it->second < i) first = it->second;
      f.events.push_back(c.prepare);
    }
    if (first != kNever) f.events.push_back(first);
    f.events.push_back(i);
    f.message = fmt::format(
        "{} marked {} ready twice in backward {}{}. Likely causes: the parameter is used "
        "outside the module's forward or in several forwards before one backward, or it takes "
        "part in a reentrant backward (activation checkpointing)",
        owner_words(m, c, e.owner), parameter_words(m, e, c), c.backward,
        first == kNever ? "" : fmt::format(" (first at event #{}, again at #{})", first, i));
    out.push_back(std::move(f));
  }

  struct Unused {
    Finding finding;
    std::vector<int64_t> backwards;
    size_t unhandled = 0;
  };
  std::map<std::pair<uint32_t, uint64_t>, Unused> unused;  // (owner or raw id, parameter)
  for (EventIndex i : m.events_of_kind(EventKind::kUnusedParameter)) {
    const trace::Event e = m.event(i);
    const Context c = context_of(m, i, e);
    const uint32_t who = c.owner != kNoIndex ? c.owner : (1u << 31) | e.owner;
    const uint32_t param = e.as<ev::UnusedParameter>().param;
    auto [it, inserted] = unused.try_emplace({who, param});
    Unused& u = it->second;
    if (inserted) {
      u.finding = make(m, FindingKind::kUnusedParameter, Severity::kWarning, i, e, c);
      u.finding.count = 0;
      u.finding.message = fmt::format("{} of {}", parameter_words(m, e, c),
                                      owner_words(m, c, e.owner));
    }
    ++u.finding.count;
    u.backwards.push_back(c.backward);
    // With find_unused_parameters the Reducer marks it ready at once; without,
    // the backward fails.
    bool handled = false;
    if (c.reducer != kNoIndex) {
      const auto& events = m.reducers()[c.reducer].events;
      auto next = std::upper_bound(events.begin(), events.end(), i);
      if (next != events.end()) {
        const trace::Event ev = m.event(*next);
        handled = ev.kind == EventKind::kMarkReady && ev.as<ev::MarkReady>().param == param;
      }
    }
    if (!handled) {
      ++u.unhandled;
      u.finding.severity = Severity::kError;
    }
    if (u.finding.events.size() < 8) u.finding.events.push_back(i);
  }
  for (auto& [key, u] : unused) {
    if (u.unhandled == 0) {
      u.finding.message += fmt::format(
          " got no gradient in {} backward(s) (first in backward {}); DDP marked it ready "
          "each time (find_unused_parameters at the cost of a graph search per backward; "
          "static_graph, in PyTorch, from what its first backward saw)",
          u.finding.count, u.backwards.front());
    } else {
      u.finding.message += fmt::format(
          " got no gradient in {} backward(s) (first in backward {}), {} of them without "
          "find_unused_parameters, so its bucket could not be reduced. If the forward skips it "
          "on purpose, build DDP with find_unused_parameters=true; otherwise check the forward",
          u.finding.count, u.backwards.front(), u.unhandled);
    }
    out.push_back(std::move(u.finding));
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Finding& a, const Finding& b) { return a.at < b.at; });
  return out;
}

}  // namespace hookscope::analysis
