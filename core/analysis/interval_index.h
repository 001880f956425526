#pragma once
// Which of many [from, to) intervals of event indices contain a given event,
// answered from checkpoints plus the deltas of one block. See Note [Replay by
// intervals].

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

namespace hookscope::analysis {

// An end index meaning "still alive at the end of the trace".
constexpr uint32_t kNever = UINT32_MAX;

// Note [Replay by intervals]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The textbook way to seek in an event log is a checkpoint every K events
// and a forward replay of the events after it. The model knows the whole
// trace once it is loaded, so its deltas are precomputed: the load pass turns
// every Function and every stay of a hook on a Function (a HookSegment, a
// leaf hook moving to a re-created AccumulateGrad starts a new one) into an
// interval [from, to) of event indices, alive right after event e iff
// from <= e < to. Everything else in the state is a count of events up to e
// (fires of a hook, a Reducer's progress in its current backward), answered
// by binary search over per-entity event lists.
//
// A seek is then a stabbing query. The timeline is cut into blocks; at each
// block start a checkpoint holds the ids alive just before it; state_at(e)
// keeps the checkpoint's ids that are still alive at e and adds the ids that
// started in the block up to e. Stepping one event forward or back adds or
// drops the intervals that start or end at that event (both orders are
// kept). A block closes once it has at least `checkpoint_min_events` events
// and events * `checkpoint_bytes_per_event` >= 4 bytes * ids alive, so the
// checkpoints take at most that many bytes per event of the trace, and a
// seek costs O(ids alive + intervals starting in one block), i.e. about the
// size of the answer. ModelOptions holds both knobs.
class IntervalIndex {
 public:
  struct Span {
    uint32_t from = 0;
    uint32_t to = kNever;
    bool empty() const { return to <= from; }
  };

  // The intervals, read where their owner keeps them: interval `id` is the
  // two adjacent uint32_t (from, to) at base + id * stride (the model's
  // FunctionInfo::created_at / released_at, HookSegment::from / to), so the
  // index holds no copy of them. The records must outlive the index and not move.
  struct SpanView {
    const uint8_t* base = nullptr;
    size_t stride = sizeof(Span);
    size_t count = 0;
    Span operator[](size_t id) const {
      Span s;
      std::memcpy(&s, base + id * stride, sizeof(Span));
      return s;
    }
    size_t size() const { return count; }
    // The view of records[i].*from, whose next member is `to`.
    template <typename Record>
    static SpanView of(const std::vector<Record>& records, size_t from_offset) {
      if (records.empty()) return {};
      return {reinterpret_cast<const uint8_t*>(records.data()) + from_offset, sizeof(Record),
              records.size()};
    }
  };

  // A family of intervals with the orders the index keeps: the non-empty
  // intervals by (from, id), and those of them that end by (to, id).
  struct Family {
    SpanView spans;
    std::vector<uint32_t> by_from;
    std::vector<uint32_t> by_to;
    // The orders, by sorting. ordered() takes them from whoever knows them
    // already (the load pass sees intervals start and end in order), sorting
    // only where they are not in order: `by_from` any superset of the
    // non-empty intervals, best in order of from; `by_to` likewise for those
    // that end, best in order of to.
    static Family sorted(SpanView spans);
    static Family ordered(SpanView spans, std::vector<uint32_t> by_from, std::vector<uint32_t> by_to);
  };

  // Block starts for `num_events` events given every family of intervals that
  // will be indexed with them. The first block starts at 0.
  static std::vector<uint32_t> choose_blocks(size_t num_events,
                                             std::span<const SpanView> families,
                                             uint32_t min_events, double bytes_per_event);
  static std::vector<uint32_t> choose_blocks(size_t num_events, std::span<const Family> families,
                                             uint32_t min_events, double bytes_per_event);

  void build(SpanView spans, std::span<const uint32_t> block_starts);
  void build(Family family, std::span<const uint32_t> block_starts);

  // Appends the ids alive right after event `e` (in no particular order).
  void alive_at(uint32_t e, std::span<const uint32_t> block_starts,
                std::vector<uint32_t>& out) const;
  // Ids whose interval starts (ends) at event `e`; empty intervals never appear.
  std::span<const uint32_t> starting_at(uint32_t e) const;
  std::span<const uint32_t> ending_at(uint32_t e) const;

  Span span(uint32_t id) const { return spans_[id]; }
  size_t size() const { return spans_.size(); }
  size_t checkpoint_bytes() const;
  size_t memory_bytes() const;

 private:
  SpanView spans_;
  std::vector<uint32_t> by_from_;     // non-empty intervals, ordered by from (then id)
  std::vector<uint32_t> by_to_;       // non-empty intervals that end, ordered by to
  std::vector<uint32_t> ckpt_begin_;  // per block, into ckpt_ids_; one past the last too
  std::vector<uint32_t> ckpt_ids_;
};

}  // namespace hookscope::analysis
