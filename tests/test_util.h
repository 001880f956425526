#pragma once
// Helpers shared by the tests.

#include <vector>

#include "trace/event.h"
#include "trace/recorder.h"

namespace hookscope::testing {

// The recorded events without the start snapshot of owners that predate the
// recording (which depends on what earlier tests created).
inline std::vector<trace::Event> recorded(const trace::MemoryRecorder& rec) {
  std::vector<trace::Event> out;
  for (const auto& e : rec.events()) {
    if (e.kind == trace::EventKind::kOwnerCreated && e.actor == trace::kOwnerFromSnapshot) continue;
    out.push_back(e);
  }
  return out;
}

}  // namespace hookscope::testing
