#pragma once
// One loaded (or just recorded) trace: what a trace file holds, in memory.
// The reader produces it, the recorder's sinks fill it, the analysis model
// consumes one per rank.

#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.h"
#include "trace/packed_events.h"

namespace hookscope::trace {

struct TraceHeader {
  uint16_t version_major = 1;
  uint16_t version_minor = 0;
  std::string hookscope_version{};  // e.g. "0.1.0"
  int32_t rank = -1;              // -1: ranks run as threads, each event carries its rank
  int32_t world_size = 1;
  std::string host{};
  int64_t pid = 0;
  int64_t start_wall_ns = 0;      // CLOCK_REALTIME at the start, ns since the epoch
  uint64_t start_mono_ns = 0;     // the event clock (steady_clock) at the same moment
  std::string clock = "steady_clock";
  std::string scenario{};         // what was recorded, e.g. "recovery --policy none"
};

struct TraceData {
  TraceHeader header;
  // String table: strings[id] is the text of string id `id` used in this
  // trace's events (0 is the empty string). Ids are only meaningful within
  // one trace; the analysis remaps them when it merges several traces.
  std::vector<std::string> strings;
  // Events merged in order (Note [Event record]): index = sequence number.
  std::vector<Event> events;
  // The same events packed (Note [Packed events]) instead, when read with
  // ReadOptions::packed (then `events` is empty): what the analysis model keeps.
  PackedEvents packed;
  // Set by the reader when the file ended early or a chunk was bad: what was
  // recovered is in `events`, and this says where and why it stopped.
  std::string truncation;          // empty when the file was complete
  uint64_t dropped_events = 0;     // only with a ring-buffer recorder
  // Set by the reader when a thread's clock went backwards (the events are
  // merged by time all the same): the first such event's thread and time.
  // The analysis reports it (Note [Malformed traces]).
  bool clock_went_back = false;
  uint32_t clock_back_thread = 0;
  uint64_t clock_back_t_ns = 0;
  std::string source;              // file path (or "memory")

  // Events held, in `events` or `packed`.
  size_t num_events() const { return events.empty() ? packed.size() : events.size(); }

  // Text of a string id, "?" when out of range.
  const std::string& str(uint64_t id) const {
    static const std::string unknown = "?";
    return id < strings.size() ? strings[id] : unknown;
  }
};

}  // namespace hookscope::trace
