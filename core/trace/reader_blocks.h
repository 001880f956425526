#pragma once
// Pieces of the reader shared by read_trace and read_trace_index: the file
// start (prefix + header block), block headers and the footer. Internal to
// core/trace/reader*.cpp.

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trace/file_columns.h"
#include "trace/packed_events.h"
#include "trace/reader.h"

namespace hookscope::trace::detail {

struct BlockView {
  uint32_t type = 0;
  uint32_t length = 0;
  const uint8_t* payload = nullptr;
};

// Parses the 12-byte prefix and the header block at the start of
// data[0..size). Throws TraceFormatError for anything unreadable, including
// version mismatches. Returns the offset just past the header block.
size_t parse_file_start(const uint8_t* data, size_t size, uint64_t file_size,
                        const std::string& source, TraceHeader& header);

// Checks the block at data[offset..size): complete, plausible length, CRC.
// Returns the reason it is bad ("incomplete event chunk", "bad checksum in
// footer", ...) or an empty string.
std::string check_block(const uint8_t* data, size_t size, size_t offset, BlockView& block);

// Parses a footer payload into `index` (all fields but `header`). `lenient`
// allows bytes a newer minor version appended. Returns the reason it is
// malformed, or nullptr. Entry counts are checked against the payload size
// before anything is allocated.
const char* parse_footer(const uint8_t* payload, size_t length, bool lenient, TraceIndex& index);

// Checks the trailer at data[offset..offset+16) of a file of `file_size`
// bytes that points back at a footer block at `footer_offset`.
bool check_trailer(const uint8_t* data, size_t size, size_t offset, uint64_t footer_offset);

// An event chunk block found by the reader's first pass.
struct ChunkRef {
  uint64_t offset;  // of its block
  uint64_t end;     // just past its block
  ChunkHeader header;
  uint64_t strings_before;  // string table size when it was reached
  uint64_t dropped_before;
};

// Note [Decoding straight into merged order]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Chunks of several writer threads interleave in time. Decoding them all in
// file order and then merging copies every event twice and faults in two
// arrays of 48 bytes per event; the page faults alone cost more than decoding.
// decode_merged instead keeps one decoded chunk per writer thread (small,
// cache-resident) and merges from those into `events`, decoding a thread's
// next chunk when its current one runs out: one array, one copy.
// With several decoding threads the merged order is cut into time ranges,
// one per thread, of about as many events each (cut times taken from the
// chunks' first times, which their headers tell without decoding). Each
// thread finds where its range starts in every writer's events (a binary
// search on those first times, then in one decoded chunk) and merges its
// range into its own slice of `events`, which starts at the sum of those
// starts: every event is decoded and copied once, on some thread.
// The starts are only guesses until checked: after the merge, every writer's
// events must be in time order across all its chunks, and each slice must end
// no later (by t_ns, then thread) than the next begins. Then the result is
// merge_chunks' order, whatever the guesses were.
// decode_merged gives up (returns false, `events` cleared) on anything
// unusual: a bad chunk, or a thread whose clock goes back. The caller then
// decodes the old way, which finds the first bad chunk in file order and
// reports it exactly as before. `progress` is called, on the calling thread
// only, with bytes of chunks decoded so far. `events` must have room
// reserved for every event. reader_ranges.cpp
bool decode_merged(const std::vector<ChunkRef>& chunks, unsigned threads,
                   std::vector<Event>& events, const std::function<void(uint64_t)>& progress);
// The same into a packed store (Note [Packed events]): each range's thread
// packs its slice as it merges, and the slices are joined; `events` is left
// empty on giving up. Also right for a single writer thread. reader_ranges.cpp
bool decode_merged(const std::vector<ChunkRef>& chunks, unsigned threads, PackedEvents& events,
                   const std::function<void(uint64_t)>& progress);

// The merge order of events (Note [Event record]): by t_ns, ties by thread.
inline bool merge_before(const Event& a, const Event& b) {
  return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.thread < b.thread;
}

// Runs fn(0), ..., fn(n - 1) at once: fn(0) on the calling thread, the others
// on new threads (on the calling thread too when no thread can be started).
// Returns when all have; then rethrows the first exception one threw. When
// one throws, `stop` (if given) is set so that the others can end early.
// reader_merge.cpp
void run_parallel(unsigned n, const std::function<void(unsigned)>& fn,
                  std::atomic<bool>* stop = nullptr);

// Reserves room for n events; for big traces asks the kernel for huge pages
// first (page faults would otherwise cost more than decoding). reader_merge.cpp
void reserve_events(std::vector<Event>& events, size_t n);

// Takes the page faults of events.data()[begin, end) (within its capacity)
// on the calling thread, before anything is there: threads that each fault
// in a part share the kernel's zeroing of fresh pages. reader_merge.cpp
void prefault_events(std::vector<Event>& events, size_t begin, size_t end);

// Puts events (the chunks in file order) in merge_chunks order; see there.
// reader_merge.cpp
void merge_thread_runs(std::vector<Event>& events, bool all_sorted, size_t threads);

}  // namespace hookscope::trace::detail
