#include "analysis/summary.h"

#include <fmt/format.h>

#include <set>

namespace hookscope::analysis {

using trace::EventKind;
using trace::HookKind;

EventSummary summarize(const std::vector<trace::Event>& events) {
  EventSummary s;
  s.total = events.size();
  if (!events.empty()) s.duration_ns = events.back().t_ns - events.front().t_ns;
  std::set<uint32_t> threads;
  std::set<uint16_t> ranks;
  for (const auto& e : events) {
    threads.insert(e.thread);
    ranks.insert(e.rank);
    const auto k = static_cast<size_t>(e.kind);
    if (k < s.per_kind.size()) ++s.per_kind[k];
    if (!trace::is_hook_event(e.kind)) continue;
    const auto hook_kind = static_cast<uint8_t>(trace::hook_kind_of(e));
    if (hook_kind >= trace::kNumHookKinds) continue;
    switch (e.kind) {
      case EventKind::kHookAdded: ++s.per_hook_kind[hook_kind][0]; break;
      case EventKind::kHookFired: ++s.per_hook_kind[hook_kind][1]; break;
      case EventKind::kHookRemoved: ++s.per_hook_kind[hook_kind][2]; break;
      default: ++s.per_hook_kind[hook_kind][3]; break;  // kHookRemoveFailed
    }
  }
  s.threads = threads.size();
  s.ranks = ranks.size();
  return s;
}

std::string format_summary(const EventSummary& s) {
  std::string out = fmt::format("{} events over {:.3f} ms, {} thread(s), {} rank(s)\n", s.total,
                                s.duration_ns / 1e6, s.threads, s.ranks);
  out += "  by kind:";
  int col = 0;
  for (size_t k = 0; k < s.per_kind.size(); ++k) {
    if (s.per_kind[k] == 0) continue;
    out += fmt::format("{}{} {}", col % 4 == 0 ? "\n    " : "   ",
                       trace::to_string(static_cast<EventKind>(k)), s.per_kind[k]);
    ++col;
  }
  out += "\n  hooks:         added   fired  removed  refused\n";
  for (int h = 0; h < trace::kNumHookKinds; ++h) {
    const auto& c = s.per_hook_kind[h];
    if (c[0] + c[1] + c[2] + c[3] == 0) continue;
    out += fmt::format("    {:<15} {:>5} {:>7} {:>8} {:>8}\n",
                       trace::to_string(static_cast<HookKind>(h)), c[0], c[1], c[2], c[3]);
  }
  return out;
}

}  // namespace hookscope::analysis
