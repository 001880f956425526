#pragma once
// What the timeline draws, indexed once per model: per track (rank, thread)
// the sorted event times with a multi-resolution summary of their classes,
// and the spans (backward, apply, collectives) in non-overlapping lanes.
// No ImGui. See Note [Timeline folding].

#include <atomic>
#include <cstdint>
#include <cstring>
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
// summary (the OR of class bits per block of 8 events, per 8 blocks, ...),
// so that one red failure inside a fold of a million events still shows.
// Spans fold the same way within their lane.

enum class TickClass : uint8_t {
  kNode = 0,        // Function created / edge / label / released
  kHook = 1,        // hook added / removed
  kFire = 2,        // hook fired
  kEngine = 3,      // backward, apply
  kDdp = 4,         // Reducer, prepare, mark ready, buckets
  kCollective = 5,
  kAlarm = 6,       // failure, recovery, marked twice, failed removal, a lingering or dead Reducer's no-op fire, ...
  kOther = 7,
};
constexpr int kNumTickClasses = 8;

TickClass tick_class(trace::EventKind kind);
// The class of event `index` of `model` (of kind `kind`): a no-op fire by its
// cause (Note [Lingering owners]), any other by its kind.
TickClass tick_class(const analysis::Model& model, size_t index, trace::EventKind kind);

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

// Note [Compact timeline index]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A track keeps only what the model cannot answer fast (a 100M-event trace
// once spent 13 B per event, 1.2 GiB, on copies of its times and classes):
//   * which events are the track's, as an EventColumn: nothing when the
//     track is every event in order (a one-track trace), else blocks of 64
//     positions, each stored as a run (nothing), byte deltas, or 16/32-bit
//     offsets — about 1 B per event when a few threads interleave;
//   * the time of every kTimeSample-th event, so that a search narrows to
//     kTimeSample events with no model call before it asks the model for
//     at most log2(kTimeSample) times;
//   * the class summary (Note [Timeline folding]) from blocks of 8 events up.
// Times and classes of single events are the model's (Model::time_ns,
// Model::event), asked a bounded number of times per mark, never per event
// per frame; the model must outlive the index (the view keeps both). A
// track made from raw arrays (add_track: tests, benchmarks) keeps its own
// times and classes, and searches its times directly (no samples).

// Position -> event index, compactly (Note [Compact timeline index]).
class EventColumn {
 public:
  static constexpr size_t kBlock = 64;
  void push_back(uint32_t value) {
    if (identity_ && value == size_) {  // the common case of a one-track trace: nothing to store
      ++size_;
      return;
    }
    push_back_stored(value);
  }
  // push_back of v[0..n) in order; whole blocks are encoded straight from v.
  void append(const uint32_t* v, size_t n);
  void finish();  // after the last push_back, before any read
  size_t size() const { return size_; }
  uint32_t operator[](size_t k) const {
    if (identity_) return static_cast<uint32_t>(k);
    const size_t b = k / kBlock, j = k % kBlock;
    const uint64_t where = where_[b];
    const uint8_t* p = pool_.data() + (where >> 2);
    switch (where & 3) {
      case 0: return base_[b] + static_cast<uint32_t>(j);
      case 1: {
        uint32_t v = base_[b];
        for (size_t i = 1; i <= j; ++i) v += p[i - 1];
        return v;
      }
      case 2: {
        uint16_t d;
        std::memcpy(&d, p + 2 * j, 2);
        return base_[b] + d;
      }
      default: {
        uint32_t v;
        std::memcpy(&v, p + 4 * j, 4);
        return v;
      }
    }
  }
  size_t memory_bytes() const;

 private:
  void push_back_stored(uint32_t value);
  void leave_identity();
  void encode(const uint32_t* v, size_t n);  // one block of n <= kBlock values
  void flush();
  std::vector<uint32_t> base_;   // per block: the first (runs, deltas) or smallest (16-bit) value
  std::vector<uint64_t> where_;  // per block: offset in pool_ << 2 | encoding (0 run, 1 u8 deltas, 2 u16, 3 u32)
  std::vector<uint8_t> pool_;
  std::vector<uint32_t> pending_;  // the block being filled
  size_t size_ = 0;
  bool identity_ = true;  // value k == k so far: nothing stored
};

struct TimelineTrack {
  static constexpr size_t kTimeSample = 32;
  std::string name;  // "rank 0", "rank 0 / thread 2"
  uint16_t rank = 0;
  uint32_t thread = 0;
  uint32_t source = 0;
  // summary[k][b]: OR of (1 << class) over events [b * 8^(k+1), (b+1) * 8^(k+1)).
  std::vector<std::vector<uint8_t>> summary;
  // Lanes of spans; within a lane, spans are disjoint and sorted.
  std::vector<std::vector<TimelineSpan>> lanes;

