// Note [Run story]: failures, losses and rebuilds per rank; stale fires; severities.

#include "render/layout/story.h"

#include <algorithm>
#include <tuple>
#include <fmt/format.h>

namespace hookscope::render {

using analysis::EventIndex;
using analysis::kNever;
using trace::EventKind;

RunStory::RunStory(const analysis::Model& model) {
  const size_t n = model.num_events();
  auto add_rank = [&](uint16_t r) {
    if (std::find(ranks_.begin(), ranks_.end(), r) == ranks_.end()) ranks_.push_back(r);
  };
  for (EventIndex i : model.events_of_kind(EventKind::kFailure)) {
    const auto failure = model.event(i).as<trace::ev::Failure>();
    const auto rank = static_cast<uint16_t>(failure.failed_rank);
    const auto mode = failure.mode;
    incidents_.push_back({i, rank, IncidentKind::kFailed, kNever, UINT32_MAX,
                          fmt::format("rank {} failed ({})", rank, trace::to_string(mode))});
    add_rank(rank);
  }
  // Traces cut short: the last event of each source, then the survivors' detection.
  std::vector<EventIndex> last(model.num_traces(), kNever);
  bool any_cut = false;
  for (size_t s = 0; s < model.num_traces(); ++s) any_cut |= !model.trace(s).truncation.empty();
  if (any_cut && model.num_traces() > 1) {
    for (size_t i = 0; i < n; ++i) last[model.source(i)] = static_cast<EventIndex>(i);
    const auto& steps = model.events_of_kind(EventKind::kRecoveryStep);
    for (size_t s = 0; s < model.num_traces(); ++s) {
      const trace::TraceData& t = model.trace(s);
      if (t.truncation.empty() || last[s] == kNever) continue;
      const uint16_t rank = t.header.rank >= 0 ? static_cast<uint16_t>(t.header.rank) : model.event(last[s]).rank;
      EventIndex at = last[s];
      for (EventIndex i : steps) {
        if (i <= last[s] || model.source(i) == s) continue;
        if (model.event(i).as<trace::ev::RecoveryStep>().step == trace::RecoveryStep::kDetected) {
          at = i;
          break;
        }
      }
      incidents_.push_back({at, rank, IncidentKind::kLost, last[s], static_cast<uint32_t>(s),
                            fmt::format("rank {} lost (process killed)", rank)});
      add_rank(rank);
    }
  }
  // Rebuilds: the next Reducer constructed on a failed or lost rank.
  std::vector<RankIncident> rebuilt;
  const auto& built = model.events_of_kind(EventKind::kReducerConstructed);
  for (const RankIncident& inc : incidents_) {
    for (EventIndex i : built) {
      if (i > inc.at && model.event(i).rank == inc.rank) {
        rebuilt.push_back({i, inc.rank, IncidentKind::kRebuilt, kNever, UINT32_MAX, fmt::format("rank {} rebuilt", inc.rank)});
        break;
      }
    }
  }
  incidents_.insert(incidents_.end(), rebuilt.begin(), rebuilt.end());
  std::stable_sort(incidents_.begin(), incidents_.end(),
                   [](const RankIncident& a, const RankIncident& b) { return a.at < b.at; });
  incidents_.erase(std::unique(incidents_.begin(), incidents_.end(),
                               [](const RankIncident& a, const RankIncident& b) {
                                 return a.at == b.at && a.rank == b.rank && a.kind == b.kind;
                               }),
                   incidents_.end());
  std::sort(ranks_.begin(), ranks_.end());
}

const RankIncident* RunStory::rank_status(uint16_t rank, size_t index) const {
  const RankIncident* found = nullptr;
  for (const RankIncident& inc : incidents_) {
    if (inc.at > index) break;
    if (inc.rank == rank) found = &inc;
  }
  return found;
}

const RankIncident* RunStory::failure_before(const RankIncident& rebuilt) const {
  const RankIncident* found = nullptr;
  for (const RankIncident& inc : incidents_) {
    if (inc.at >= rebuilt.at) break;
    if (inc.rank == rebuilt.rank && inc.kind != IncidentKind::kRebuilt) found = &inc;
  }
  return found;
}

CollectiveNames::CollectiveNames(const analysis::Model& model) : model_(&model) {
  const auto& cs = model.collectives();
  std::vector<uint32_t> order(cs.size());
  for (uint32_t i = 0; i < cs.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return cs[a].begin_at < cs[b].begin_at; });
  std::vector<std::pair<std::tuple<uint32_t, uint16_t, uint32_t, uint32_t>, uint32_t>> counts;  // key -> count
  sequence_.assign(cs.size(), 0);
  for (uint32_t i : order) {
    const auto key = std::tuple(cs[i].source, cs[i].rank, cs[i].reducer, cs[i].bucket);
    auto it = std::find_if(counts.begin(), counts.end(), [&](const auto& p) { return p.first == key; });
    if (it == counts.end()) it = counts.insert(counts.end(), {key, 0u});
    sequence_[i] = ++it->second;
  }
}

