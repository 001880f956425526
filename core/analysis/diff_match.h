#pragma once
// Keys and names of Functions for diffing two traces: a leaf's successive
// AccumulateGrads are one Function, and copies of a parameter built in
// different module generations are different ones. See Note [Parameter
// copies in a diff].

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/signature.h"

namespace hookscope::analysis {

// Note [Parameter copies in a diff]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A rank that fails and is replaced builds its module again (Note [Module
// generations], render/layout/story.h): its parameters then exist as several
// leaves with one name, hence one signature. Keyed by (rank, signature,
// ordinal among the Functions that hold hooks), the gen 0 copy of one trace
// met the gen 1 copy of the other as soon as one run had removed the old
// copy's hooks, and two rows read "AccumulateGrad (0.bias [32]) on rank 1".
// So a leaf is keyed by its generation (its rank's latest process group
// generation when its first AccumulateGrad was created, as the GUI counts
// it) and its ordinal among the leaves of that (rank, signature,
// generation), over the whole trace, and named with ", gen N" where its rank
// holds copies of it in several generations. A leaf's AccumulateGrads that
// come and go (Note [Leaf hooks live on the tensor]) share its first one's
// key. Other Functions keep the ordinal among those counted.
class FunctionMatch {
 public:
  explicit FunctionMatch(const Model& m);
  // Its leaf's first AccumulateGrad (itself when not a leaf's).
  FunctionIndex root(FunctionIndex f) const;
  uint32_t generation(FunctionIndex f) const { return gen_[root(f)]; }
  // One key per Function in `functions` (distinct roots), in that order; the
  // ordinal of a non-leaf counts its equals in `functions` by creation.
  std::vector<MatchKey> keys(const std::vector<FunctionIndex>& functions);
  // matched_name(), and ", gen N" for a copied parameter.
  std::string name(FunctionIndex f) const;
  Signatures& signatures() { return sig_; }

 private:
  bool is_leaf(FunctionIndex root) const;
  const Model& m_;
  Signatures sig_;
  std::vector<uint32_t> gen_;          // per Function, its own creation's generation
  std::vector<uint32_t> leaf_ordinal_;  // per leaf root, among its (rank, signature, generation)
  std::vector<uint8_t> copied_;         // per leaf root: its rank has it in several generations
  bool several_ranks_ = false;          // has_several_ranks(), asked once
};

}  // namespace hookscope::analysis
