#include "analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "analysis/diff_match.h"
#include "analysis/signature.h"
#include "analysis/state.h"

namespace hookscope::analysis {

namespace {

struct EndCounts {
  FunctionIndex function = kNoIndex;
  std::array<uint32_t, trace::kNumHookKinds> hooks{};
};

// Hooks per Function right after event `at`, a leaf's counted on its live
// AccumulateGrad or, while it has none, on its last (one row per leaf:
// Note [Parameter copies in a diff]).
std::vector<EndCounts> counts_at(const Model& m, FunctionMatch& match, size_t at) {
  std::map<FunctionIndex, EndCounts> by;  // by leaf root
  if (m.num_events() == 0) return {};
  const State st = m.state_at(std::min(at, m.num_events() - 1));
  auto row = [&](FunctionIndex f) -> EndCounts& {
    EndCounts& c = by[match.root(f)];
    if (c.function == kNoIndex || m.functions()[f].created_at >= m.functions()[c.function].created_at) {
      c.function = f;
    }
    return c;
  };
  for (const FunctionAt& f : st.functions) {
    if (f.num_hooks() == 0) continue;
    EndCounts& c = row(f.function);
    for (int k = 0; k < trace::kNumHookKinds; ++k) c.hooks[k] += f.hooks[k].size();
  }
  for (const HookAt& h : st.tensor_hooks) ++row(h.function).hooks[static_cast<int>(m.hooks()[h.hook].kind)];
  std::vector<EndCounts> out;
  for (auto& [f, c] : by) out.push_back(c);
  return out;
}

std::map<MatchKey, EndCounts> keyed(const Model& m, FunctionMatch& match, size_t at) {
  const std::vector<EndCounts> counts = counts_at(m, match, at);
  std::vector<FunctionIndex> functions;
  for (const EndCounts& c : counts) functions.push_back(c.function);
  const std::vector<MatchKey> keys = match.keys(functions);
  std::map<MatchKey, EndCounts> out;
  for (size_t i = 0; i < counts.size(); ++i) out.emplace(keys[i], counts[i]);
  return out;
}

// A finding as the other trace would have it (Note [Matching Functions across
// traces]): its kind, its Function's signature, its owner's name - hashed,
// so that matching hundreds of thousands of findings allocates no strings
// and costs a hash lookup each (a map of (kind, signature, name) took most
// of `diff` on 300k stale lanes).
struct FindingKey {
  FindingKind kind;
  uint64_t signature, owner;
  bool operator==(const FindingKey&) const = default;
};
struct FindingKeyHash {
  size_t operator()(const FindingKey& k) const {
    return std::hash<uint64_t>()(k.signature * 0x9e3779b97f4a7c15ull ^ k.owner ^ static_cast<uint64_t>(k.kind) << 56);
  }
};

class FindingKeys {
 public:
  FindingKeys(const Model& m, Signatures& sig) : m_(m), sig_(sig), owner_(m.owners().size(), 0) {}
  FindingKey of(const Finding& f) {
    return {f.kind, f.function == kNoIndex ? 0 : sig_.of(f.function), f.owner == kNoIndex ? 0 : owner(f.owner)};
  }

