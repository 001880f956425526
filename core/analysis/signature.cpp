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
  if (auto it = memo_.find(root); it != memo_.end()) return it->second;
  std::vector<std::pair<FunctionIndex, bool>> stack{{root, false}};
  std::unordered_map<FunctionIndex, bool> expanded;
  while (!stack.empty()) {
    auto [f, children_done] = stack.back();
    if (memo_.count(f)) {
      stack.pop_back();
      continue;
    }
    const FunctionInfo& info = m_.functions()[f];
    if (!children_done) {
      if (expanded[f]) {  // a cycle: no recorded graph has one; do not loop
        stack.pop_back();
        continue;
      }
      expanded[f] = true;
      stack.back().second = true;
      for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
        if (!memo_.count(m_.edges()[e].to)) stack.emplace_back(m_.edges()[e].to, false);
      }
      continue;
    }
    stack.pop_back();
    uint64_t h = mix(text_hash(m_.str(info.name)), text_hash(m_.str(info.label)));
    if (!info.announced) h = mix(h, text_hash("unknown"));
    for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
      const EdgeInfo& edge = m_.edges()[e];
      auto child = memo_.find(edge.to);
      h = mix(mix(h, edge.input_nr), child == memo_.end() ? 0 : child->second);
    }
    memo_.emplace(f, h);
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
