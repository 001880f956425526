// Note [Parameter copies in a diff]: keys and names of Functions across traces.

#include "analysis/diff_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <tuple>

namespace hookscope::analysis {

namespace {

// Note [Ordinals by sorting]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Functions equal in (rank, signature, generation) are numbered by creation
// order. Hundreds of thousands are numbered per diff, so they are sorted by
// (rank, signature, generation, creation) and numbered along each run of
// equals: a hash table of counters, or of a vector per parameter, cost a
// heap node per Function and was a third of `diff` on 300k stale lanes.
struct Equal {
  uint16_t rank;
  uint64_t signature;
  uint32_t generation;
  uint64_t order;  // creation order among the equals
  uint32_t slot;   // the caller's
  auto same(const Equal& o) const {
    return rank == o.rank && signature == o.signature && generation == o.generation;
  }
  bool operator<(const Equal& o) const {
    return std::tie(rank, signature, generation, order, slot) <
           std::tie(o.rank, o.signature, o.generation, o.order, o.slot);
  }
};

// ordinal[e.slot] for each e of `equals`: how many equal ones come before it.
template <typename Ordinals>
void number(std::vector<Equal>& equals, Ordinals& ordinal) {
  std::sort(equals.begin(), equals.end());
  uint32_t n = 0;
  for (size_t i = 0; i < equals.size(); ++i) {
    n = i > 0 && equals[i].same(equals[i - 1]) ? n + 1 : 0;
    ordinal[equals[i].slot] = n;
  }
}

}  // namespace

FunctionMatch::FunctionMatch(const Model& m) : m_(m), sig_(m), several_ranks_(has_several_ranks(m)) {
  const auto& fs = m.functions();
  // Per rank, (event, generation) of its process groups (the actor field), in event order.
  std::vector<std::vector<std::pair<EventIndex, uint32_t>>> groups;
  for (EventIndex i : m.events_of_kind(trace::EventKind::kProcessGroupCreated)) {
    const trace::Event e = m.event(i);
    if (groups.size() <= e.rank) groups.resize(static_cast<size_t>(e.rank) + 1);
    groups[e.rank].emplace_back(i, e.as<trace::ev::ProcessGroupCreated>().generation);
  }
  gen_.resize(fs.size(), 0);
  for (FunctionIndex f = 0; f < fs.size(); ++f) {
    if (fs[f].rank >= groups.size()) continue;
    const auto& g = groups[fs[f].rank];
    const auto it = std::upper_bound(g.begin(), g.end(), std::make_pair(fs[f].created_at, UINT32_MAX));
    if (it != g.begin()) gen_[f] = std::prev(it)->second;
  }
  leaf_ordinal_.assign(fs.size(), 0);
  copied_.assign(fs.size(), 0);
  std::vector<Equal> leaves;  // Note [Ordinals by sorting]
  for (FunctionIndex f = 0; f < fs.size(); ++f) {  // FunctionIndex order is creation order
    if (!is_leaf(f) || fs[f].previous != kNoIndex) continue;
    leaves.push_back({fs[f].rank, sig_.of(f), gen_[f], f, f});
  }
  number(leaves, leaf_ordinal_);
  // Sorted, a parameter's leaves (one rank and signature) are contiguous,
  // by generation: copied when its first and last generations differ.
  for (size_t begin = 0, end = 0; begin < leaves.size(); begin = end) {
    while (end < leaves.size() && leaves[end].rank == leaves[begin].rank &&
           leaves[end].signature == leaves[begin].signature) {
      ++end;
    }
    if (leaves[begin].generation == leaves[end - 1].generation) continue;
    for (size_t i = begin; i < end; ++i) copied_[leaves[i].slot] = 1;
  }
}

FunctionIndex FunctionMatch::root(FunctionIndex f) const {
  const auto& fs = m_.functions();
  for (size_t guard = 0; guard < fs.size() && fs[f].previous != kNoIndex; ++guard) f = fs[f].previous;
  return f;
}

bool FunctionMatch::is_leaf(FunctionIndex f) const {
  const FunctionInfo& info = m_.functions()[f];
  return info.is_leaf_accumulator() || info.previous != kNoIndex || info.next != kNoIndex;
}

std::vector<MatchKey> FunctionMatch::keys(const std::vector<FunctionIndex>& functions) {
  const auto& fs = m_.functions();
  std::vector<MatchKey> out(functions.size());
  std::vector<Equal> others;  // not leaves: numbered among `functions` (Note [Ordinals by sorting])
  for (size_t i = 0; i < functions.size(); ++i) {
    const FunctionIndex r = root(functions[i]);
    MatchKey& k = out[i];
    k.rank = fs[r].rank;
    k.signature = sig_.of(r);
    k.generation = gen_[r];
    k.leaf = is_leaf(r);
    if (k.leaf) {
      k.ordinal = leaf_ordinal_[r];
    } else {
      others.push_back({k.rank, k.signature, k.generation, fs[functions[i]].created_at, static_cast<uint32_t>(i)});
    }
  }
  struct Ordinals {  // writes into out[slot].ordinal
    std::vector<MatchKey>& out;
    uint32_t& operator[](uint32_t slot) { return out[slot].ordinal; }
  } ordinals{out};
  number(others, ordinals);
  return out;
}

std::string FunctionMatch::name(FunctionIndex f) const {
  std::string out = matched_name(m_, f, several_ranks_);
  const FunctionIndex r = root(f);
  if (copied_[r]) out += fmt::format(", gen {}", gen_[r]);
  return out;
}

}  // namespace hookscope::analysis
