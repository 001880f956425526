#include "analysis/signature.h"

#include <algorithm>

namespace hookscope::analysis {

namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h * 0xff51afd7ed558ccdull;
}

uint64_t text_hash(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (char c : s) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
  return h;
}

}  // namespace

uint64_t Signatures::of(FunctionIndex root) {
  if (state_.empty()) {
    state_.assign(m_.functions().size(), kUnseen);
    memo_.assign(m_.functions().size(), 0);
  }
  if (state_[root] == kSigned) return memo_[root];
  std::vector<std::pair<FunctionIndex, bool>> stack{{root, false}};
  while (!stack.empty()) {
    auto [f, children_done] = stack.back();
    if (state_[f] == kSigned) {
      stack.pop_back();
      continue;
    }
    const FunctionInfo& info = m_.functions()[f];
    if (!children_done) {
      // Expanded and not signed: f is on the path being signed, a cycle (no
      // recorded graph has one); do not loop. Only nodes on that path can be
      // in this state, since every node expanded is signed before the walk ends.
      if (state_[f] == kExpanded) {
        stack.pop_back();
        continue;
      }
      state_[f] = kExpanded;
      stack.back().second = true;
      for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
        if (state_[m_.edges()[e].to] != kSigned) stack.emplace_back(m_.edges()[e].to, false);
      }
      continue;
    }
    stack.pop_back();
    uint64_t h = mix(text_hash(m_.str(info.name)), text_hash(m_.str(info.label)));
    if (!info.announced) h = mix(h, text_hash("unknown"));
    for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
      const EdgeInfo& edge = m_.edges()[e];
      h = mix(mix(h, edge.input_nr), state_[edge.to] == kSigned ? memo_[edge.to] : 0);
    }
    memo_[f] = h;
    state_[f] = kSigned;
  }
  return memo_[root];
}

bool has_several_ranks(const Model& m) {
  const uint16_t rank0 = m.functions().empty() ? 0 : m.functions()[0].rank;
  return std::any_of(m.functions().begin(), m.functions().end(),
                     [&](const FunctionInfo& info) { return info.rank != rank0; });
}

std::string matched_name(const Model& m, FunctionIndex f, bool several) {
  std::string name = m.function_name(f);
  if (several) name += " on rank " + std::to_string(m.functions()[f].rank);
  return name;
}

}  // namespace hookscope::analysis
