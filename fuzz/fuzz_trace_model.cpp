// libFuzzer target for the analysis model (Note [Malformed traces]): the
// semantic layer, past the reader. An input is either a trace file (it
// starts with the file magic: read as read_trace_buffer does, checksums
// skipped: Note [Fuzzing skips checksums]) or, so that
// mutations hit the semantics directly, raw 48-byte event records (Note
// [Event record]) after one byte giving the number of strings; kinds and
// string ids are made to satisfy what the reader guarantees. Whatever the
// events say, building the model, diagnosing, replaying, describing and
// exporting must not crash, hang, or allocate without bound.

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "analysis/diagnostics.h"
#include "analysis/model.h"
#include "analysis/state.h"
#include "export/export.h"
#include "trace/fuzzing.h"
#include "trace/reader.h"

namespace tr = hookscope::trace;
namespace an = hookscope::analysis;

namespace {

[[noreturn]] void fail(const char* what) {
  std::fprintf(stderr, "fuzz_trace_model: invariant broken: %s\n", what);
  std::abort();
}

tr::TraceData raw_events(const uint8_t* data, size_t size) {
  tr::TraceData d;
  d.header.hookscope_version = "fuzz";  // a recorded header: its world size counts
  d.header.world_size = 4;
  const size_t strings = size ? 1 + data[0] % 8 : 1;
  d.strings.assign(1, std::string());
  for (size_t s = 1; s < strings; ++s) d.strings.push_back(s % 2 ? "Fn\xff\x1b[2J" : "owner");
  const size_t n = size ? std::min<size_t>((size - 1) / sizeof(tr::Event), 4096) : 0;
  for (size_t i = 0; i < n; ++i) {
    tr::Event e;
    std::memcpy(&e, data + 1 + i * sizeof(tr::Event), sizeof e);
    e.kind = static_cast<tr::EventKind>(1 + static_cast<uint8_t>(e.kind) % 63);
    if (tr::event_arg_is_string(e.kind)) e.arg %= d.strings.size();
    d.events.push_back(e);
  }
  return d;
}

}  // namespace

// Checksums off for this process only (Note [Fuzzing skips checksums]).
extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tr::skip_checksums_for_fuzzing();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  tr::TraceData d;
  if (size >= 8 && std::memcmp(data, "\x89HSTRACE", 8) == 0) {
    tr::ReadOptions options;
    options.max_events = 1u << 16;
    options.threads = 1;
    try {
      d = tr::read_trace_buffer(data, size, "fuzz", options);
    } catch (const tr::TraceFormatError&) {
      return 0;
    }
  } else {
    d = raw_events(data, size);
  }
  const size_t events = d.events.size();
  an::Model m(std::move(d));
  if (m.num_events() != events) fail("event count changed");
  // Note [Model memory bound]
  if (m.memory_bytes() > 4096 * (events + 64)) fail("model memory past its bound");
  const auto findings = an::diagnose(m);
  for (const auto& f : findings) {
    if (f.kind == an::FindingKind::kMalformedTrace && f.events.empty()) fail("malformed without proof");
    if (f.at >= m.num_events() && m.num_events() > 0) fail("finding past the end");
  }
  if (m.num_events() == 0) return 0;
  an::Cursor cursor(m, 0);
  for (size_t i = 0; i < m.num_events() && i < 64; ++i) {
    if (!(cursor.state() == m.state_at(i))) fail("stepping disagrees with seeking");
    const std::string line = hookscope::exporters::jsonl_line(m, i);
    if (hookscope::exporters::valid_utf8(line) != line) fail("JSON line not valid UTF-8");
    (void)m.describe(i);
    cursor.next();
  }
  (void)m.state_at(m.num_events() - 1);
  return 0;
}
