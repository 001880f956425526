#pragma once
// The Diagnoser behind diagnose() (analysis/diagnostics.h), shared by the
// files that hold its rules: diagnostics.cpp (driver and lookups),
// diagnostics_hooks.cpp (leaks, stale fires, removals),
// diagnostics_function.cpp (per-Function rules). Not a public header.

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_table.h"

namespace hookscope::analysis::detail {

constexpr size_t kMaxEvidence = 8;  // proving events kept per finding

class Diagnoser {
 public:
  explicit Diagnoser(const Model& m) : m_(m) { index_segments_by_hook(); }
  std::vector<Finding> run();
  // The same findings into `table`, in the same order (Note [Compact findings]).
  void run(FindingTable& table);

 private:
  void index_segments_by_hook();
  FunctionIndex function_at(HookIndex h, EventIndex e, bool* on_tensor = nullptr) const;
  Finding make(FindingKind kind, Severity severity, FunctionIndex f, OwnerIndex o) const;
  std::string hook_words(HookIndex h) const;
  std::string where(FunctionIndex f, bool on_tensor) const;
  void leaks_and_stale_fires();
  void collateral_removals();
  void fires_after_removal(HookIndex h);
  void per_function(FunctionIndex f);
  void failed_removals();
  void find_all();
  void emit(Finding&& f) {
    if (table_) {
      table_->add(std::move(f));
    } else {
      out_.push_back(std::move(f));
    }
  }

  const Model& m_;
  std::vector<uint32_t> seg_begin_, seg_of_hook_;
  std::vector<EventIndex> last_prepare_;  // per owner (Note [Hook growth])
  std::vector<Finding> out_;
  FindingTable* table_ = nullptr;  // where findings go, when not out_
};

inline void add_evidence(Finding& f, size_t index) {
  if (index != kNever) f.events.push_back(index);
}

inline void finish_evidence(Finding& f) {
  std::sort(f.events.begin(), f.events.end());
  f.events.erase(std::unique(f.events.begin(), f.events.end()), f.events.end());
}

}  // namespace hookscope::analysis::detail
