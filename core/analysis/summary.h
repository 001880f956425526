#pragma once
// Counts over an event stream, for the CLI's human-readable summaries.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.h"

namespace hookscope::analysis {

struct EventSummary {
  size_t total = 0;
  uint64_t duration_ns = 0;
  size_t threads = 0;
  size_t ranks = 0;
  std::array<size_t, static_cast<size_t>(trace::EventKind::kCount)> per_kind{};
  // [hook kind][0 = added, 1 = fired, 2 = removed, 3 = removal refused]
  std::array<std::array<size_t, 4>, trace::kNumHookKinds> per_hook_kind{};
};

EventSummary summarize(const std::vector<trace::Event>& events);

// A few lines a person reads: totals, per-kind counts, hooks per kind.
std::string format_summary(const EventSummary& summary);

}  // namespace hookscope::analysis