  size_t size() const { return events_.size(); }
  // Time (ns on the model's clock, ascending in k), event index and
  // TickClass of the track's k-th event.
  int64_t time(size_t k) const { return model_ ? model_->time_ns(events_[k]) : own_time_[k]; }
  uint32_t event(size_t k) const { return events_[k]; }
  uint8_t cls(size_t k) const;
  // OR of (1 << class) over events [first, last).
  uint8_t classes(size_t first, size_t last) const;
  // The first k in [from, to) with time(k) >= t (lower) or > t (upper); `to` if none.
  size_t lower_bound(size_t from, size_t to, int64_t t) const;
  size_t upper_bound(size_t from, size_t to, int64_t t) const;
  size_t memory_bytes() const;

 private:
  friend class TimelineIndex;
  template <class Before>
  size_t search(size_t from, size_t to, Before before) const;
  void summarize_from_classes();  // summary[0] from cls(k), then the levels above
  void summarize_levels();        // the levels above summary[0]
  const analysis::Model* model_ = nullptr;  // times and classes, or own_*:
  std::vector<int64_t> own_time_;
  std::vector<uint8_t> own_cls_;
  EventColumn events_;
  std::vector<int64_t> sample_;  // time(k * kTimeSample); none with own_time_
};

// Note [Idle gaps]
// ~~~~~~~~~~~~~~~~~
// Real runs spend long stretches recording nothing: ranks starting up (4.5 s
// of a 4.8 s bridge trace), a rank waiting in a collective for a peer that
// died (59.5 s beside 0.3 s of training). Drawn to scale, the work is a
// sliver. A stretch with no event on any track that lasts kIdleGapMinNs and
// kIdleGapShare of the trace is an idle gap: the index finds them in its walk
// and says what the gap was from the events around it (a collective still
// open: "waiting in allreduce"; before the first backward: "start-up"). The
// view collapses each to a labelled band a few dozen pixels wide, which a
// click expands (TimelineView: one time <-> x mapping for drawing, hit tests
// and markers, Note [Timeline time mapping]).
//
// Note [Start-up band]
// ~~~~~~~~~~~~~~~~~~~~~
// The work is the training: forward, backward, hook fires, collectives. What
// a real run records before its first forward is bookkeeping (process
// groups, parameter broadcasts, Reducers built, a rank waiting for its
// peers): 190 ms of a 290 ms bridge trace under 1.13, or 100 ms before a
// 4.09 s start-up gap under 2.6, which to scale took most of the axis and
// squeezed the training against an edge. So the stretch from the trace's
// first event to the first step's forward (the graph-building events right
// before the first backward_begin) is one start-up band, like an idle gap
// but holding events, when it holds an idle gap or takes kStartupShare of
// the time with activity. Collapsed by default, the training gets the
// width; a click on its label draws it to scale (the whole trace stays
// reachable), a click elsewhere in it moves to the nearest event.
//
// Note [Quiet stretches]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Shorter pauses matter beside a short run: a rank killed mid-step leaves
// its peer 126 ms in an allreduce after 38 ms of training, and drawn to
// scale that wait took three quarters of the axis, under kIdleGapMinNs. So
// a stretch with no event of kQuietMinNs or more, after the start-up band,
// is an idle gap too when it lasts kQuietShare of the time with activity
// (the trace less its idle gaps and start-up band). A run of many steps
// keeps its pauses between steps: each is short beside them all.
struct IdleGap {
  int64_t begin = 0, end = 0;      // ns: the last event before it, the first after (a start-up band: its first event)
  uint32_t before = 0, after = 0;  // those events
  std::string what;                // "start-up", "waiting in allreduce", ...
  uint32_t events = 0;             // events inside: none but in a start-up band (Note [Start-up band])
};
constexpr int64_t kIdleGapMinNs = 500'000'000;
constexpr double kIdleGapShare = 0.05;
constexpr double kStartupShare = 0.2;  // Note [Start-up band]
constexpr int64_t kQuietMinNs = 50'000'000;  // Note [Quiet stretches]: above a loaded machine's scheduling hiccups
constexpr double kQuietShare = 0.25;

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
  // Note [Idle gaps]: in time order; none for tracks from raw arrays.
  const std::vector<IdleGap>& idle_gaps() const { return gaps_; }
  // Bytes the index holds (per-event arrays, summaries, spans).
  size_t memory_bytes() const;

 private:
  std::vector<TimelineTrack> tracks_;
  std::vector<IdleGap> gaps_;
  int64_t begin_ = 0, end_ = 0;
};

// A run of events shown as one mark: [first, last) of a track, from
// time(first) to time(last - 1).
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
