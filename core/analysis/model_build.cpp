// The load pass: one walk over the merged timeline that fills the model's
// tables (Note [Analysis ids]) and turns lifetimes into the intervals that
// replay works from (Note [Replay by intervals]).

#include <algorithm>
#include <cstddef>
#include <functional>
#include <future>
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
  size_t strings = 2;
  for (const auto& t : m_.traces_) strings += t.strings.size();
  m_.strings_.reserve(strings);
  m_.strings_.assign(1, std::string());
  string_ids_.insert(StringIds::hash(""), 0);
  for (const auto& t : m_.traces_) m_.string_map_.emplace_back(t.strings.size(), kNoIndex);
  m_.strings_.push_back("?");
  string_ids_.insert(StringIds::hash("?"), 1);
  m_.unknown_string_ = 1;
  slots_left_ = 4 * static_cast<uint64_t>(m_.num_events_) + 4096;
  pack_arrays();
  reserve_tables();
  walk();
  finish();
}

void ModelBuilder::merge() {
  size_t total = 0;
  for (const auto& t : m_.traces_) total += t.num_events();
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
    const auto& t = m_.traces_[s];
    const uint64_t t_ns = t.events.empty() ? t.packed.t_ns(pos[s]) : t.events[pos[s]].t_ns;
    return static_cast<int64_t>(t_ns +
                                static_cast<uint64_t>(m_.clock_offset_[s]));
  };
  // A min-heap of (time, trace): n log(traces), ties to the earlier trace.
  using Head = std::pair<int64_t, size_t>;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads;
  for (size_t s = 0; s < m_.traces_.size(); ++s) {
    if (m_.traces_[s].num_events() != 0) heads.emplace(time_of(s), s);
  }
  while (!heads.empty()) {
    const size_t best = heads.top().second;
    heads.pop();
    m_.order_.push_back(static_cast<uint64_t>(best) << 40 | pos[best]++);
    if (pos[best] < m_.traces_[best].num_events()) heads.emplace(time_of(best), best);
  }
}

uint32_t ModelBuilder::str(uint32_t source, uint64_t id) {
  auto& map = m_.string_map_[source];
  if (id < map.size() && map[id] != kNoIndex) return map[id];
  const std::string& text = m_.traces_[source].str(id);
  const uint64_t hash = StringIds::hash(text);
  uint32_t model_id = string_ids_.find(text, hash);
  if (model_id == kNoIndex) {
    model_id = static_cast<uint32_t>(m_.strings_.size());
    m_.strings_.push_back(text);
    string_ids_.insert(hash, model_id);
  }
  if (id < map.size()) map[id] = model_id;
  return model_id;
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
  segments_ended_.push_back(s);
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

// Note [Finishing on two threads]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// After the walk, the find_*() tables and the interval index (they read
// records' ids and intervals) are built on a second thread while this one
// groups fires, edges and segments (they write other members of the same
// records: fires_begin/end, edges_begin/end) and checks for edge cycles. The
// tables are trimmed first: nothing moves while both run. Small models stay
// on one thread (a thread costs more than it saves).
void ModelBuilder::finish() {
  trim_tables();
  const bool two = m_.options_.threads >= 2 && m_.num_events_ >= kTwoThreadEvents;
  std::future<void> second;
  if (two) second = std::async(std::launch::async, [this] { build_lookups_and_index(); });
  group_fires_edges_segments();
  if (two) {
    second.get();
  } else {
    build_lookups_and_index();
  }
  find_lingering_owners();
  src_.clear();
  open_ = {};
  open_pos_ = {};
  open_of_hook_ = {};
  latest_hint_ = {};
  threads_.clear();
  last_thread_ = nullptr;
  last_thread_key_ = UINT64_MAX;
}

void ModelBuilder::trim_tables() {
  m_.reducer_of_owner_ = std::move(reducer_of_owner_);
  trim(m_.reducer_of_owner_);
  trim(m_.functions_);
  trim(m_.edges_);
  trim(m_.hooks_);
  trim(m_.segments_);
  trim(m_.owners_);
  trim(m_.collectives_);
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
    trim(r.prepare_backwards);
  }
}