std::string CollectiveNames::name(size_t index) const {
  if (!model_ || index >= model_->num_events()) return "";
  const trace::Event e = model_->event(index);
  if (e.kind != EventKind::kCollectiveBegin && e.kind != EventKind::kCollectiveEnd && e.kind != EventKind::kBucketReady) return "";
  const uint32_t c = model_->find_collective(model_->source(index), e.rank, e.key);
  if (c == analysis::kNoIndex || c >= sequence_.size()) return "";
  const analysis::CollectiveInfo& info = model_->collectives()[c];
  if (info.bucket == analysis::kNoIndex || info.bucket == UINT32_MAX) return fmt::format("#{} outside buckets", sequence_[c]);
  return fmt::format("bucket {}, #{}", info.bucket, sequence_[c]);
}

std::string CollectiveNames::describe(size_t index) const {
  std::string text = model_->describe(index);
  const std::string n = name(index);
  if (n.empty()) return text;
  const std::string raw = "collective " + std::to_string(model_->event(index).key);
  const size_t at = text.find(raw);
  if (at != std::string::npos) return text.replace(at, raw.size(), "collective (" + n + ")");
  return text + " (" + n + ")";
}

Generations::Generations(const analysis::Model& model) {
  // Per rank, (event, generation) of its process groups, in event order.
  std::vector<std::vector<std::pair<EventIndex, uint32_t>>> groups;
  for (EventIndex i : model.events_of_kind(EventKind::kProcessGroupCreated)) {
    const trace::Event e = model.event(i);
    if (groups.size() <= e.rank) groups.resize(static_cast<size_t>(e.rank) + 1);
    const uint32_t generation = e.as<trace::ev::ProcessGroupCreated>().generation;
    groups[e.rank].push_back({i, generation});
    max_ = std::max(max_, generation);
  }
  auto gen_at = [&](uint16_t rank, EventIndex at) -> uint32_t {
    if (rank >= groups.size()) return 0;
    const auto& g = groups[rank];
    auto it = std::upper_bound(g.begin(), g.end(), std::make_pair(at, UINT32_MAX));
    return it == g.begin() ? 0 : std::prev(it)->second;
  };
  const auto& fs = model.functions();
  function_gen_.resize(fs.size());
  copied_.assign(fs.size(), 0);
  for (analysis::FunctionIndex f = 0; f < fs.size(); ++f) {
    const analysis::FunctionIndex prev = fs[f].previous;  // the same leaf's earlier AccumulateGrad
    function_gen_[f] = prev < f ? function_gen_[prev] : gen_at(fs[f].rank, fs[f].created_at);
  }
  owner_gen_.resize(model.owners().size());
  for (size_t o = 0; o < model.owners().size(); ++o) {
    owner_gen_[o] = gen_at(model.owners()[o].rank, model.owners()[o].created_at);
  }
  if (!max_) return;
  // Copies: leaves of one (rank, parameter name) in more than one generation.
  label_from_.assign(fs.size(), kNever);
  // (rank, parameter name, creation, Function): each group in creation order.
  std::vector<std::tuple<uint16_t, uint32_t, EventIndex, analysis::FunctionIndex>> leaves;
  for (analysis::FunctionIndex f = 0; f < fs.size(); ++f) {
    if (fs[f].is_leaf_accumulator() && fs[f].label) leaves.emplace_back(fs[f].rank, fs[f].label, fs[f].created_at, f);
  }
  std::sort(leaves.begin(), leaves.end());
  std::vector<EventIndex> rank_from;  // per rank: its first copy of a later generation
  for (size_t i = 0; i < leaves.size();) {
    size_t j = i;
    while (j < leaves.size() && std::get<0>(leaves[j]) == std::get<0>(leaves[i]) &&
           std::get<1>(leaves[j]) == std::get<1>(leaves[i])) {
      ++j;
    }
    // The first copy of another generation than the group's first leaf.
    const uint32_t first_gen = function_gen_[std::get<3>(leaves[i])];
    EventIndex second = kNever;
    for (size_t k = i; k < j && second == kNever; ++k) {
      if (function_gen_[std::get<3>(leaves[k])] != first_gen) second = std::get<2>(leaves[k]);
    }
    if (second != kNever) {
      const uint16_t rank = std::get<0>(leaves[i]);
      if (rank_from.size() <= rank) rank_from.resize(static_cast<size_t>(rank) + 1, kNever);
      rank_from[rank] = std::min(rank_from[rank], second);
      for (size_t k = i; k < j; ++k) copied_[std::get<3>(leaves[k])] = 1;
    }
    i = j;
  }
  // A rank's copies all show their generation from its first new copy on.
  for (analysis::FunctionIndex f = 0; f < fs.size(); ++f) {
    if (copied_[f]) label_from_[f] = rank_from[fs[f].rank];
  }
  owner_label_from_.assign(model.owners().size(), kNever);
  for (size_t o = 0; o < model.owners().size(); ++o) {
    const uint16_t rank = model.owners()[o].rank;
    if (rank < rank_from.size()) owner_label_from_[o] = rank_from[rank];
  }
}

