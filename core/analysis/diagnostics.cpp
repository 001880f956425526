// The diagnostics of Note [Findings], computed from the model's tables.

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_growth.h"
#include "analysis/diagnostics_internal.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>
#include <tuple>

namespace hookscope::analysis {

using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

std::string_view to_string(FindingKind kind) {
  switch (kind) {
    case FindingKind::kLeakedHook: return "leaked_hook";
    case FindingKind::kStaleFire: return "stale_fire";
    case FindingKind::kCollateralRemoval: return "collateral_removal";
    case FindingKind::kMultiOwner: return "multi_owner";
    case FindingKind::kFailedRemoval: return "failed_removal";
    case FindingKind::kHookGrowth: return "hook_growth";
    case FindingKind::kMarkedTwice: return "marked_twice";
    case FindingKind::kUnusedParameter: return "unused_parameter";
    case FindingKind::kMalformedTrace: return "malformed_trace";
    case FindingKind::kUnrecoveredFailure: return "unrecovered_failure";
  }
  return "?";
}

std::string_view to_string(Severity severity) {
  switch (severity) {
    case Severity::kError: return "error";
    case Severity::kWarning: return "warning";
    case Severity::kInfo: return "info";
  }
  return "?";
}

FindingKind finding_kind_from_string(std::string_view name) {
  std::string all;
  for (int k = 0; k < kNumFindingKinds; ++k) {
    const auto kind = static_cast<FindingKind>(k);
    if (to_string(kind) == name) return kind;
    all += (k ? ", " : "") + std::string(to_string(kind));
  }
  throw std::invalid_argument(
      fmt::format("unknown finding kind '{}'; the kinds are: {}", name, all));
}

namespace detail {

void Diagnoser::index_segments_by_hook() {
  const auto& segs = m_.segments();
  seg_begin_.assign(m_.hooks().size() + 1, 0);
  for (const HookSegment& s : segs) ++seg_begin_[s.hook + 1];
  for (size_t h = 0; h < m_.hooks().size(); ++h) seg_begin_[h + 1] += seg_begin_[h];
  seg_of_hook_.resize(segs.size());
  std::vector<uint32_t> fill(seg_begin_.begin(), seg_begin_.end() - 1);
  for (uint32_t s = 0; s < segs.size(); ++s) seg_of_hook_[fill[segs[s].hook]++] = s;
}

// Where hook `h` was right after event `e` (its last place before, if gone).
FunctionIndex Diagnoser::function_at(HookIndex h, EventIndex e, bool* on_tensor) const {
  FunctionIndex f = m_.hooks()[h].function;
  bool tensor = false;
  // A hook's segments are in time order: the last one starting at or before e.
  const auto first = seg_of_hook_.begin() + seg_begin_[h];
  const auto last = seg_of_hook_.begin() + seg_begin_[h + 1];
  auto it = std::upper_bound(first, last, e, [&](EventIndex x, uint32_t s) {
    return x < m_.segments()[s].from;
  });
  if (it != first) {
    const HookSegment& s = m_.segments()[*(it - 1)];
    f = s.function;
    tensor = s.on_tensor;
  }
  if (on_tensor) *on_tensor = tensor;
  return f;
}

Finding Diagnoser::make(FindingKind kind, Severity severity, FunctionIndex f,
                        OwnerIndex o) const {
  Finding out;
  out.kind = kind;
  out.severity = severity;
  out.function = f;
  out.owner = o;
  if (f != kNoIndex) {
    const FunctionInfo& info = m_.functions()[f];
    out.node = info.id;
    out.rank = info.rank;
    out.source = info.source;
  }
  if (o != kNoIndex) {
    const OwnerInfo& info = m_.owners()[o];
    out.owner_id = info.id;
    out.rank = info.rank;
    out.source = info.source;
  }
  return out;
}

std::string Diagnoser::hook_words(HookIndex h) const {
  const HookInfo& hook = m_.hooks()[h];
  return fmt::format("{} hook (key {})", trace::to_string(hook.kind), trace::format_hook_key(hook.key));
}

std::string Diagnoser::where(FunctionIndex f, bool on_tensor) const {
  if (!on_tensor) return m_.function_name(f);
  return "the leaf tensor of " + m_.function_name(f) + " (released)";
}

void Diagnoser::find_all() {
  leaks_and_stale_fires();
  collateral_removals();
  last_prepare_ = last_prepares(m_);
  for (FunctionIndex f = 0; f < m_.functions().size(); ++f) per_function(f);
  failed_removals();
  for (Finding& f : diagnose_reducers(m_)) emit(std::move(f));
  for (Finding& f : diagnose_malformed(m_)) emit(std::move(f));
  for (Finding& f : diagnose_failures(m_)) emit(std::move(f));
}

std::vector<Finding> Diagnoser::run() {
  find_all();
  // Stable by (at, kind): the order is sorted as indices and each finding
  // moved once (a merge sort moved 600k findings of ~150 bytes twenty times).
  std::vector<uint32_t> order(out_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return std::tie(out_[a].at, out_[a].kind, a) < std::tie(out_[b].at, out_[b].kind, b);
  });
  std::vector<Finding> sorted;
  sorted.reserve(out_.size());
  for (uint32_t i : order) sorted.push_back(std::move(out_[i]));
  return sorted;
}

void Diagnoser::run(FindingTable& table) {
  table_ = &table;
  find_all();
  table.finish();
}

}  // namespace detail

std::vector<Finding> diagnose(const Model& model) { return detail::Diagnoser(model).run(); }

FindingTable diagnose_table(const Model& model) {
  FindingTable table;
  detail::Diagnoser(model).run(table);
  return table;
}

}  // namespace hookscope::analysis