void ModelBuilder::group_fires_edges_segments() {
  // Fires, grouped by hook (each hook's in timeline order), and the rank
  // counts that find a fire's place among all fires (Note [Fires by event]).
  const std::vector<HookIndex>& fire_hook = m_.fire_hook_;
  std::vector<uint32_t> count(m_.hooks_.size() + 1, 0);
  for (HookIndex h : fire_hook) ++count[h + 1];
  for (size_t h = 0; h < m_.hooks_.size(); ++h) {
    count[h + 1] += count[h];
    m_.hooks_[h].fires_begin = count[h];
    m_.hooks_[h].fires_end = count[h];
  }
  count = {};
  m_.fires_.resize(fire_hook.size());
  const auto& bits = m_.fire_bits_;
  m_.fire_rank_.resize(bits.size() / Model::kFireRankWords + 1);
  uint32_t k = 0;  // fires before the current word
  for (size_t w = 0; w < bits.size(); ++w) {
    if (w % Model::kFireRankWords == 0) m_.fire_rank_[w / Model::kFireRankWords] = k;
    for (uint64_t word = bits[w]; word != 0; word &= word - 1) {
      const auto i = static_cast<EventIndex>(w * 64 + static_cast<unsigned>(__builtin_ctzll(word)));
      m_.fires_[m_.hooks_[fire_hook[k++]].fires_end++] = i;
    }
  }

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
  trim(m_.malformations_);
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

}

void ModelBuilder::build_lookups_and_index() {
  // Lookups hold indices only, sorted by the records' own (source, id): the
  // latest record of each id, which is every record but those superseded.
  // Ids are mostly counters, so the records are mostly in order already.
  auto lookup_of = [](const auto& records, std::vector<uint32_t>& superseded, auto key) {
    std::sort(superseded.begin(), superseded.end());
    std::vector<uint32_t> out;
    out.reserve(records.size() - superseded.size());
    size_t k = 0;
    for (uint32_t r = 0; r < records.size(); ++r) {
      if (k < superseded.size() && superseded[k] == r) {
        ++k;
      } else {
        out.push_back(r);
      }
    }
    superseded = {};
    auto by_key = [&](uint32_t a, uint32_t b) { return key(records[a]) < key(records[b]); };
    if (std::is_sorted(out.begin(), out.end(), by_key)) return out;
    // Sorted with their keys alongside (contiguous), which the lookup then drops.
    std::vector<std::pair<std::pair<uint32_t, uint64_t>, uint32_t>> keyed;
    keyed.reserve(out.size());
    for (uint32_t r : out) keyed.push_back({key(records[r]), r});
    std::sort(keyed.begin(), keyed.end());
    for (size_t i = 0; i < keyed.size(); ++i) out[i] = keyed[i].second;
    return out;
  };
  auto fn_key = [](const FunctionInfo& f) { return std::make_pair(f.source, f.id); };
  auto hook_key = [](const HookInfo& h) { return std::make_pair(h.source, h.key); };
  auto owner_key = [](const OwnerInfo& o) { return std::make_pair(o.source, uint64_t{o.id}); };
  auto coll_key = [](const CollectiveInfo& c) {
    return std::make_pair(c.source << 16 | c.rank, c.id);
  };
  std::vector<uint32_t> none;
  m_.function_lookup_ = lookup_of(m_.functions_, superseded_functions_, fn_key);
  m_.hook_lookup_ = lookup_of(m_.hooks_, superseded_hooks_, hook_key);
  m_.owner_lookup_ = lookup_of(m_.owners_, superseded_owners_, owner_key);
  m_.collective_lookup_ = lookup_of(m_.collectives_, none, coll_key);

  // The intervals are read from the tables themselves (IntervalIndex::SpanView).
  static_assert(offsetof(FunctionInfo, released_at) == offsetof(FunctionInfo, created_at) + 4);
  static_assert(offsetof(HookSegment, to) == offsetof(HookSegment, from) + 4);
  static_assert(sizeof(EventIndex) == 4);
  // Both families are in order of their start already but for the records
  // made on first reference (backdated), and the walk saw them end in order.
  auto in_order = [](size_t n) {
    std::vector<uint32_t> ids(n);
    for (uint32_t id = 0; id < n; ++id) ids[id] = id;
    return ids;
  };
  IntervalIndex::Family families[] = {
      IntervalIndex::Family::ordered(
          IntervalIndex::SpanView::of(m_.functions_, offsetof(FunctionInfo, created_at)),
          in_order(m_.functions_.size()), std::move(functions_ended_)),
      IntervalIndex::Family::ordered(
          IntervalIndex::SpanView::of(m_.segments_, offsetof(HookSegment, from)),
          in_order(m_.segments_.size()), std::move(segments_ended_))};
  m_.block_starts_ = IntervalIndex::choose_blocks(m_.num_events_, families,
                                                  m_.options_.checkpoint_min_events,
                                                  m_.options_.checkpoint_bytes_per_event);
  m_.live_functions_.build(std::move(families[0]), m_.block_starts_);
  m_.live_segments_.build(std::move(families[1]), m_.block_starts_);
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
