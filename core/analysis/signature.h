#pragma once
// Structural signatures of Functions, to match them across traces. See
// Note [Matching Functions across traces] (analysis/diff.h).

#include <cstdint>
#include <compare>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

// Memoised over one model: signing every Function costs O(graph) in all.
// (Arrays indexed by Function, not hash maps: a diff of 300k hooked
// Functions signs each one, and a map node per Function was most of it.)
class Signatures {
 public:
  explicit Signatures(const Model& m) : m_(m) {}
  uint64_t of(FunctionIndex root);

 private:
  enum : uint8_t { kUnseen, kExpanded, kSigned };
  const Model& m_;
  std::vector<uint64_t> memo_;   // per Function, valid where state_ is kSigned
  std::vector<uint8_t> state_;   // per Function; empty until the first of()
};

// How Functions are keyed across traces: (rank, signature, generation, leaf
// or not, ordinal among the equal ones of that rank by creation order). Ranks
// are compared rank to rank. See Note [Parameter copies in a diff] (diff_match.h).
struct MatchKey {
  uint16_t rank = 0;
  uint64_t signature = 0;
  uint32_t generation = 0;
  bool leaf = false;
  uint32_t ordinal = 0;
  friend auto operator<=>(const MatchKey&, const MatchKey&) = default;
};

// Whether the model's Functions come from several ranks: O(Functions), so a
// caller naming many Functions asks once (a scan per name made `diff`
// quadratic in hooked Functions: 40k took 4.7 s).
bool has_several_ranks(const Model& model);
// "AccumulateGrad (0.bias [32])", with " on rank 1" when `several_ranks`.
std::string matched_name(const Model& model, FunctionIndex function, bool several_ranks);

}  // namespace hookscope::analysis
