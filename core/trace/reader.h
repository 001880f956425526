#pragma once
// Reading .hstrace files (Note [Trace file format]) into TraceData.
//
// Damage is handled in two ways. A file whose prefix or header cannot be read
// (not a trace, wrong version, bad header checksum) throws TraceFormatError,
// whose message names the file, the byte offset and the reason. Damage after
// a valid header (a file cut short by a killed process, a bad checksum, an
// impossible count, ...) stops reading there: every complete, valid block
// before it is kept and TraceData::truncation says
// "truncated at byte N: <reason>; K events recovered". Nothing in a file can
// make the reader crash or allocate more than the file's own size justifies.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trace/file_format.h"
#include "trace/trace_data.h"

namespace hookscope::trace {

struct ReadOptions {
  // Called now and then while events are decoded, with (bytes of the file
  // processed, file size), and once at the end with (size, size).
  std::function<void(uint64_t done, uint64_t total)> progress = nullptr;
  // Reading stops (reported as truncation) before decoding more events
  // than this. 0: the default limit, kMaxEventsPerFileByte per byte of file.
  uint64_t max_events = 0;
  // Threads decoding events (the chunks of several writer threads are merged
  // while decoded, each thread merging one time range: Note [Decoding
  // straight into merged order]). 0: the reader's choice, the calling thread
  // for traces under a million events, else up to 8 threads (the
  // hardware's). 1: the calling thread only.
  unsigned threads = 0;
  // Decode into TraceData::packed, leaving `events` empty (Note [Packed
  // events]): memory then holds the packed events and a chunk or two per
  // decoding thread, never an Event array of the whole trace (except on the
  // slow path for damaged or clock-going-back traces, which is packed after).
  bool packed = false;
};

// Reads a whole trace file. Throws std::runtime_error when the file cannot
// be opened and TraceFormatError when it is not a readable trace.
TraceData read_trace(const std::string& path, const ReadOptions& options = {});

// Reads a trace from memory; `source` names it in messages and TraceData::source.
TraceData read_trace_buffer(const void* data, size_t size, const std::string& source = "memory",
                            const ReadOptions& options = {});

// The footer index of a finished file (for seeking), read without decoding
// events: where each event chunk is, its thread, count and time range.
struct TraceIndexEntry {
  uint64_t offset = 0;  // byte offset of the event chunk block
  uint32_t thread = 0;
  uint32_t count = 0;
  uint64_t t_min = 0, t_max = 0;
};
struct TraceIndex {
  TraceHeader header;
  uint64_t total_events = 0;
  uint64_t dropped_events = 0;
  uint64_t string_count = 0;  // including id 0
  std::vector<TraceIndexEntry> chunks;
};

// nullopt when the file has no intact footer (the recording did not finish,
// or the end is damaged): read_trace still reads such files. Throws like
// read_trace when the header is unreadable.
std::optional<TraceIndex> read_trace_index(const std::string& path);
std::optional<TraceIndex> read_trace_index_buffer(const void* data, size_t size,
                                                  const std::string& source = "memory");

// Note [Safe trace writes]: a recording of `path` killed before it replaced
// the trace there leaves its events under a temporary name. When one newer
// than `path` exists, a message that says this file is an earlier run's and
// names the temporary to open instead; else "". (The CLI and the GUI say it
// when they open `path`.)
std::string superseded_by_temporary(const std::string& path);

}  // namespace hookscope::trace
