// libFuzzer target for the trace reader (Note [Trace file format]). Built and
// run by scripts/fuzz.sh; the reader skips checksums here (Note [Fuzzing
// skips checksums]) so that mutations reach the decoders. Whatever
// the input, reading must not crash, hang or allocate without bound, must
// either throw TraceFormatError or return a trace whose events all pass the
// checks the reader promises, the same with three decoding threads as with
// one, the same read packed (as the model reads) as unpacked, and the index
// reader must agree with it.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "trace/fuzzing.h"
#include "trace/reader.h"

namespace tr = hookscope::trace;

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_trace_reader: invariant broken: %s\n", what);
  std::abort();
}

}  // namespace

// Checksums off for this process only (Note [Fuzzing skips checksums]).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tr::skip_checksums_for_fuzzing();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::ReadOptions options;
  options.max_events = 1u << 20;  // keeps each input's memory small under ASan
  options.threads = 1;
  tr::TraceData d;
  try {
    d = tr::read_trace_buffer(data, size, "fuzz", options);
  } catch (const tr::TraceFormatError& e) {
    if (e.offset() > size) fail("error offset past the end of the input");
    return 0;
  }
  if (d.strings.empty() || !d.strings[0].empty()) fail("string 0 must be the empty string");
  if (d.events.size() > options.max_events) fail("more events than max_events");
  for (size_t i = 0; i < d.events.size(); ++i) {
    const tr::Event& e = d.events[i];
    const auto k = static_cast<uint8_t>(e.kind);
    if (k == 0 || k >= static_cast<uint8_t>(tr::EventKind::kCount)) fail("impossible kind");
    if (tr::event_arg_is_string(e.kind) && e.arg >= d.strings.size())
      fail("string id out of range");
  }
  if (!d.truncation.empty() && d.truncation.rfind("truncated at byte ", 0) != 0) {
    fail("truncation message does not start with 'truncated at byte'");
  }
  // Several decoding threads read exactly what one reads (Note [Decoding
  // straight into merged order]).
  tr::ReadOptions parallel = options;
  parallel.threads = 3;
  const tr::TraceData p = tr::read_trace_buffer(data, size, "fuzz", parallel);
  if (p.events.size() != d.events.size() ||
      (!p.events.empty() &&
       std::memcmp(p.events.data(), d.events.data(), p.events.size() * sizeof(tr::Event)) != 0)) {
    fail("three decoding threads read other events than one");
  }
  if (p.truncation != d.truncation || p.strings != d.strings ||
      p.dropped_events != d.dropped_events || p.clock_went_back != d.clock_went_back ||
      p.clock_back_thread != d.clock_back_thread || p.clock_back_t_ns != d.clock_back_t_ns) {
    fail("three decoding threads read another trace than one");
  }
  // Read packed (as the analysis model reads, Note [Packed events]), on one
  // thread and on three: the same events, messages and strings.
  for (uint32_t threads : {1u, 3u}) {
    tr::ReadOptions packed = options;
    packed.threads = threads;
    packed.packed = true;
    const tr::TraceData k = tr::read_trace_buffer(data, size, "fuzz", packed);
    if (!k.events.empty()) fail("a packed read filled the Event array");
    if (k.packed.size() != d.events.size()) fail("a packed read holds another number of events");
    const std::vector<tr::Event> unpacked = k.packed.unpack();
    if (!unpacked.empty() &&
        std::memcmp(unpacked.data(), d.events.data(), unpacked.size() * sizeof(tr::Event)) != 0) {
      fail("a packed read holds other events than an unpacked one");
    }
    for (size_t i = 0; i < unpacked.size(); i += 97) {  // random access too, not only whole blocks
      const tr::Event one = k.packed.at(i);
      if (std::memcmp(&one, &d.events[i], sizeof(tr::Event)) != 0) fail("packed at(i) differs");
    }
    if (k.truncation != d.truncation || k.strings != d.strings ||
        k.dropped_events != d.dropped_events || k.clock_went_back != d.clock_went_back) {
      fail("a packed read read another trace than an unpacked one");
    }
  }
  // The index, when there is one, describes exactly what was read.
  auto index = tr::read_trace_index_buffer(data, size, "fuzz");
  if (index && d.truncation.empty()) {
    if (index->total_events != d.events.size()) fail("index total differs from events read");
    if (index->dropped_events != d.dropped_events) fail("index dropped count differs");
    if (index->string_count != d.strings.size()) fail("index string count differs");
  }
  return 0;
}
