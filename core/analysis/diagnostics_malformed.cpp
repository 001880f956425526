// malformed_trace findings (Note [Malformed traces]): one per kind, with the
// events that prove it.

#include <fmt/format.h>

#include <algorithm>

#include "analysis/diagnostics.h"

namespace hookscope::analysis {

std::string_view to_string(MalformedKind kind) {
  switch (kind) {
    case MalformedKind::kUnknownEventKind: return "unknown_event_kind";
    case MalformedKind::kBadValue: return "bad_value";
    case MalformedKind::kUnknownHook: return "unknown_hook";
    case MalformedKind::kDuplicateCreation: return "duplicate_creation";
    case MalformedKind::kRemovedTwice: return "removed_twice";
    case MalformedKind::kTimeBackwards: return "time_backwards";
    case MalformedKind::kRankOutOfRange: return "rank_out_of_range";
    case MalformedKind::kEdgeCycle: return "edge_cycle";
    case MalformedKind::kLeafLink: return "leaf_link";
    case MalformedKind::kUnbalancedBackward: return "unbalanced_backward";
    case MalformedKind::kUnbalancedCollective: return "unbalanced_collective";
  }
  return "?";
}

std::vector<Finding> diagnose_malformed(const Model& m) {
  constexpr size_t kEvidence = 8;
  std::vector<Finding> per_kind(kNumMalformedKinds);
  std::vector<size_t> count(kNumMalformedKinds, 0);
  for (const Malformation& x : m.malformations()) {
    const auto k = static_cast<size_t>(x.kind);
    Finding& f = per_kind[k];
    if (count[k]++ == 0) {
      f.kind = FindingKind::kMalformedTrace;
      f.severity = Severity::kError;
      f.detail = std::string(to_string(x.kind));
      f.at = x.at;
      f.source = m.source(x.at);
      f.rank = m.event(x.at).rank;
      f.message = fmt::format("the trace cannot be true ({}): event {} {}", f.detail,
                              m.describe(x.at), x.what);
      if (x.related != kNever) f.message += fmt::format(" (see event #{})", x.related);
    }
    if (f.events.size() < kEvidence) {
      if (x.related != kNever && f.events.size() + 1 < kEvidence) f.events.push_back(x.related);
      f.events.push_back(x.at);
    }
  }
  std::vector<Finding> out;
  for (size_t k = 0; k < per_kind.size(); ++k) {
    if (count[k] == 0) continue;
    Finding& f = per_kind[k];
    f.count = count[k];
    if (f.count > 1) f.message += fmt::format("; {} such events in all", f.count);
    std::sort(f.events.begin(), f.events.end());
    f.events.erase(std::unique(f.events.begin(), f.events.end()), f.events.end());
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace hookscope::analysis
