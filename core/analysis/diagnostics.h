#pragma once
// What went wrong with hooks in a trace, each finding pointing at the events
// that prove it. See Note [Findings].

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Findings]
// ~~~~~~~~~~~~~~~
// A finding is one fact a user can act on, with the event indices that prove
// it (the GUI jumps there; `at` is the first event at which it is true). The
// kinds, with what folds into one finding (`count` says how many):
//  * leaked_hook: an owner was destroyed while hooks it added were still
//    attached (to a Function, or to a leaf tensor). One per (owner, Function),
//    count = hooks. A hook its owner removed itself later is not leaked.
//  * stale_fire: a hook fired after its owner was destroyed. One per (owner,
//    Function), count = fires. Also (severity warning) a hook fired after its
//    own removal: real in PyTorch, which snapshots hook lists before running
//    them (Note [Module hooks in traces]); one per hook, count = fires.
//  * collateral_removal: a hook removed, by key or by the by-type sweep, by
//    someone other than its owner. One per hook.
//  * multi_owner: hooks of several live Reducer owners on one Function at
//    once (two DDP instances on one module). One per (Function, owner set).
//  * failed_removal: a removal that found no such hook (kHookRemoveFailed).
//  * hook_growth: the hooks of one kind on a Function grow as owners are
//    rebuilt (a new owner adds while an earlier owner of the same kind still
//    has hooks there and is destroyed, or is a Reducer replaced while alive:
//    it never prepares a backward again): 1 -> 2 -> 3 across Reducer
//    rebuilds. One per (Function, hook kind, owner kind). Note [Hook growth] in
//    diagnostics_growth.h has the rule and what it is not.
//  * marked_twice: kMarkedTwice. One per event.
//  * unused_parameter: kUnusedParameter. One per (Reducer, parameter),
//    count = backwards.
//  * malformed_trace: the trace claims something that cannot happen (Note
//    [Malformed traces] lists the kinds, `detail` names one). One per kind,
//    count = occurrences, the first ones as proving events.
//  * unrecovered_failure: a failure (an injected one, a killed or vanished
//    rank, a collective that failed) after which no rank resumed training
//    (no later recovery_step `resumed`, no later completed backward pass):
//    the run did not finish. One per
//    failure event. A failure that was recovered from is not a finding: the
//    recovery story is what the trace is for.
// An owner's end is its kOwnerDestroyed or, for a Reducer's owner, its
// kReducerDestroyed, whichever comes first (the Reducer removes its hooks
// before either, Note [Event record] kReducerDestroyed).
enum class FindingKind : uint8_t {
  kLeakedHook = 0,
  kStaleFire = 1,
  kCollateralRemoval = 2,
  kMultiOwner = 3,
  kFailedRemoval = 4,
  kHookGrowth = 5,
  kMarkedTwice = 6,
  kUnusedParameter = 7,
  kMalformedTrace = 8,
  kUnrecoveredFailure = 9,
};
constexpr int kNumFindingKinds = 10;

enum class Severity : uint8_t { kError = 0, kWarning = 1, kInfo = 2 };

std::string_view to_string(FindingKind kind);  // "leaked_hook", ...
std::string_view to_string(Severity severity);  // "error", "warning", "info"
// Inverse of to_string(FindingKind); throws std::invalid_argument listing the names.
FindingKind finding_kind_from_string(std::string_view name);

struct Finding {
  FindingKind kind = FindingKind::kLeakedHook;
  Severity severity = Severity::kError;
  std::string message;             // names Functions, owners and keys as a user reads them
  size_t at = 0;                   // first event at which it holds
  std::vector<size_t> events;      // proving events, ascending
  size_t count = 1;                // occurrences folded into it (hooks, fires, backwards)
  FunctionIndex function = kNoIndex;
  uint64_t node = 0;               // raw node id of `function`
  OwnerIndex owner = kNoIndex;     // the owner concerned (the hook's, the Reducer's)
  uint32_t owner_id = 0;           // its raw id
  uint64_t key = 0;                // a hook key, when one hook is concerned
  int32_t rank = -1;
  uint32_t source = 0;             // trace
  std::string detail;              // malformed_trace: which kind (to_string(MalformedKind))
};

// Every finding in the model, ordered by `at`.
std::vector<Finding> diagnose(const Model& model);
// Only marked_twice and unused_parameter (part of diagnose()), in event order.
std::vector<Finding> diagnose_reducers(const Model& model);
// Only malformed_trace (part of diagnose()), by kind.
std::vector<Finding> diagnose_malformed(const Model& model);
// Only unrecovered_failure (part of diagnose()), in event order.
std::vector<Finding> diagnose_failures(const Model& model);

// The heap bytes `findings` hold (the vector, messages and evidence; not
// malloc's own overhead).
size_t findings_memory_bytes(const std::vector<Finding>& findings);

// Findings folded for people: one group per kind, with the owners concerned.
struct FindingGroup {
  FindingKind kind = FindingKind::kLeakedHook;
  Severity severity = Severity::kError;  // the most severe in the group
  size_t findings = 0;
  size_t occurrences = 0;  // sum of counts
  size_t first = 0;        // index in the findings vector of the earliest
  std::vector<std::pair<OwnerIndex, size_t>> owners;  // (owner, findings), first seen first
};
std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings);

struct FindingCounts {
  size_t errors = 0, warnings = 0, infos = 0;
  size_t per_kind[kNumFindingKinds] = {};
};
FindingCounts count_findings(const std::vector<Finding>& findings);

// Text for a terminal: a summary line per kind, the owners concerned, and up
// to `per_group` example messages per kind (SIZE_MAX: every finding).
std::string format_findings(const Model& model, const std::vector<Finding>& findings,
                            size_t per_group = 3);

}  // namespace hookscope::analysis
