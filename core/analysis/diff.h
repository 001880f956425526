#pragma once
// Two models side by side, e.g. the same scenario under DDP policy by-key and
// none: the hooks on each Function at the end, and the findings present in
// only one. See Note [Matching Functions across traces].

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Matching Functions across traces]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Ids differ between runs, so Functions are matched by what they are and
// where they sit: a signature hashes the name, the label and, recursively,
// the signatures of the next Functions with their input_nr (the whole
// subgraph towards the leaves). Functions alive at the end with the
// same signature are told apart by creation order. An AccumulateGrad is thus
// matched by its parameter label, an AddmmBackward0 by the parameters and
// layers below it. Findings are matched by (kind, signature of their
// Function, owner label), counting duplicates.
uint64_t function_signature(const Model& model, FunctionIndex function);

struct FunctionCounts {
  std::string function;                     // as a user reads it
  FunctionIndex a = kNoIndex, b = kNoIndex;  // kNoIndex: nothing matched on that side
  std::array<uint32_t, trace::kNumHookKinds> hooks_a{}, hooks_b{};
  uint32_t total_a() const;
  uint32_t total_b() const;
  bool differs() const { return hooks_a != hooks_b; }
};

struct ModelDiff {
  std::string where;  // "" = at the end; else the matching point ("after backward 5")
  // Every Function with hooks at the end (on it, or on its leaf tensor) in
  // either model; those that differ first, then by name.
  std::vector<FunctionCounts> functions;
  std::vector<Finding> only_a;  // findings of a with no counterpart in b
  std::vector<Finding> only_b;
  size_t num_differing() const;
};

ModelDiff diff_models(const Model& a, const std::vector<Finding>& findings_a, const Model& b,
                      const std::vector<Finding>& findings_b);
ModelDiff diff_models(const Model& a, const Model& b);  // runs diagnose() on both
// The same right after event at_a of `a` and at_b of `b` (matching points,
// analysis/compare.h); only findings that hold by then count.
ModelDiff diff_models_at(const Model& a, const std::vector<Finding>& findings_a, size_t at_a,
                         const Model& b, const std::vector<Finding>& findings_b, size_t at_b);

// The same with each model's FunctionMatch (analysis/diff_match.h) built
// once, for callers that diff many pairs of events of the same two models.
class FunctionMatch;
ModelDiff diff_models_at(const Model& a, FunctionMatch& match_a, const std::vector<Finding>& findings_a,
                         size_t at_a, const Model& b, FunctionMatch& match_b,
                         const std::vector<Finding>& findings_b, size_t at_b);

// Text for a terminal; at most `max_lines` per section.
std::string format_diff(const ModelDiff& diff, std::string_view name_a, std::string_view name_b,
                        size_t max_lines = 20);

}  // namespace hookscope::analysis
