#pragma once
// Picking findings out of a diagnose() result, for the analysis tests.

#include <string>
#include <vector>

#include "analysis/diagnostics.h"

namespace hookscope::testing {

// The findings of one kind, in their order.
inline std::vector<analysis::Finding> of_kind(const std::vector<analysis::Finding>& all,
                                              analysis::FindingKind kind) {
  std::vector<analysis::Finding> out;
  for (const analysis::Finding& f : all) {
    if (f.kind == kind) out.push_back(f);
  }
  return out;
}

// Whether a finding's message names `text`.
inline bool mentions(const analysis::Finding& f, const std::string& text) {
  return f.message.find(text) != std::string::npos;
}

}  // namespace hookscope::testing
