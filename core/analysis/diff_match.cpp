// Note [Parameter copies in a diff]: keys and names of Functions across traces.

#include "analysis/diff_match.h"

#include <fmt/format.h>

#include <algorithm>
#include <unordered_map>

namespace hookscope::analysis {

namespace {

// (rank, signature, generation) in hash tables: hundreds of thousands of
// Functions are counted here per diff (a std::map of tuples was a tenth of
// `diff` on 300k hooked Functions).
struct Equals {
  uint16_t rank;
  uint64_t signature;
  uint32_t generation;
  bool operator==(const Equals&) const = default;
};
struct EqualsHash {
  size_t operator()(const Equals& k) const {
    const uint64_t generation = uint64_t{k.generation} * 0x9e3779b97f4a7c15ull;
    return std::hash<uint64_t>()(k.signature ^ (uint64_t{k.rank} << 48) ^ generation);
  }
};

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
  std::unordered_map<Equals, uint32_t, EqualsHash> seen;
  std::unordered_map<Equals, std::vector<FunctionIndex>, EqualsHash> by_parameter;  // generation 0
  for (FunctionIndex f = 0; f < fs.size(); ++f) {  // FunctionIndex order is creation order
    if (!is_leaf(f) || fs[f].previous != kNoIndex) continue;
    const uint64_t s = sig_.of(f);
    leaf_ordinal_[f] = seen[{fs[f].rank, s, gen_[f]}]++;
    by_parameter[{fs[f].rank, s, 0}].push_back(f);
  }
  for (const auto& entry : by_parameter) {
    const auto& leaves = entry.second;  // (clang before 16 cannot capture a structured binding)
    const uint32_t first_gen = gen_[leaves.front()];
    const bool several = std::any_of(leaves.begin(), leaves.end(),
                                     [&](FunctionIndex f) { return gen_[f] != first_gen; });
    if (several) {
      for (FunctionIndex f : leaves) copied_[f] = 1;
    }
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
  std::vector<size_t> by_creation(functions.size());
  for (size_t i = 0; i < functions.size(); ++i) by_creation[i] = i;
  std::stable_sort(by_creation.begin(), by_creation.end(), [&](size_t x, size_t y) {
    return fs[functions[x]].created_at < fs[functions[y]].created_at;
  });
  std::vector<MatchKey> out(functions.size());
  std::unordered_map<Equals, uint32_t, EqualsHash> seen;
  for (size_t i : by_creation) {
    const FunctionIndex r = root(functions[i]);
    MatchKey& k = out[i];
    k.rank = fs[r].rank;
    k.signature = sig_.of(r);
    k.generation = gen_[r];
    k.leaf = is_leaf(r);
    k.ordinal = k.leaf ? leaf_ordinal_[r] : seen[{k.rank, k.signature, k.generation}]++;
  }
  return out;
}

std::string FunctionMatch::name(FunctionIndex f) const {
  std::string out = matched_name(m_, f, several_ranks_);
  const FunctionIndex r = root(f);
  if (copied_[r]) out += fmt::format(", gen {}", gen_[r]);
  return out;
}

}  // namespace hookscope::analysis