uint32_t Generations::of_function(analysis::FunctionIndex f) const {
  return f < function_gen_.size() ? function_gen_[f] : 0;
}

uint32_t Generations::of_owner(analysis::OwnerIndex o) const { return o < owner_gen_.size() ? owner_gen_[o] : 0; }

std::string Generations::function_label(analysis::FunctionIndex f, analysis::EventIndex at) const {
  return label_from(f) <= at ? fmt::format("gen {}", function_gen_[f]) : std::string();
}

std::string Generations::owner_label(analysis::OwnerIndex o, analysis::EventIndex at) const {
  const analysis::EventIndex from = owner_label_from(o);
  return from != kNever && from <= at ? fmt::format("gen {}", owner_gen_[o]) : std::string();
}

bool is_stale_fire(const analysis::Model& model, size_t index) {
  if (index >= model.num_events()) return false;
  const trace::Event e = model.event(index);
  if (e.kind != EventKind::kHookFired) return false;
  const analysis::HookIndex h = model.find_hook(model.source(index), e.key);
  if (h == analysis::kNoIndex) return false;
  const analysis::HookInfo& hook = model.hooks()[h];
  if (hook.ended_at != kNever && hook.ended_at < index && !hook.implicit_end) return true;
  return hook.owner < model.owners().size() && model.owners()[hook.owner].destroyed_at < index;
}

Severity event_severity(const analysis::Model& model, size_t index) {
  if (index >= model.num_events()) return Severity::kNone;
  const trace::Event e = model.event(index);
  switch (e.kind) {
    case EventKind::kFailure: return Severity::kFailure;
    case EventKind::kHookFired: return is_stale_fire(model, index) ? Severity::kStaleFire : Severity::kNone;
    case EventKind::kReducerDestroyed:
    case EventKind::kOwnerDestroyed: return Severity::kDestruction;
    case EventKind::kProcessGroupDestroyed:
      return e.as<trace::ev::ProcessGroupDestroyed>().aborted ? Severity::kDestruction : Severity::kNone;
    case EventKind::kHookRemoveFailed: return Severity::kFailedRemoval;
    case EventKind::kReducerConstructed:
    case EventKind::kRecoveryStep: return Severity::kLifecycle;
    default: return Severity::kNone;
  }
}

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kNone: return "";
    case Severity::kLifecycle: return "lifecycle";
    case Severity::kFailedRemoval: return "failed removal";
    case Severity::kDestruction: return "destruction";
    case Severity::kStaleFire: return "stale fire";
    case Severity::kFailure: return "failure";
  }
  return "";
}

}  // namespace hookscope::render
