#include "render/layout/timeline_index.h"

#include <map>
#include <set>
#include <numeric>
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

uint8_t TimelineTrack::classes(size_t first, size_t last) const {
  uint8_t bits = 0;
  // Walk up the levels: single events to the next block boundary, then whole
  // blocks of the coarsest level that fits, then back down.
  size_t i = first;
  while (i < last) {
    int level = -1;
    size_t span = 1;
    while (level + 1 < static_cast<int>(summary.size()) && i % (span * 64) == 0 && i + span * 64 <= last) {
      span *= 64;
      ++level;
    }
    if (level < 0) {
      bits |= static_cast<uint8_t>(1u << cls[i]);
      ++i;
    } else {
      bits |= summary[level][i / span];
      i += span;
    }
  }
  return bits;
}

void TimelineIndex::summarize(TimelineTrack& t) {
  t.summary.clear();
  size_t block = 64;
  std::vector<uint8_t> level((t.cls.size() + block - 1) / block, 0);
  for (size_t i = 0; i < t.cls.size(); ++i) level[i / block] |= static_cast<uint8_t>(1u << t.cls[i]);
  while (!level.empty()) {
    t.summary.push_back(level);
    if (level.size() < 64) break;
    std::vector<uint8_t> up((level.size() + 63) / 64, 0);
    for (size_t b = 0; b < level.size(); ++b) up[b / 64] |= level[b];
    level = std::move(up);
  }
}

TimelineTrack& TimelineIndex::add_track(std::string name, std::vector<int64_t> time,
                                        std::vector<uint32_t> event, std::vector<uint8_t> cls) {
  TimelineTrack& t = tracks_.emplace_back();
  t.name = std::move(name);
  t.time = std::move(time);
  t.event = std::move(event);
  t.cls = std::move(cls);
  summarize(t);
  if (!t.time.empty()) {
    const bool first = tracks_.size() == 1 || (begin_ == 0 && end_ == 0);
    begin_ = first ? t.time.front() : std::min(begin_, t.time.front());
    end_ = first ? t.time.back() : std::max(end_, t.time.back());
  }
  return t;
}

size_t TimelineIndex::num_events() const {
  size_t n = 0;
  for (const auto& t : tracks_) n += t.time.size();
  return n;
}

size_t TimelineIndex::memory_bytes() const {
  size_t n = tracks_.capacity() * sizeof(TimelineTrack);
  for (const auto& t : tracks_) {
    n += t.time.capacity() * 8 + t.event.capacity() * 4 + t.cls.capacity();
    for (const auto& level : t.summary) n += level.capacity();
    for (const auto& lane : t.lanes) n += lane.capacity() * sizeof(TimelineSpan);
  }
  return n;
}

TimelineIndex::TimelineIndex(const analysis::Model& model) {
  struct Building {
    TimelineTrack track;
    std::vector<size_t> backward, apply;  // open spans: indices into `open`
    std::vector<TimelineSpan> spans;      // finished and open ones
    std::vector<uint32_t> depth;          // per span: apply nesting depth
  };
  std::map<std::tuple<uint16_t, uint32_t, uint32_t>, Building> by_key;  // (rank, source, thread)
  // A collective's end may come from another thread: match by (source, rank, id).
  std::map<std::tuple<uint32_t, uint16_t, uint64_t>, std::pair<Building*, size_t>> collectives;
  const size_t n = model.num_events();
  for (size_t i = 0; i < n; ++i) {
    const trace::Event e = model.event(i);
    const uint32_t source = model.source(i);
    Building& b = by_key[{e.rank, source, e.thread}];
    const int64_t t = model.time_ns(i);
    b.track.time.push_back(t);
    b.track.event.push_back(static_cast<uint32_t>(i));
    b.track.cls.push_back(static_cast<uint8_t>(tick_class(e.kind)));
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
        break;
      case EventKind::kBackwardEnd:
        if (!b.backward.empty()) {
          close(b, b.backward.back());
          b.backward.pop_back();
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
      case EventKind::kCollectiveBegin:
        collectives[{source, e.rank, e.key}] = {&b, open(SpanKind::kCollective, 0)};
        b.spans.back().op = e.sub;
        break;
      case EventKind::kCollectiveEnd: {
        auto it = collectives.find({source, e.rank, e.key});
        if (it != collectives.end()) {
          close(*it->second.first, it->second.second);
          it->second.first->spans[it->second.second].failed = e.sub != 0;
          collectives.erase(it);
        }
        break;
      }
      default:
        break;
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
    // Per-thread order is time order; keep the index honest if a clock was not.
    if (!std::is_sorted(t.time.begin(), t.time.end())) {
      std::vector<size_t> order(t.time.size());
      std::iota(order.begin(), order.end(), 0);
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t c) { return t.time[a] < t.time[c]; });
      auto permute = [&](auto& v) {
        auto copy = v;
        for (size_t k = 0; k < order.size(); ++k) v[k] = copy[order[k]];
      };
      permute(t.time);
      permute(t.event);
      permute(t.cls);
    }
    const int64_t last = t.time.empty() ? 0 : t.time.back();
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
    summarize(t);
    if (!t.time.empty()) {
      begin_ = tracks_.empty() ? t.time.front() : std::min(begin_, t.time.front());
      end_ = tracks_.empty() ? t.time.back() : std::max(end_, t.time.back());
    }
    tracks_.push_back(std::move(t));
  }
}

}  // namespace hookscope::render
