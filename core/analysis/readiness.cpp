#include "analysis/readiness.h"

#include <algorithm>
#include <map>

#include <fmt/format.h>

namespace hookscope::analysis {

using trace::EventKind;

std::string_view to_string(Readiness r) {
  switch (r) {
    case Readiness::kNoDdp: return "none";
    case Readiness::kOk: return "ok";
    case Readiness::kUnused: return "unused";
    case Readiness::kTwice: return "twice";
    case Readiness::kStale: return "stale";
    case Readiness::kNotReached: return "cut";
  }
  return "?";
}

namespace {

// What one rank's events say, before they are laid out as a grid.
struct RankScan {
  std::vector<BackwardColumn> backwards;
  std::map<uint32_t, FunctionIndex> parameters;  // index -> latest AccumulateGrad
  std::map<FunctionIndex, uint32_t> parameter_of;
  struct Mark {
    EventIndex at;
    uint32_t parameter;
    EventKind kind;  // kMarkReady, kMarkedTwice, kUnusedParameter, kAutogradHookNoop, kHookFired (stale)
  };
  std::vector<Mark> marks;
};

std::vector<EventIndex> merged_kinds(const Model& m, std::initializer_list<EventKind> kinds) {
  std::vector<EventIndex> out;
  for (EventKind k : kinds) {
    const auto& v = m.events_of_kind(k);
    out.insert(out.end(), v.begin(), v.end());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string label_of(const Model& m, FunctionIndex f, uint32_t index) {
  if (f != kNoIndex && m.functions()[f].label != 0) return m.str(m.functions()[f].label);
  return fmt::format("parameter {}", index);
}

void scan(const Model& m, std::map<uint16_t, RankScan>& ranks) {
  // Which Reducer prepared most recently on each rank (reset when it dies).
  std::map<uint16_t, std::pair<ReducerIndex, EventIndex>> prepared;  // (Reducer, its prepare)
  const auto events = merged_kinds(
      m, {EventKind::kBackwardBegin, EventKind::kBackwardEnd, EventKind::kPrepareForBackward,
          EventKind::kMarkReady, EventKind::kMarkedTwice, EventKind::kUnusedParameter,
          EventKind::kAutogradHookNoop, EventKind::kReducerConstructed});
  // the open backward pass per (source, thread): a pass begins and ends on one thread
  std::map<std::pair<uint32_t, uint32_t>, std::pair<uint16_t, size_t>> open;
  for (EventIndex i : events) {
    const trace::Event e = m.event(i);
    const uint32_t s = m.source(i);
    switch (e.kind) {
      case EventKind::kReducerConstructed:
        ranks[e.rank];  // a rank with a Reducer gets a grid even with no backward
        break;
      case EventKind::kPrepareForBackward: {
        const OwnerIndex o = m.find_owner(s, e.owner);
        prepared[e.rank] = {o == kNoIndex ? kNoIndex : m.reducer_of(o), i};
        break;
      }
      case EventKind::kBackwardBegin: {
        if (e.as<ev::BackwardBegin>().grad) break;  // autograd::grad: no AccumulateGrad runs
        auto it = prepared.find(e.rank);
        ReducerIndex r = it == prepared.end() ? kNoIndex : it->second.first;
        if (r != kNoIndex && m.reducers()[r].destroyed_at < i) r = kNoIndex;
        auto& rs = ranks[e.rank];
        rs.backwards.push_back({r == kNoIndex ? kNever : it->second.second, i, kNever, false, r});
        open[{s, e.thread}] = {e.rank, rs.backwards.size() - 1};
        if (it != prepared.end()) it->second = {kNoIndex, kNever};  // a prepare serves one backward
        break;
      }
      case EventKind::kBackwardEnd: {
        auto it = open.find({s, e.thread});
        if (it == open.end()) break;
        auto& column = ranks[it->second.first].backwards[it->second.second];
        column.end = i;
        column.completed = e.as<ev::BackwardEnd>().ending == trace::BackwardEnding::kCompleted;
        open.erase(it);
        break;
      }
      case EventKind::kMarkReady:
      case EventKind::kMarkedTwice:
      case EventKind::kUnusedParameter:
      case EventKind::kAutogradHookNoop: {
        // Each names its parameter, except the not-prepared no-op, which
        // names only the hook.
        uint32_t index = 0;
        const FunctionIndex f = e.node ? m.find_function(s, e.node) : kNoIndex;
        auto& rs = ranks[e.rank];
        if (e.kind == EventKind::kMarkReady) {
          index = static_cast<uint32_t>(e.as<ev::MarkReady>().param);
        } else if (e.kind == EventKind::kAutogradHookNoop) {
          const auto noop = e.as<ev::AutogradHookNoop>();
          auto known = rs.parameter_of.find(f);
          if (noop.reason != trace::NoopReason::kNotPrepared) index = static_cast<uint32_t>(noop.param);
          else if (known != rs.parameter_of.end()) index = known->second;
          else break;
        } else {
          index = trace::parameter_named(e).param;
        }
        if (f != kNoIndex) {
          rs.parameters[index] = f;
          rs.parameter_of[f] = index;
        } else {
          rs.parameters.try_emplace(index, kNoIndex);
        }
        rs.marks.push_back({i, index, e.kind});
        break;
      }
      default: break;
    }
  }
  // Stale fires: hooks of a Reducer's owner firing at or after its death.
  for (HookIndex h = 0; h < m.hooks().size(); ++h) {
    const HookInfo& hook = m.hooks()[h];
    if (hook.owner == kNoIndex || m.reducer_of(hook.owner) == kNoIndex) continue;
    const EventIndex died = m.owners()[hook.owner].destroyed_at;
    if (died == kNever) continue;
    auto it = ranks.find(hook.rank);
    if (it == ranks.end()) continue;
    auto p = it->second.parameter_of.find(hook.function);
    if (p == it->second.parameter_of.end()) continue;
    for (EventIndex at : m.fires(h)) {
      if (at >= died) it->second.marks.push_back({at, p->second, EventKind::kHookFired});
    }
  }
}

EventIndex start_of(const BackwardColumn& c) { return c.prepared_at != kNever ? c.prepared_at : c.begin; }

ReadinessGrid lay_out(const Model& m, uint16_t rank, RankScan& rs) {
  ReadinessGrid g;
  g.rank = rank;
  g.backwards = std::move(rs.backwards);
  std::map<uint32_t, size_t> row_of;
  for (const auto& [index, f] : rs.parameters) {
    row_of[index] = g.parameters.size();
    g.parameters.push_back({index, f, label_of(m, f, index)});
  }
  g.cells.resize(g.parameters.size() * g.backwards.size());
  for (size_t b = 0; b < g.backwards.size(); ++b) {
    for (size_t p = 0; p < g.parameters.size(); ++p) {
      g.cells[p * g.backwards.size() + b].event = g.backwards[b].begin;  // until a mark says more
    }
  }
  for (const auto& mark : rs.marks) {
    // the column holding the event: the last that started at or before it
    auto it = std::upper_bound(g.backwards.begin(), g.backwards.end(), mark.at,
                               [](EventIndex at, const BackwardColumn& c) { return at < start_of(c); });
    if (it == g.backwards.begin()) continue;
    const size_t b = static_cast<size_t>(it - g.backwards.begin()) - 1;
    if (g.backwards[b].end != kNever && mark.at > g.backwards[b].end) continue;
    ReadinessCell& c = g.cells[row_of.at(mark.parameter) * g.backwards.size() + b];
    switch (mark.kind) {
      case EventKind::kMarkReady:
        if (++c.marks == 1 && !c.unused && !c.twice && c.stale == 0) c.event = mark.at;
        break;
      case EventKind::kMarkedTwice:
        if (!c.twice) c.event = mark.at;
        c.twice = true;
        break;
      case EventKind::kUnusedParameter:
        if (!c.twice) c.event = mark.at;
        c.unused = true;
        break;
      case EventKind::kAutogradHookNoop: ++c.noops; break;
      default:
        if (c.stale++ == 0 && !c.twice && !c.unused) c.event = mark.at;
        break;
    }
  }
  for (size_t b = 0; b < g.backwards.size(); ++b) {
    const bool ddp = g.backwards[b].reducer != kNoIndex;
    for (size_t p = 0; p < g.parameters.size(); ++p) {
      ReadinessCell& c = g.cells[p * g.backwards.size() + b];
      if (c.twice) c.status = Readiness::kTwice;
      else if (c.unused) c.status = Readiness::kUnused;
      else if (c.stale) c.status = Readiness::kStale;
      else if (c.marks) c.status = Readiness::kOk;
      else if (!ddp) c.status = Readiness::kNoDdp;
      else c.status = g.backwards[b].completed ? Readiness::kUnused : Readiness::kNotReached;
    }
  }
  return g;
}

// Note [Readiness map size]: refuse before allocating.
void check_size(const std::map<uint16_t, RankScan>& ranks) {
  size_t cells = 0;
  for (const auto& [rank, rs] : ranks) {
    // both counts come from events (< 2^32 each): their product fits
    const size_t n = rs.parameters.size(), b = rs.backwards.size();
    cells += n * b;
    if (cells <= kMaxReadinessCells) continue;
    throw ReadinessTooLarge(fmt::format(
        "the readiness map is too large to show: rank {} has {} parameters x {} backward passes = {} cells, "
        "all ranks together may have at most {}; look at a shorter trace, or list the marks with "
        "`hookscope-cli events --kind mark_ready`", rank, n, b, n * b, kMaxReadinessCells));
  }
}

}  // namespace

std::vector<ReadinessGrid> readiness_grids(const Model& model) {
  std::map<uint16_t, RankScan> ranks;
  scan(model, ranks);
  check_size(ranks);
  std::vector<ReadinessGrid> out;
  for (auto& [rank, rs] : ranks) out.push_back(lay_out(model, rank, rs));
  return out;
}

}  // namespace hookscope::analysis
