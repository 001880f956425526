#pragma once
// What the timeline draws, indexed once per model: per track (rank, thread)
// the sorted event times with a multi-resolution summary of their classes,
// and the spans (backward, apply, collectives) in non-overlapping lanes.
// No ImGui. See Note [Timeline folding].

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model.h"

namespace hookscope::render {

// Note [Timeline folding]
// ~~~~~~~~~~~~~~~~~~~~~~~
// As in Tracy, events closer than a few pixels never draw one by one: from
// the first visible event, a binary search finds the first event at least
// `min_gap` later; everything before it folds into one mark, and the mark
// keeps growing while the next event is closer than `min_gap` to it. Every
// mark or lone tick therefore starts at least `min_gap` after the previous
// one starts, so a row draws at most width / min_gap + 1 marks, whatever the
// number of events: 10 million cost what a thousand do (plus a log). A
// mark's colour comes from the classes of the events it folds, read from a
// summary (the OR of class bits per block of 64 events, per 64 blocks, ...),
// so that one red failure inside a fold of a million events still shows.
// Spans fold the same way within their lane.

enum class TickClass : uint8_t {
  kNode = 0,        // Function created / edge / label / released
  kHook = 1,        // hook added / removed
  kFire = 2,        // hook fired
  kEngine = 3,      // backward, apply
  kDdp = 4,         // Reducer, prepare, mark ready, buckets
  kCollective = 5,
  kAlarm = 6,       // failure, recovery, marked twice, failed removal, no-op fire, ...
  kOther = 7,
};
constexpr int kNumTickClasses = 8;

TickClass tick_class(trace::EventKind kind);

enum class SpanKind : uint8_t { kBackward, kApply, kCollective };

struct TimelineSpan {
  int64_t begin = 0;  // ns
  int64_t end = 0;
  uint32_t begin_event = 0;
  uint32_t end_event = 0;  // UINT32_MAX: never ended
  SpanKind kind = SpanKind::kApply;
  uint8_t op = 0;          // trace::CollectiveOp of a collective
  bool failed = false;     // a collective that did not end ok
  bool open() const { return end_event == UINT32_MAX; }
};

struct TimelineTrack {
  std::string name;  // "rank 0", "rank 0 / thread 2"
  uint16_t rank = 0;
  uint32_t thread = 0;
  uint32_t source = 0;
  std::vector<int64_t> time;    // ns on the model's clock, ascending
  std::vector<uint32_t> event;  // event index of each
  std::vector<uint8_t> cls;     // TickClass of each
  // summary[k][b]: OR of (1 << class) over events [b * 64^(k+1), (b+1) * 64^(k+1)).
  std::vector<std::vector<uint8_t>> summary;
  // Lanes of spans; within a lane, spans are disjoint and sorted.
  std::vector<std::vector<TimelineSpan>> lanes;

  // OR of (1 << class) over events [first, last).
  uint8_t classes(size_t first, size_t last) const;
};

class TimelineIndex {
 public:
  TimelineIndex() = default;
  // Every event of the model, a track per (source, rank, thread).
  explicit TimelineIndex(const analysis::Model& model);

  // A track from raw arrays (benchmarks, tests): times ascending. Builds the
  // summary; spans may be added to the track's lanes afterwards.
  TimelineTrack& add_track(std::string name, std::vector<int64_t> time, std::vector<uint32_t> event,
                           std::vector<uint8_t> cls);

  const std::vector<TimelineTrack>& tracks() const { return tracks_; }
  int64_t begin_ns() const { return begin_; }
  int64_t end_ns() const { return end_; }
  size_t num_events() const;
  // Bytes the index holds (per-event arrays, summaries, spans).
  size_t memory_bytes() const;

 private:
  static void summarize(TimelineTrack& track);
  std::vector<TimelineTrack> tracks_;
  int64_t begin_ = 0, end_ = 0;
};

// A run of events shown as one mark: [first, last) of a track, from
// time[first] to time[last - 1].
struct TickMark {
  size_t first = 0;
  size_t last = 0;
};

// Note [Timeline folding]: calls fn(TickMark) for every mark of `track`
// between t0 and t1 (ns) when events closer than min_gap (ns) fold.
template <class Fn>
void for_each_mark(const TimelineTrack& track, int64_t t0, int64_t t1, int64_t min_gap, Fn&& fn);

// Spans of a lane the same way: fn(first, last, folded) for each run
// [first, last) of spans drawn as one.
template <class Fn>
void for_each_span(const std::vector<TimelineSpan>& lane, int64_t t0, int64_t t1, int64_t min_gap, Fn&& fn);

}  // namespace hookscope::render

#include "render/layout/timeline_index_inl.h"
