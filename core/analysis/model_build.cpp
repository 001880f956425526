// The load pass: one walk over the merged timeline that fills the model's
// tables (Note [Analysis ids]) and turns lifetimes into the intervals that
// replay works from (Note [Replay by intervals]).

#include <algorithm>
#include <cstddef>
#include <functional>
#include <queue>
#include <fmt/format.h>
#include <stdexcept>
#include <unordered_map>

#include "analysis/model_builder.h"

namespace hookscope::analysis {

using trace::Event;
using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

// Note [Merging traces]
// ~~~~~~~~~~~~~~~~~~~~~
// Each trace's events are in order already (Note [Event record]). Processes
// have different steady clocks: when every trace's header gives both its
// start on the wall clock and on the event clock, an event's time on the
// common clock is start_wall_ns + (t_ns - start_mono_ns); otherwise t_ns is
// used as is (ranks run as threads of one process share one clock). Traces
// are merged by that time, ties going to the earlier trace, and each trace's
// own order is kept even where its clock would disagree.

void ModelBuilder::run() {
  merge();
  m_.kind_events_.assign(static_cast<size_t>(EventKind::kCount), {});
  m_.strings_.assign(1, std::string());
  string_ids_.emplace(std::string(), 0);
  for (const auto& t : m_.traces_) m_.string_map_.emplace_back(t.strings.size(), kNoIndex);
  m_.strings_.push_back("?");
  string_ids_.emplace("?", 1);
  m_.unknown_string_ = 1;
  slots_left_ = 4 * static_cast<uint64_t>(m_.num_events_) + 4096;
  reserve_tables();
  for (uint32_t s = 0; s < m_.traces_.size(); ++s) {
    const auto& h = m_.traces_[s].header;
    // Note [Malformed traces]: only a header a recorder wrote (it names the
    // hookscope version) states the world size; in-memory ones keep the default 1.
    clock_back_reported_.push_back(0);
    rank_header_bad_.push_back(!h.hookscope_version.empty() && h.rank >= 0 && h.world_size > 0 &&
                               h.rank >= h.world_size);
  }
  for (EventIndex i = 0; i < m_.num_events_; ++i) {
    const uint32_t source = m_.source(i);
    const auto& t = m_.traces_[source];
    const Event& e = m_.order_.empty() ? t.events[i] : t.events[m_.order_[i] & ((1ull << 40) - 1)];
    const uint16_t rank = t.header.rank >= 0 ? static_cast<uint16_t>(t.header.rank) : e.rank;
    check(i, source, rank, e);
    apply(i, source, rank, e);
  }
  finish();
}

void ModelBuilder::merge() {
  size_t total = 0;
  for (const auto& t : m_.traces_) total += t.events.size();
  if (total >= kNever) {
    throw std::invalid_argument(fmt::format(
        "cannot analyse {} events at once: the analysis model holds at most {} events; "
        "analyse fewer traces together or a shorter recording",
        total, kNever - 1));
  }
  m_.num_events_ = total;
  bool common_clock = m_.traces_.size() > 1;
  for (const auto& t : m_.traces_) {
    common_clock = common_clock && t.header.start_wall_ns != 0 && t.header.start_mono_ns != 0;
  }
  for (const auto& t : m_.traces_) {
    // Modulo 2^64: hostile headers must not overflow (Note [Malformed traces]).
    m_.clock_offset_.push_back(
        common_clock ? static_cast<int64_t>(static_cast<uint64_t>(t.header.start_wall_ns) -
                                            t.header.start_mono_ns)
                     : 0);
  }
  if (m_.traces_.size() <= 1) return;  // one trace: the identity order
  if (m_.traces_.size() >= (1u << 23)) throw std::invalid_argument("too many traces to merge");
  m_.order_.reserve(total);
  std::vector<size_t> pos(m_.traces_.size(), 0);
  auto time_of = [&](size_t s) {
    return static_cast<int64_t>(m_.traces_[s].events[pos[s]].t_ns +
                                static_cast<uint64_t>(m_.clock_offset_[s]));
  };
  // A min-heap of (time, trace): n log(traces), ties to the earlier trace.
  using Head = std::pair<int64_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (size_t s = 0; s < m_.traces_.size(); ++s) {
    if (!m_.traces_[s].events.empty()) heads.emplace(time_of(s), s);
  }
  while (!heads.empty()) {
    const size_t best = heads.top().second;
    heads.pop();
    m_.order_.push_back(static_cast<uint64_t>(best) << 40 | pos[best]++);
    if (pos[best] < m_.traces_[best].events.size()) heads.emplace(time_of(best), best);
  }
}

uint32_t ModelBuilder::str(uint32_t source, uint64_t id) {
  auto& map = m_.string_map_[source];
  if (id < map.size() && map[id] != kNoIndex) return map[id];
  const std::string& text = m_.traces_[source].str(id);
  auto [it, inserted] = string_ids_.emplace(text, static_cast<uint32_t>(m_.strings_.size()));
  if (inserted) m_.strings_.push_back(text);
  if (id < map.size()) map[id] = it->second;
  return it->second;
}

FunctionIndex ModelBuilder::new_function(uint32_t source, uint16_t rank, uint64_t id,
                                         EventIndex at, bool announced) {
  const auto f = static_cast<FunctionIndex>(m_.functions_.size());
  FunctionInfo info;
  info.id = id;
  info.source = source;
  info.rank = rank;
  info.announced = announced;
  info.created_at = at;
  m_.functions_.push_back(info);
  open_.emplace_back();
  latest_hint_.push_back(f);
  src_[source].functions.set(id, f);
  return f;
}

FunctionIndex ModelBuilder::function_lookup(uint32_t source, uint64_t id) const {
  const uint32_t* f = src_[source].functions.find(id);
  return f ? *f : kNoIndex;
}

FunctionIndex ModelBuilder::function_ref(uint32_t source, uint16_t rank, uint64_t id) {
  if (id == 0) return kNoIndex;
  const FunctionIndex f = function_lookup(source, id);
  return f != kNoIndex ? f : new_function(source, rank, id, 0, false);
}

OwnerIndex ModelBuilder::owner_ref(uint32_t source, uint16_t rank, uint32_t id) {
  if (id == 0) return kNoIndex;
  auto [it, inserted] =
      src_[source].owners.emplace(id, static_cast<OwnerIndex>(m_.owners_.size()));
  if (inserted) {
    OwnerInfo info;
    info.id = id;
    info.source = source;
    info.rank = rank;
    info.announced = false;
    m_.owners_.push_back(info);
    reducer_of_owner_.push_back(kNoIndex);
    owner_snapshot_.push_back(0);
  }
  return it->second;
}

bool ModelBuilder::survives_release(HookIndex h, FunctionIndex f) const {
  // Note [Leaf hooks live on the tensor]
  const HookKind kind = m_.hooks_[h].kind;
  return kind == HookKind::kPostAccumulate ||
         (kind == HookKind::kTensorPre && m_.functions_[f].is_leaf_accumulator());
}

void ModelBuilder::open_segment(HookIndex h, FunctionIndex f, EventIndex at, bool on_tensor) {
  const auto s = static_cast<uint32_t>(m_.segments_.size());
  m_.segments_.push_back(HookSegment{h, f, at, kNever, on_tensor});
  open_pos_.push_back(static_cast<uint32_t>(open_[f].size()));
  open_[f].push_back(s);
  open_of_hook_[h] = s;
}

void ModelBuilder::close_segment(HookIndex h, EventIndex at) {
  const uint32_t s = open_of_hook_[h];
  if (s == kNoIndex) return;
  m_.segments_[s].to = at;
  auto& list = open_[m_.segments_[s].function];  // O(1): swap with the last
  const uint32_t last = list.back();
  list[open_pos_[s]] = last;
  open_pos_[last] = open_pos_[s];
  list.pop_back();
  open_of_hook_[h] = kNoIndex;
}

void ModelBuilder::end_hook(HookIndex h, EventIndex at, RemoveCause cause, OwnerIndex by,
                            bool implicit) {
  close_segment(h, at);
  HookInfo& info = m_.hooks_[h];
  info.ended_at = at;
  info.cause = cause;
  info.removed_by = by;
  info.implicit_end = implicit;
}

// Puts a new hook on `f` from `at`; a Function already released keeps only a
// leaf's hooks (on the tensor), anything else is dropped at once.
void ModelBuilder::attach(HookIndex h, FunctionIndex f, EventIndex at) {
  f = latest(f);
  if (m_.functions_[f].released_at == kNever) {
    open_segment(h, f, at, false);
  } else if (survives_release(h, f)) {
    open_segment(h, f, at, true);
  } else {
    end_hook(h, at, RemoveCause::kNodeReleased, kNoIndex, true);
  }
}

HookIndex ModelBuilder::hook_ref(uint32_t source, uint16_t rank, const Event& e, EventIndex at) {
  if (const uint32_t* known = src_[source].hooks.find(e.key)) return *known;
  // A hook added before the recording started: it has been there as long as
  // its Function, or (for a Function we never saw created) since event 0.
  const FunctionIndex f = function_ref(source, rank, e.node);
  const OwnerIndex o = owner_ref(source, rank, e.owner);
  // It may predate the recording only if its Function and owner do.
  const bool fn_new = f != kNoIndex && m_.functions_[f].announced;
  const bool owner_new = o != kNoIndex && m_.owners_[o].announced && !owner_snapshot_[o];
  if ((fn_new || owner_new) && m_.traces_[source].dropped_events == 0) {
    malformed(MalformedKind::kUnknownHook, at,
              fn_new ? "no hook with this key was ever added to this Function"
                     : "no hook with this key was ever added by this owner",
              fn_new ? m_.functions_[f].created_at : m_.owners_[o].created_at);
  }
  const auto h = static_cast<HookIndex>(m_.hooks_.size());
  HookInfo info;
  info.key = e.key;
  info.source = source;
  info.rank = rank;
  info.kind = static_cast<HookKind>(e.sub < trace::kNumHookKinds ? e.sub : 0);
  info.owner = o;
  info.function = f;
  m_.hooks_.push_back(info);
  open_of_hook_.push_back(kNoIndex);
  src_[source].hooks.set(e.key, h);
  if (f == kNoIndex) return h;
  const FunctionInfo& fi = m_.functions_[latest(f)];
  const EventIndex from = fi.released_at == kNever ? fi.created_at : at;
  m_.hooks_[h].added_at = from;
  attach(h, f, from);
  return h;
}

void ModelBuilder::apply(EventIndex i, uint32_t source, uint16_t rank, const Event& e) {
  if (static_cast<uint8_t>(e.kind) >= static_cast<uint8_t>(EventKind::kHookRemoveFailed) &&
      e.kind != EventKind::kApplyBegin && e.kind != EventKind::kApplyEnd &&
      static_cast<size_t>(e.kind) < m_.kind_events_.size()) {
    m_.kind_events_[static_cast<size_t>(e.kind)].push_back(i);
  }
  if (event_arg_is_string(e.kind)) str(source, e.arg);
  switch (e.kind) {
    case EventKind::kNodeCreated: {
      const FunctionIndex previous = e.key ? function_lookup(source, e.key) : kNoIndex;
      FunctionIndex f = function_lookup(source, e.node);
      if (f != kNoIndex && m_.functions_[f].announced && m_.functions_[f].released_at == kNever) {
        malformed(MalformedKind::kDuplicateCreation, i, "a Function created again while alive",
                  m_.functions_[f].created_at);
      }
      if (f == kNoIndex || m_.functions_[f].announced ||
          m_.functions_[f].released_at != kNever) {
        f = new_function(source, rank, e.node, i, true);
      }
      FunctionInfo& fi = m_.functions_[f];
      fi.announced = true;
      fi.rank = rank;
      fi.flags = e.sub;
      fi.name = str(source, e.arg);
      if (previous == kNoIndex || previous == f) break;
      if (!link(previous, f, i)) break;
      // The leaf's hooks move to its new AccumulateGrad.
      const std::vector<uint32_t> open = open_[previous];
      for (uint32_t s : open) {
        const HookIndex h = m_.segments_[s].hook;
        if (!m_.segments_[s].on_tensor && !survives_release(h, previous)) continue;
        close_segment(h, i);
        open_segment(h, f, i, false);
      }
      break;
    }
    case EventKind::kNodeEdge: {
      const FunctionIndex from = function_ref(source, rank, e.node);
      const FunctionIndex to = function_ref(source, rank, e.arg);
      if (from != kNoIndex && to != kNoIndex) m_.edges_.push_back(EdgeInfo{from, to, e.actor, i});
      break;
    }
    case EventKind::kNodeLabel: {
      const FunctionIndex f = function_ref(source, rank, e.node);
      if (f != kNoIndex) m_.functions_[f].label = str(source, e.arg);
      break;
    }
    case EventKind::kNodeReleased: {
      const FunctionIndex f = function_ref(source, rank, e.node);
      if (f == kNoIndex || m_.functions_[f].released_at != kNever) break;
      m_.functions_[f].released_at = i;
      const std::vector<uint32_t> open = open_[f];
      for (uint32_t s : open) {
        const HookIndex h = m_.segments_[s].hook;
        if (m_.segments_[s].on_tensor) continue;
        close_segment(h, i);
        if (survives_release(h, f)) {
          open_segment(h, f, i, true);
        } else {
          end_hook(h, i, RemoveCause::kNodeReleased, kNoIndex, true);
        }
      }
      break;
    }
    case EventKind::kOwnerCreated: {
      if (e.owner == 0) break;
      auto& owners = src_[source].owners;
      auto it = owners.find(e.owner);
      const bool fresh = it == owners.end() || m_.owners_[it->second].destroyed_at != kNever;
      const bool snapshot = e.actor == trace::kOwnerFromSnapshot;
      if (!fresh && m_.owners_[it->second].announced && !snapshot &&
          !owner_snapshot_[it->second]) {
        malformed(MalformedKind::kDuplicateCreation, i, "an owner created again while alive",
                  m_.owners_[it->second].created_at);
      }
      if (fresh && it != owners.end()) owners.erase(it);  // an id used again
      const OwnerIndex o = owner_ref(source, rank, e.owner);
      OwnerInfo& info = m_.owners_[o];
      if (fresh) info.created_at = i;  // else announced again, or referenced first
      info.announced = true;
      owner_snapshot_[o] = snapshot;
      info.kind = e.sub <= static_cast<uint8_t>(OwnerKind::kCallSite) ? static_cast<OwnerKind>(e.sub)
                                                                      : OwnerKind::kUser;
      info.label = str(source, e.arg);
      break;
    }
    case EventKind::kOwnerDestroyed: {
      const OwnerIndex o = owner_ref(source, rank, e.owner);
      if (o != kNoIndex) m_.owners_[o].destroyed_at = std::min(m_.owners_[o].destroyed_at, i);
      break;
    }
    case EventKind::kHookAdded: {
      const FunctionIndex f = function_ref(source, rank, e.node);
      const uint32_t* known = src_[source].hooks.find(e.key);
      if (known && m_.hooks_[*known].ended_at == kNever) {
        malformed(MalformedKind::kDuplicateCreation, i, "a hook key added again while attached",
                  m_.hooks_[*known].added_at);
        end_hook(*known, i, RemoveCause::kByKey, kNoIndex, true);  // a key added twice
      }
      const auto h = static_cast<HookIndex>(m_.hooks_.size());
      HookInfo info;
      info.key = e.key;
      info.source = source;
      info.rank = rank;
      info.kind = static_cast<HookKind>(e.sub < trace::kNumHookKinds ? e.sub : 0);
      info.owner = owner_ref(source, rank, e.owner);
      info.input_nr = static_cast<uint32_t>(e.arg);
      info.function = f;
      info.added_at = i;
      m_.hooks_.push_back(info);
      open_of_hook_.push_back(kNoIndex);
      src_[source].hooks.set(e.key, h);
      if (f != kNoIndex) attach(h, f, i);
      break;
    }
    case EventKind::kHookFired:
      fire_events_.emplace_back(hook_ref(source, rank, e, i), i);
      break;
    case EventKind::kHookRemoved: {
      const HookIndex h = hook_ref(source, rank, e, i);
      if (m_.hooks_[h].ended_at != kNever) {
        if (!m_.hooks_[h].implicit_end) {
          malformed(MalformedKind::kRemovedTwice, i, "a hook removed again", m_.hooks_[h].ended_at);
        }
        break;
      }
      const auto cause = static_cast<RemoveCause>(std::min<uint64_t>(e.arg, 3));
      end_hook(h, i, cause, owner_ref(source, rank, e.actor), false);
      break;
    }
    case EventKind::kHookRemoveFailed:
      function_ref(source, rank, e.node);
      owner_ref(source, rank, e.actor);
      break;
    case EventKind::kApplyBegin:
      function_ref(source, rank, e.node);
      break;
    default:
      if (static_cast<uint8_t>(e.kind) >= static_cast<uint8_t>(EventKind::kReducerConstructed)) {
        apply_ddp(i, source, rank, e);
      }
      break;
  }
}

namespace {
void for_each_index(const IdMap& map, const auto& f) {
  map.for_each([&](uint64_t, uint32_t index) { f(index); });
}
template <typename Map>
void for_each_index(const Map& map, const auto& f) {
  for (const auto& entry : map) f(entry.second);
}
}  // namespace

void ModelBuilder::finish() {
  // Fires, grouped by hook (each hook's in timeline order).
  std::vector<uint32_t> count(m_.hooks_.size() + 1, 0);
  for (auto& [h, i] : fire_events_) ++count[h + 1];
  for (size_t h = 0; h < m_.hooks_.size(); ++h) {
    count[h + 1] += count[h];
    m_.hooks_[h].fires_begin = count[h];
    m_.hooks_[h].fires_end = count[h];
  }
  m_.fires_.resize(fire_events_.size());
  for (auto& [h, i] : fire_events_) m_.fires_[m_.hooks_[h].fires_end++] = i;
  m_.fire_at_.reserve(fire_events_.size());  // in timeline order already
  m_.fire_hook_.reserve(fire_events_.size());
  for (auto& [h, i] : fire_events_) {
    m_.fire_at_.push_back(i);
    m_.fire_hook_.push_back(h);
  }
  fire_events_ = {};

  auto by_from = [](const EdgeInfo& a, const EdgeInfo& b) { return a.from < b.from; };
  if (!std::is_sorted(m_.edges_.begin(), m_.edges_.end(), by_from)) {
    std::stable_sort(m_.edges_.begin(), m_.edges_.end(), by_from);
  }
  for (uint32_t k = 0; k < m_.edges_.size(); ++k) {
    FunctionInfo& f = m_.functions_[m_.edges_[k].from];
    if (f.edges_begin == f.edges_end) f.edges_begin = k;
    f.edges_end = k + 1;
  }
  find_edge_cycles();
  std::stable_sort(m_.malformations_.begin(), m_.malformations_.end(),
                   [](const Malformation& a, const Malformation& b) { return a.at < b.at; });
  for (HookIndex h = 0; h < m_.hooks_.size(); ++h) {
    if (m_.hooks_[h].function == kNoIndex) m_.detached_hooks_.push_back(h);
  }

  std::vector<uint32_t>& by_fn = m_.segments_by_function_;
  by_fn.resize(m_.segments_.size());
  for (uint32_t s = 0; s < by_fn.size(); ++s) by_fn[s] = s;
  const auto& segs = m_.segments_;
  std::sort(by_fn.begin(), by_fn.end(), [&](uint32_t a, uint32_t b) {
    const HookSegment& x = segs[a];
    const HookSegment& y = segs[b];
    if (x.function != y.function) return x.function < y.function;
    if (x.from != y.from) return x.from < y.from;
    return x.hook < y.hook;
  });
  auto& begin = m_.segments_by_function_begin_;
  begin.assign(m_.functions_.size() + 1, 0);
  for (uint32_t s : by_fn) ++begin[segs[s].function + 1];
  for (size_t f = 0; f < m_.functions_.size(); ++f) begin[f + 1] += begin[f];

  // Lookups hold indices only, sorted by the records' own (source, id).
  // Sorted with their keys alongside (contiguous), which the lookups then drop.
  auto lookup_of = [](auto& maps, auto member, const auto& records, auto key) {
    std::vector<std::pair<std::pair<uint32_t, uint64_t>, uint32_t>> keyed;
    size_t total = 0;
    for (uint32_t s = 0; s < maps.size(); ++s) total += (maps[s].*member).size();
    keyed.reserve(total);
    for (uint32_t s = 0; s < maps.size(); ++s) {
      for_each_index(maps[s].*member,
                     [&](uint32_t index) { keyed.push_back({key(records[index]), index}); });
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<uint32_t> out;
    out.reserve(keyed.size());
    for (const auto& k : keyed) out.push_back(k.second);
    return out;
  };
  auto fn_key = [](const FunctionInfo& f) { return std::make_pair(f.source, f.id); };
  auto hook_key = [](const HookInfo& h) { return std::make_pair(h.source, h.key); };
  auto owner_key = [](const OwnerInfo& o) { return std::make_pair(o.source, uint64_t{o.id}); };
  auto coll_key = [](const CollectiveInfo& c) {
    return std::make_pair(c.source << 16 | c.rank, c.id);
  };
  m_.function_lookup_ = lookup_of(src_, &SourceMaps::functions, m_.functions_, fn_key);
  m_.hook_lookup_ = lookup_of(src_, &SourceMaps::hooks, m_.hooks_, hook_key);
  m_.owner_lookup_ = lookup_of(src_, &SourceMaps::owners, m_.owners_, owner_key);
  m_.collective_lookup_ = lookup_of(src_, &SourceMaps::collectives, m_.collectives_, coll_key);
  m_.reducer_of_owner_ = std::move(reducer_of_owner_);
  trim(m_.reducer_of_owner_);
  trim(m_.functions_);
  trim(m_.edges_);
  trim(m_.hooks_);
  trim(m_.segments_);
  trim(m_.owners_);
  trim(m_.collectives_);
  trim(m_.malformations_);
  trim(m_.strings_);
  for (auto& k : m_.kind_events_) trim(k);
  for (ReducerInfo& r : m_.reducers_) {
    // Buckets named by kMarkReady were made room for then (Note [Model memory bound]).
    std::vector<uint32_t> members(r.bucket_sizes.size(), 0);
    for (const ParameterInfo& p : r.parameters) {
      if (p.bucket < members.size()) ++members[p.bucket];
    }
    for (size_t b = 0; b < members.size(); ++b) {
      r.bucket_sizes[b] = std::max(r.bucket_sizes[b], members[b]);
    }
    trim(r.events);
    trim(r.prepares);
  }
  src_.clear();
  open_ = {};
  open_pos_ = {};
  open_of_hook_ = {};
  latest_hint_ = {};
  threads_.clear();
  last_thread_ = nullptr;
  last_thread_key_ = UINT64_MAX;

  // The intervals are read from the tables themselves (IntervalIndex::SpanView).
  static_assert(offsetof(FunctionInfo, released_at) == offsetof(FunctionInfo, created_at) + 4);
  static_assert(offsetof(HookSegment, to) == offsetof(HookSegment, from) + 4);
  static_assert(sizeof(EventIndex) == 4);
  const IntervalIndex::SpanView families[] = {
      IntervalIndex::SpanView::of(m_.functions_, offsetof(FunctionInfo, created_at)),
      IntervalIndex::SpanView::of(m_.segments_, offsetof(HookSegment, from))};
  m_.block_starts_ = IntervalIndex::choose_blocks(m_.num_events_, families,
                                                  m_.options_.checkpoint_min_events,
                                                  m_.options_.checkpoint_bytes_per_event);
  m_.live_functions_.build(families[0], m_.block_starts_);
  m_.live_segments_.build(families[1], m_.block_starts_);
}

Model::Model(std::vector<trace::TraceData> traces, ModelOptions options)
    : traces_(std::move(traces)), options_(options) {
  if (traces_.empty()) {
    throw std::invalid_argument("no trace to analyse: give at least one trace (one per rank)");
  }
  if (options_.checkpoint_min_events == 0 || !(options_.checkpoint_bytes_per_event > 0)) {
    throw std::invalid_argument(
        "ModelOptions: checkpoint_min_events and checkpoint_bytes_per_event must be > 0");
  }
  ModelBuilder(*this).run();
}

Model::Model(trace::TraceData trace, ModelOptions options)
    : Model([&] {
        std::vector<trace::TraceData> v;
        v.push_back(std::move(trace));
        return v;
      }(), options) {}

}  // namespace hookscope::analysis
