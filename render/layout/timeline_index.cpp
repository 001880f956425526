#include "render/layout/timeline_index.h"

#include "analysis/owner_status.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <stdexcept>
#include <set>
#include <numeric>
#include <optional>
#include <tuple>

namespace hookscope::render {

using trace::EventKind;

TickClass tick_class(EventKind kind) {
  switch (kind) {
    case EventKind::kNodeCreated:
    case EventKind::kNodeEdge:
    case EventKind::kNodeLabel:
    case EventKind::kNodeReleased:
    case EventKind::kOwnerCreated:
    case EventKind::kOwnerDestroyed:
      return TickClass::kNode;
    case EventKind::kHookAdded:
    case EventKind::kHookRemoved:
      return TickClass::kHook;
    case EventKind::kHookFired:
      return TickClass::kFire;
    case EventKind::kBackwardBegin:
    case EventKind::kBackwardEnd:
    case EventKind::kApplyBegin:
    case EventKind::kApplyEnd:
    case EventKind::kTrainStep:
      return TickClass::kEngine;
    case EventKind::kReducerConstructed:
    case EventKind::kReducerDestroyed:
    case EventKind::kPrepareForBackward:
    case EventKind::kMarkReady:
    case EventKind::kBucketReady:
    case EventKind::kBucketsFinalized:
    case EventKind::kProcessGroupCreated:
    case EventKind::kProcessGroupDestroyed:
      return TickClass::kDdp;
    case EventKind::kCollectiveBegin:
    case EventKind::kCollectiveEnd:
      return TickClass::kCollective;
    case EventKind::kHookRemoveFailed:
    case EventKind::kAutogradHookNoop:
    case EventKind::kMarkedTwice:
    case EventKind::kUnusedParameter:
    case EventKind::kFailure:
    case EventKind::kRecoveryStep:
      return TickClass::kAlarm;
    default:
      return TickClass::kOther;
  }
}

// Note [Lingering owners]: a no-op fire is an alarm only when its Reducer
// lingers or is gone; inside no_sync (or merely not prepared) it is DDP's
// bookkeeping, neutral.
TickClass tick_class(const analysis::Model& model, size_t index, EventKind kind) {
  if (kind != EventKind::kAutogradHookNoop) return tick_class(kind);
  return analysis::is_alarm(analysis::noop_cause(model, index)) ? TickClass::kAlarm : TickClass::kDdp;
}

// ---- TimelineTrack ----

uint8_t TimelineTrack::cls(size_t k) const {
  return model_ ? static_cast<uint8_t>(tick_class(*model_, events_[k], model_->event(events_[k]).kind)) : own_cls_[k];
}

template <class Before>
size_t TimelineTrack::search(size_t from, size_t to, Before before) const {
  // The next event first: a lone tick's search (Note [Timeline folding])
  // ends here, after one model call rather than log2(kTimeSample).
  if (from >= to || !before(time(from))) return from;
  ++from;
  if (!model_) {  // own times (add_track): a plain binary search, no samples
    const auto b = own_time_.begin();
    const auto first = b + static_cast<std::ptrdiff_t>(from), last = b + static_cast<std::ptrdiff_t>(to);
    return static_cast<size_t>(std::partition_point(first, last, before) - b);
  }
  // The samples first: sample s is position s * kTimeSample.
  const size_t a = (from + kTimeSample - 1) / kTimeSample;
  const size_t b = std::max(a, (to + kTimeSample - 1) / kTimeSample);
  const auto s = static_cast<size_t>(
      std::partition_point(sample_.begin() + static_cast<std::ptrdiff_t>(a), sample_.begin() + static_cast<std::ptrdiff_t>(b), before) -
      sample_.begin());
  size_t lo = from, hi = to;
  if (s < b) hi = s * kTimeSample;              // not before: the answer is at or before it
  if (s > a) lo = (s - 1) * kTimeSample + 1;   // before: the answer is after it
  // Then at most kTimeSample events, through the model.
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (before(time(mid))) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

size_t TimelineTrack::lower_bound(size_t from, size_t to, int64_t t) const {
  return search(from, to, [t](int64_t v) { return v < t; });
}

size_t TimelineTrack::upper_bound(size_t from, size_t to, int64_t t) const {
  return search(from, to, [t](int64_t v) { return v <= t; });
}

// Summary blocks are 8^(level+1) events.
constexpr size_t kSummaryFan = 8;

uint8_t TimelineTrack::classes(size_t first, size_t last) const {
  uint8_t bits = 0;
  // Walk up the levels: single events to the next block boundary, then whole
  // blocks of the coarsest level that fits, then back down.
  size_t i = first;
  while (i < last) {
    int level = -1;
    size_t span = 1;
    while (level + 1 < static_cast<int>(summary.size()) && i % (span * kSummaryFan) == 0 &&
           i + span * kSummaryFan <= last) {
      span *= kSummaryFan;
      ++level;
    }
    if (level < 0) {
      bits |= static_cast<uint8_t>(1u << cls(i));
      ++i;
    } else {
      bits |= summary[level][i / span];
      i += span;
    }
  }
  return bits;
}

void TimelineTrack::summarize_from_classes() {
  summary.clear();
  const size_t n = size();
  std::vector<uint8_t> level((n + kSummaryFan - 1) / kSummaryFan, 0);
  if (model_) {
    for (size_t i = 0; i < n; ++i) level[i / kSummaryFan] |= static_cast<uint8_t>(1u << cls(i));
  } else {  // own classes: no per-event branch on model_
    const uint8_t* c = own_cls_.data();
    for (size_t i = 0; i < n; ++i) level[i / kSummaryFan] |= static_cast<uint8_t>(1u << c[i]);
  }
  summary.push_back(std::move(level));
  summarize_levels();
}

void TimelineTrack::summarize_levels() {
  summary.resize(1);
  if (summary[0].empty()) summary.clear();
  while (!summary.empty() && summary.back().size() >= kSummaryFan) {
    const std::vector<uint8_t>& below = summary.back();
    std::vector<uint8_t> up((below.size() + kSummaryFan - 1) / kSummaryFan, 0);
    for (size_t b = 0; b < below.size(); ++b) up[b / kSummaryFan] |= below[b];
    summary.push_back(std::move(up));
  }
  for (auto& level : summary) level.shrink_to_fit();
}

size_t TimelineTrack::memory_bytes() const {
  size_t n = sizeof(TimelineTrack) + name.capacity() + events_.memory_bytes() + sample_.capacity() * 8 +
             own_time_.capacity() * 8 + own_cls_.capacity();
  for (const auto& level : summary) n += level.capacity();
  for (const auto& lane : lanes) n += lane.capacity() * sizeof(TimelineSpan);
  return n;
}

// ---- TimelineIndex ----

namespace {

// Note [Idle gaps]: what a stretch with no events was, from what was open
// when it began and what ended it.
std::string idle_what(const trace::CollectiveOp* open_collective, int open_backward, bool any_backward,
                      EventKind next) {
  if (open_collective) return "waiting in " + std::string(trace::to_string(*open_collective));
  if (open_backward > 0) return "waiting in backward";
  if (!any_backward) return "start-up";
  if (next == EventKind::kFailure) return "idle before the failure";
  return "idle";
}

// Note [Start-up band]: events that build the graph a backward runs (the
// forward) or prepare for it.
bool builds_graph(EventKind kind) {
  switch (kind) {
    case EventKind::kNodeCreated:
    case EventKind::kNodeEdge:
    case EventKind::kNodeLabel:
    case EventKind::kSavedTensorPacked:
    case EventKind::kHookAdded:  // module hooks are registered per forward
    case EventKind::kPrepareForBackward:
      return true;
    default:
      return false;
  }
}

// Note [Start-up band]: the first step's forward begins where a walk back
// from the first backward_begin over graph-building events stops: at another
// kind, an idle gap, or a pause longer than the forward walked so far (a
// transformer's rank 0 prepared for backward, then waited 421 ms for rank 1
// before a 0.24 ms forward); before it, the start-up. `gaps` are in time order.
void add_startup_band(const analysis::Model& model, double first_time, double last_time, std::vector<IdleGap>& gaps) {
  const auto& backwards = model.events_of_kind(EventKind::kBackwardBegin);
  if (backwards.empty()) return;
  size_t work = backwards.front();
  const int64_t t_backward = model.time_ns(work);
  int64_t floor = INT64_MIN;  // the end of the last idle gap before it
  for (const IdleGap& g : gaps) {
    if (g.end <= t_backward) floor = std::max(floor, g.end);
  }
  constexpr int64_t kPauseFloorNs = 1'000'000;  // pauses shorter than this never end the walk
  while (work > 0 && builds_graph(model.event(work - 1).kind) && model.time_ns(work - 1) >= floor) {
    const double pause = static_cast<double>(model.time_ns(work)) - static_cast<double>(model.time_ns(work - 1));
    const double walked = static_cast<double>(t_backward) - static_cast<double>(model.time_ns(work));
    if (pause > std::max(walked, static_cast<double>(kPauseFloorNs))) break;
    --work;
  }
  const int64_t t_work = model.time_ns(work);
  if (work == 0 || static_cast<double>(t_work) <= first_time) return;
  double idle = 0.0, idle_before = 0.0;
  size_t inside = 0;  // gaps before the work: a prefix
  for (const IdleGap& g : gaps) {
    const double len = static_cast<double>(g.end) - static_cast<double>(g.begin);
    idle += len;
    if (g.end <= t_work) {
      idle_before += len;
      ++inside;
    }
  }
  const double active = last_time - first_time - idle;
  const double startup = static_cast<double>(t_work) - first_time - idle_before;
  if (inside == 0 && startup < kStartupShare * active) return;
  gaps.erase(gaps.begin(), gaps.begin() + static_cast<std::ptrdiff_t>(inside));
  gaps.insert(gaps.begin(), IdleGap{model.time_ns(0), t_work, 0, static_cast<uint32_t>(work), "start-up",
                                    static_cast<uint32_t>(work)});
}

// Note [Quiet stretches]: after the start-up band (whose walk looks at the
// idle gaps only), the quiet stretches long beside the time with activity.
void add_quiet_gaps(const std::vector<IdleGap>& quiet, double first_time, double last_time, std::vector<IdleGap>& gaps) {
  if (quiet.empty()) return;
  double idle = 0.0;
  for (const IdleGap& g : gaps) idle += static_cast<double>(g.end) - static_cast<double>(g.begin);
  const double active = last_time - first_time - idle;
  const int64_t from = !gaps.empty() && gaps.front().events > 0 ? gaps.front().end : INT64_MIN;  // the start-up band's end
  const size_t had = gaps.size();
  for (const IdleGap& q : quiet) {
    if (q.begin >= from && static_cast<double>(q.end) - static_cast<double>(q.begin) >= kQuietShare * active) gaps.push_back(q);
  }
  if (gaps.size() == had) return;
  std::stable_sort(gaps.begin(), gaps.end(), [](const IdleGap& a, const IdleGap& b) { return a.begin < b.begin; });
}

}  // namespace

TimelineTrack& TimelineIndex::add_track(std::string name, std::vector<int64_t> time,
                                        std::vector<uint32_t> event, std::vector<uint8_t> cls) {
  if (event.size() != time.size() || cls.size() != time.size()) {
    throw std::invalid_argument("TimelineIndex::add_track: time, event and cls differ in length");
  }
  TimelineTrack& t = tracks_.emplace_back();
  t.name = std::move(name);
  t.events_.append(event.data(), event.size());
  t.events_.finish();
  t.own_time_ = std::move(time);
  t.own_cls_ = std::move(cls);
  t.summarize_from_classes();
  if (t.size() > 0) {
    const bool first = tracks_.size() == 1 || (begin_ == 0 && end_ == 0);
    begin_ = first ? t.time(0) : std::min(begin_, t.time(0));
    end_ = first ? t.time(t.size() - 1) : std::max(end_, t.time(t.size() - 1));
  }
  return t;
}

size_t TimelineIndex::num_events() const {
  size_t n = 0;
  for (const auto& t : tracks_) n += t.size();
  return n;
}

size_t TimelineIndex::memory_bytes() const {
  size_t n = tracks_.capacity() * sizeof(TimelineTrack);
  for (const auto& t : tracks_) n += t.memory_bytes() - sizeof(TimelineTrack);
  return n;
}

TimelineIndex::TimelineIndex(const analysis::Model& model) {
  struct Building {
    TimelineTrack track;
    std::vector<size_t> backward, apply;  // open spans: indices into `open`
    std::vector<TimelineSpan> spans;      // finished and open ones
    std::vector<uint32_t> depth;          // per span: apply nesting depth
    int64_t last_time = INT64_MIN;
    bool sorted = true;
    uint8_t bits = 0;  // classes of the summary block being filled
  };
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, Building> by_key;  // (rank, source, thread)
  // A collective's end may come from another thread: match by (source, rank, id).
  std::map<std::tuple<uint32_t, uint16_t, uint64_t>, std::pair<Building*, size_t>> collectives;
  const size_t n = model.num_events();
  // Consecutive events mostly share a track: look the map up on a change only.
  std::tuple<uint16_t, uint32_t, uint32_t> last_key{};
  Building* last = nullptr;
  // Decoded a block at a time (Model::events): event(i) per event costs a
  // packed lookup each (Note [Packed events]). Only the fields every event
  // needs; a collective's key and op are looked up on their own (few).
  constexpr size_t kChunk = 4096;
  std::vector<trace::Event> chunk(std::min(n, kChunk));
  std::vector<int64_t> chunk_times(chunk.size());
  // Note [Idle gaps]: the latest time so far (merged order is time order
  // across sources; the max keeps a skewed clock from inventing gaps).
  int64_t latest = INT64_MIN, first_time = 0;
  uint32_t latest_event = 0;
  int open_backward = 0;
  bool any_backward = false;
  std::vector<IdleGap> quiet;  // Note [Quiet stretches]: candidates
  for (size_t begin = 0; begin < n; begin += kChunk) {
    const size_t end = std::min(n, begin + kChunk);
    using trace::PackedEvents;
    model.events(begin, end, chunk.data(), chunk_times.data(),
                 PackedEvents::kTime | PackedEvents::kKind | PackedEvents::kRank | PackedEvents::kThread);
    for (size_t i = begin; i < end; ++i) {
      const trace::Event& e = chunk[i - begin];
      const uint32_t source = model.source(i);
      const std::tuple<uint16_t, uint32_t, uint32_t> key{e.rank, source, e.thread};
      if (!last || key != last_key) {
        last = &by_key[key];
        last_key = key;
      }
      Building& b = *last;
      const int64_t t = chunk_times[i - begin];
      if (i == 0) first_time = t;
      // Unsigned: a hostile trace's times may be int64's ends, whose signed
      // difference overflows (found by fuzz_gui_frame).
      if (i > 0 && t > latest &&
          static_cast<uint64_t>(t) - static_cast<uint64_t>(latest) >= static_cast<uint64_t>(kQuietMinNs)) {
        std::optional<trace::CollectiveOp> op;
        if (!collectives.empty()) {
          const auto& [building, span] = collectives.begin()->second;
          op = static_cast<trace::CollectiveOp>(building->spans[span].op);
        }
        // Note [Quiet stretches]: the shorter ones wait for the active span's length.
        const bool idle = static_cast<uint64_t>(t) - static_cast<uint64_t>(latest) >= static_cast<uint64_t>(kIdleGapMinNs);
        (idle ? gaps_ : quiet).push_back({latest, t, latest_event, static_cast<uint32_t>(i),
                                          idle_what(op ? &*op : nullptr, open_backward, any_backward, e.kind)});
      }
      if (t >= latest) {
        latest = t;
        latest_event = static_cast<uint32_t>(i);
      }
      TimelineTrack& track = b.track;
      const size_t k = track.events_.size();
      if (k % TimelineTrack::kTimeSample == 0) track.sample_.push_back(t);
      track.events_.push_back(static_cast<uint32_t>(i));
      b.sorted &= t >= b.last_time;
      b.last_time = t;
      b.bits |= static_cast<uint8_t>(1u << static_cast<int>(tick_class(model, i, e.kind)));
      if ((k + 1) % kSummaryFan == 0) {
        if (track.summary.empty()) track.summary.emplace_back();
        track.summary[0].push_back(b.bits);
        b.bits = 0;
      }
      auto open = [&](SpanKind kind, uint32_t depth) {
        b.spans.push_back({t, t, static_cast<uint32_t>(i), UINT32_MAX, kind, false});
        b.depth.push_back(depth);
        return b.spans.size() - 1;
      };
      auto close = [&](Building& owner, size_t span) {
        owner.spans[span].end = std::max(t, owner.spans[span].begin);
        owner.spans[span].end_event = static_cast<uint32_t>(i);
      };
      switch (e.kind) {
        case EventKind::kBackwardBegin:
          b.backward.push_back(open(SpanKind::kBackward, 0));
          ++open_backward;
          any_backward = true;
          break;
        case EventKind::kBackwardEnd:
          if (!b.backward.empty()) {
            close(b, b.backward.back());
            b.backward.pop_back();
            --open_backward;
          }
          break;
        case EventKind::kApplyBegin:
          b.apply.push_back(open(SpanKind::kApply, static_cast<uint32_t>(b.apply.size())));
          break;
        case EventKind::kApplyEnd:
          if (!b.apply.empty()) {
            close(b, b.apply.back());
            b.apply.pop_back();
          }
          break;
        case EventKind::kCollectiveBegin: {
          const auto begin = model.event(i).as<trace::ev::CollectiveBegin>();
          collectives[{source, e.rank, begin.collective_id}] = {&b, open(SpanKind::kCollective, 0)};
          b.spans.back().op = static_cast<uint8_t>(begin.op);
          break;
        }
        case EventKind::kCollectiveEnd: {
          const auto end = model.event(i).as<trace::ev::CollectiveEnd>();
          auto it = collectives.find({source, e.rank, end.collective_id});
          if (it != collectives.end()) {
            close(*it->second.first, it->second.second);
            it->second.first->spans[it->second.second].failed = end.status != trace::CollectiveStatus::kOk;
            collectives.erase(it);
          }
          break;
        }
        default:
          break;
      }
    }
  }
  // Names: "rank 1"; "rank 1 · pid 4242" when a rank's events come from
  // several processes (a replacement rank after a kill); "/ thread t" when
  // one process has several threads of that rank.
  std::map<uint16_t, std::set<uint32_t>> sources_of_rank;
  std::map<std::pair<uint16_t, uint32_t>, int> threads_of;
  for (auto& [key, b] : by_key) {
    sources_of_rank[std::get<0>(key)].insert(std::get<1>(key));
    ++threads_of[{std::get<0>(key), std::get<1>(key)}];
  }
  for (auto& [key, b] : by_key) {
    auto [rank, source, thread] = key;
    TimelineTrack& t = b.track;
    t.rank = rank;
    t.source = source;
    t.thread = thread;
    t.name = "rank " + std::to_string(rank);
    if (sources_of_rank[rank].size() > 1) {
      const int64_t pid = model.trace(source).header.pid;
      t.name += pid > 0 ? " \u00b7 pid " + std::to_string(pid) : " \u00b7 trace " + std::to_string(source);
    }
    if (threads_of[{rank, source}] > 1) t.name += " / thread " + std::to_string(thread);
    t.model_ = &model;
    t.events_.finish();
    if (t.size() % kSummaryFan != 0) {
      if (t.summary.empty()) t.summary.emplace_back();
      t.summary[0].push_back(b.bits);
    }
    // Per-thread order is time order; keep the index honest if a clock was not.
    if (!b.sorted) {
      std::vector<std::pair<int64_t, uint32_t>> order(t.size());
      for (size_t k = 0; k < t.size(); ++k) order[k] = {t.time(k), t.event(k)};
      std::stable_sort(order.begin(), order.end(),
                       [](const auto& x, const auto& y) { return x.first < y.first; });
      t.events_ = EventColumn();
      t.sample_.clear();
      for (size_t k = 0; k < order.size(); ++k) {
        if (k % TimelineTrack::kTimeSample == 0) t.sample_.push_back(order[k].first);
        t.events_.push_back(order[k].second);
      }
      t.events_.finish();
      t.summarize_from_classes();
    } else {
      t.summarize_levels();
    }
    t.sample_.shrink_to_fit();
    const int64_t last = t.size() == 0 ? 0 : t.time(t.size() - 1);
    // Lanes: backward, then one per apply depth, then collectives; spans of
    // one kind are packed greedily into lanes where they do not overlap
    // (collectives do when buckets reduce asynchronously).
    std::vector<std::vector<TimelineSpan>> lanes[3];
    for (size_t s = 0; s < b.spans.size(); ++s) {  // in order of begin
      TimelineSpan span = b.spans[s];
      if (span.end_event == UINT32_MAX) span.end = std::max(span.begin, last);
      auto& kind_lanes = lanes[static_cast<int>(span.kind)];
      size_t lane = span.kind == SpanKind::kApply ? b.depth[s] : 0;
      while (lane < kind_lanes.size() && !kind_lanes[lane].empty() && kind_lanes[lane].back().end > span.begin) {
        ++lane;
      }
      if (lane >= kind_lanes.size()) kind_lanes.resize(lane + 1);
      kind_lanes[lane].push_back(span);
    }
    for (auto& kind_lanes : lanes) {
      for (auto& lane : kind_lanes) {
        if (!lane.empty()) t.lanes.push_back(std::move(lane));
      }
    }
    if (t.size() > 0) {
      begin_ = tracks_.empty() ? t.time(0) : std::min(begin_, t.time(0));
      end_ = tracks_.empty() ? last : std::max(end_, last);
    }
    tracks_.push_back(std::move(t));
  }
  // Note [Idle gaps]: only stretches that matter at the trace's scale.
  const double span = n == 0 ? 0.0 : static_cast<double>(latest) - static_cast<double>(first_time);
  auto short_gap = [&](const IdleGap& g) { return static_cast<double>(g.end) - static_cast<double>(g.begin) < kIdleGapShare * span; };
  std::copy_if(gaps_.begin(), gaps_.end(), std::back_inserter(quiet), short_gap);  // Note [Quiet stretches] may take it
  std::erase_if(gaps_, short_gap);
  if (n > 0) add_startup_band(model, static_cast<double>(first_time), static_cast<double>(latest), gaps_);
  if (n > 0) add_quiet_gaps(quiet, static_cast<double>(first_time), static_cast<double>(latest), gaps_);
}

}  // namespace hookscope::render
