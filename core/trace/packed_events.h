#pragma once
// Events kept bit-packed in memory (Note [Packed events]).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "trace/event.h"

namespace hookscope::trace {

// Note [Packed events]
// ~~~~~~~~~~~~~~~~~~~~
// A loaded trace keeps its events packed, not as 48-byte Event records: a
// 100M-event trace took 4.6 GiB as an array. Events are grouped in blocks of
// kBlock (the last one may be shorter). In a block each of the ten fields is
// frame-of-reference coded: a base and a bit width, the same for every event
// of the block, so every event of a block takes the same number of bits and
// event i is found without decoding the others: at(i) is O(1), allocates
// nothing and only reads (a loaded model is read by several threads at once).
// A field coded "zero-escaped" stores 0 for the value 0 and v - base + 1 for
// any other v: node, key and arg are 0 for many kinds and large for the rest,
// and a plain base would have to be 0. A field of few distinct values spread
// wide (hook keys are serial << 24 | slot, string ids, byte counts) stores
// an index into the block's dictionary of them (at most 64 values, only
// where that is smaller). Each block picks, per field, the narrowest code; a
// block of wild values simply takes 64 bits per field, so packing never fails
// and never loses a bit: at(i) is exactly the event appended.
// Measured (bytes per event, block headers included): 5.3 on the 100M-event
// scale trace and make_gui_trace's, 10.5 to 10.7 on DDP recovery recordings,
// 7.4 on the autograd demo; at most about 81 for wild values.
// Blocks live in arenas of about 1 MiB that never move, so a store is filled
// by appending (PackedEventsBuilder), several builders can fill parts of one
// store on different threads, and joining them moves arenas, never events.
class PackedEvents {
 public:
  static constexpr size_t kBlock = 256;

  PackedEvents() = default;
  // Packs n events (a copy; `events` is not needed afterwards).
  static PackedEvents pack(const Event* events, size_t n);
  static PackedEvents pack(const std::vector<Event>& events) {
    return pack(events.data(), events.size());
  }

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t num_blocks() const { return blocks_.size(); }
  // Event i (i < size()).
  Event at(size_t i) const;
  Event operator[](size_t i) const { return at(i); }
  // Only the time of event i: one field.
  uint64_t t_ns(size_t i) const;
  // Bits of decode's `fields`, one per field (packed_block.h's order); the
  // fields left out stay 0 (a walk that reads few fields decodes only those).
  static constexpr uint32_t kTime = 1u << 0, kNode = 1u << 1, kKey = 1u << 2, kArg = 1u << 3, kOwner = 1u << 4,
                            kActor = 1u << 5, kKind = 1u << 6, kSub = 1u << 7, kRank = 1u << 8,
                            kThread = 1u << 9, kAllFields = (1u << 10) - 1;
  // Decodes block b, events [b * kBlock, min(size(), (b + 1) * kBlock)), into
  // out[0..); returns how many. Faster per event than at().
  size_t decode_block(size_t b, Event* out, uint32_t fields = kAllFields) const;
  // Decodes events [begin, end) into out.
  void decode(size_t begin, size_t end, Event* out, uint32_t fields = kAllFields) const;
  // Adds the number of events of each kind to counts[kind] (256 entries).
  void count_kinds(uint64_t* counts) const;
  // All events as an array (tests, callers that want records).
  std::vector<Event> unpack() const;
  // Bytes held (arenas' used bytes and the block table).
  size_t memory_bytes() const;

 private:
  friend class PackedEventsBuilder;
  friend PackedEvents join_packed(std::vector<class PackedEventsBuilder>& parts);
  const uint8_t* block(size_t b) const {
    const uint64_t ref = blocks_[b];
    return arenas_[ref >> 40].data() + (ref & ((uint64_t{1} << 40) - 1));
  }

  std::vector<std::vector<uint8_t>> arenas_;
  std::vector<uint64_t> blocks_;  // arena << 40 | offset of each block's bytes
  size_t size_ = 0;
};

// Fills a PackedEvents by appending, in order. A builder may start at any
// position `first` of the final store: the events before the next multiple
// of kBlock are kept aside (at most kBlock - 1 of them, and as many at the
// end), so builders of consecutive parts joined with join_packed() make one
// store whose blocks are each packed once.
class PackedEventsBuilder {
 public:
  explicit PackedEventsBuilder(uint64_t first = 0);
  void append(const Event* events, size_t n);
  void append(const Event& e) { append(&e, 1); }
  uint64_t count() const { return count_; }
  // The store; valid when `first` was a multiple of kBlock (else use join_packed).
  PackedEvents finish();

 private:
  friend PackedEvents join_packed(std::vector<PackedEventsBuilder>& parts);
  void flush_staged();

  PackedEvents out_;
  std::vector<Event> head_;    // events before the first block boundary
  size_t head_room_ = 0;
  std::unique_ptr<Event[]> staged_;  // the block being filled
  size_t staged_n_ = 0;
  uint64_t count_ = 0;
};

// Joins builders that filled consecutive parts (each started at the sum of
// the counts before it), leaving them empty.
PackedEvents join_packed(std::vector<PackedEventsBuilder>& parts);

namespace detail {
// Appends block `events[0..n)` (n <= kBlock) packed to `arena`; returns its offset.
size_t pack_block(const Event* events, size_t n, std::vector<uint8_t>& arena);
}  // namespace detail

}  // namespace hookscope::trace
