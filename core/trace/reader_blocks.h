#pragma once
// Pieces of the reader shared by read_trace and read_trace_index: the file
// start (prefix + header block), block headers and the footer. Internal to
// core/trace/reader*.cpp.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

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

// Reserves room for n events; for big traces asks the kernel for huge pages
// first (page faults would otherwise cost more than decoding). reader_merge.cpp
void reserve_events(std::vector<Event>& events, size_t n);

// Puts events (the chunks in file order) in merge_chunks order; see there.
// reader_merge.cpp
void merge_thread_runs(std::vector<Event>& events, bool all_sorted, size_t threads);

}  // namespace hookscope::trace::detail