 private:
  uint64_t owner(OwnerIndex o) {  // FNV-1a of the name, once per owner; 0 is "no owner"
    if (owner_[o] == 0) {
      uint64_t h = 1469598103934665603ull;
      for (char c : m_.owner_name(o)) h = (h ^ static_cast<uint8_t>(c)) * 1099511628211ull;
      owner_[o] = h | 1;
    }
    return owner_[o];
  }
  const Model& m_;
  Signatures& sig_;
  std::vector<uint64_t> owner_;
};

// Findings of `mine` up to event `mine_at` with no counterpart among those of
// `other` up to `other_at` (duplicates counted).
std::vector<Finding> unmatched(FindingKeys& keys, const std::vector<Finding>& mine, size_t mine_at,
                               FindingKeys& other_keys, const std::vector<Finding>& other, size_t other_at) {
  std::unordered_map<FindingKey, int, FindingKeyHash> budget;
  budget.reserve(other.size());
  for (const Finding& f : other) {
    if (f.at <= other_at) ++budget[other_keys.of(f)];
  }
  std::vector<Finding> out;
  for (const Finding& f : mine) {
    if (f.at > mine_at) continue;
    const auto it = budget.find(keys.of(f));
    if (it != budget.end() && it->second > 0) {
      --it->second;
    } else {
      out.push_back(f);
    }
  }
  return out;
}

uint32_t sum(const std::array<uint32_t, trace::kNumHookKinds>& a) {
  uint32_t n = 0;
  for (uint32_t x : a) n += x;
  return n;
}

}  // namespace

uint64_t function_signature(const Model& model, FunctionIndex function) {
  return Signatures(model).of(function);
}

uint32_t FunctionCounts::total_a() const { return sum(hooks_a); }
uint32_t FunctionCounts::total_b() const { return sum(hooks_b); }

size_t ModelDiff::num_differing() const {
  return std::count_if(functions.begin(), functions.end(),
                       [](const FunctionCounts& c) { return c.differs(); });
}

ModelDiff diff_models(const Model& a, const std::vector<Finding>& findings_a, const Model& b,
                      const std::vector<Finding>& findings_b) {
  return diff_models_at(a, findings_a, a.num_events() ? a.num_events() - 1 : 0, b, findings_b,
                        b.num_events() ? b.num_events() - 1 : 0);
}

ModelDiff diff_models_at(const Model& a, const std::vector<Finding>& all_a, size_t at_a, const Model& b,
                         const std::vector<Finding>& all_b, size_t at_b) {
  FunctionMatch match_a(a), match_b(b);
  return diff_models_at(a, match_a, all_a, at_a, b, match_b, all_b, at_b);
}

ModelDiff diff_models_at(const Model& a, FunctionMatch& match_a, const std::vector<Finding>& all_a, size_t at_a,
                         const Model& b, FunctionMatch& match_b, const std::vector<Finding>& all_b, size_t at_b) {
  // only findings that hold by then count
  FindingKeys keys_a(a, match_a.signatures()), keys_b(b, match_b.signatures());
  ModelDiff d;
  std::map<MatchKey, FunctionCounts> rows;
  for (auto& [key, c] : keyed(a, match_a, at_a)) {
    FunctionCounts& row = rows[key];
    row.function = match_a.name(c.function);
    row.a = c.function;
    row.hooks_a = c.hooks;
  }
  for (auto& [key, c] : keyed(b, match_b, at_b)) {
    FunctionCounts& row = rows[key];
    if (row.function.empty()) row.function = match_b.name(c.function);
    row.b = c.function;
    row.hooks_b = c.hooks;
  }
  for (auto& [key, row] : rows) d.functions.push_back(std::move(row));
  // (make_tuple copied both names at every comparison: 10M strings for 300k rows)
  std::stable_sort(d.functions.begin(), d.functions.end(),
                   [](const FunctionCounts& x, const FunctionCounts& y) {
                     const bool dx = x.differs(), dy = y.differs();
                     return dx != dy ? dx : x.function < y.function;
                   });
  d.only_a = unmatched(keys_a, all_a, at_a, keys_b, all_b, at_b);
  d.only_b = unmatched(keys_b, all_b, at_b, keys_a, all_a, at_a);
  return d;
}

ModelDiff diff_models(const Model& a, const Model& b) {
  return diff_models(a, diagnose(a), b, diagnose(b));
}

std::string format_diff(const ModelDiff& d, std::string_view name_a, std::string_view name_b,
                        size_t max_lines) {
  std::string out = fmt::format("hooks {}: {} of {} Function(s) differ ({} vs {})\n",
                                d.where.empty() ? "at the end" : d.where, d.num_differing(),
                                d.functions.size(), name_a, name_b);
  size_t shown = 0;
  for (const FunctionCounts& c : d.functions) {
    if (!c.differs()) break;
    if (shown++ == max_lines) {
      out += fmt::format("    ... {} more\n", d.num_differing() - max_lines);
      break;
    }
    std::string kinds;
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      if (c.hooks_a[k] == c.hooks_b[k]) continue;
      kinds += fmt::format("{}{} {} -> {}", kinds.empty() ? "" : ", ",
                           trace::to_string(static_cast<trace::HookKind>(k)), c.hooks_a[k],
                           c.hooks_b[k]);
    }
    out += fmt::format("    {}: {}\n", c.function, kinds);
  }
  auto section = [&](const std::vector<Finding>& only, std::string_view name) {
    const FindingCounts n = count_findings(only);
    out += fmt::format("findings only in {}: {}", name, only.size());
    for (int k = 0; k < kNumFindingKinds; ++k) {
      if (n.per_kind[k]) {
        out += fmt::format(", {} {}", n.per_kind[k], to_string(static_cast<FindingKind>(k)));
      }
    }
    out += "\n";
    for (size_t i = 0; i < only.size() && i < max_lines; ++i) {
      out += fmt::format("    {} {}: {}\n", to_string(only[i].severity), to_string(only[i].kind),
                         only[i].message);
    }
    if (only.size() > max_lines) out += fmt::format("    ... {} more\n", only.size() - max_lines);
  };
  section(d.only_a, name_a);
  section(d.only_b, name_b);
  return out;
}

}  // namespace hookscope::analysis
