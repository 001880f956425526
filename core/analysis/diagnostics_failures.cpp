// unrecovered_failure (Note [Findings]): a failure after which no rank
// resumed training. A run that recovered tells its story through the
// recovery steps; one that did not must not read as clean.

#include <fmt/format.h>

#include "analysis/diagnostics.h"

namespace hookscope::analysis {

using trace::EventKind;

std::vector<Finding> diagnose_failures(const Model& m) {
  std::vector<Finding> out;
  const auto& failures = m.events_of_kind(EventKind::kFailure);
  if (failures.empty()) return out;
  // The last sign that training went on, on any rank: a "training resumes"
  // recovery step, or (a program recorded through the torch bridge, which
  // recovers without naming the steps) a backward pass that completed. A
  // failure before it was recovered from.
  EventIndex last_resumed = kNever;
  auto later = [&last_resumed](EventIndex i) {
    if (last_resumed == kNever || i > last_resumed) last_resumed = i;
  };
  for (EventIndex i : m.events_of_kind(EventKind::kRecoveryStep)) {
    if (m.event(i).as<ev::RecoveryStep>().step == trace::RecoveryStep::kResumed) later(i);
  }
  const auto& ends = m.events_of_kind(EventKind::kBackwardEnd);
  for (auto it = ends.rbegin(); it != ends.rend(); ++it) {
    if (m.event(*it).as<ev::BackwardEnd>().ending == trace::BackwardEnding::kCompleted) {
      later(*it);
      break;
    }
  }
  for (EventIndex i : failures) {
    if (last_resumed != kNever && last_resumed > i) continue;
    const trace::Event e = m.event(i);
    const auto failure = e.as<ev::Failure>();
    Finding f;
    f.kind = FindingKind::kUnrecoveredFailure;
    f.severity = Severity::kError;
    f.at = i;
    f.events = {i};
    f.rank = static_cast<int32_t>(failure.failed_rank);
    f.source = m.source(i);
    f.message = fmt::format("rank {} failed ({}) at event #{} and no rank resumed training after it: "
                            "the run did not finish ({})",
                            failure.failed_rank, trace::to_string(failure.mode), i,
                            m.str(failure.description));
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace hookscope::analysis
