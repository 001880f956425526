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

std::tuple<FindingKind, uint64_t, std::string> finding_key(const Model& m, Signatures& sig,
                                                           const Finding& f) {
  return {f.kind, f.function == kNoIndex ? 0 : sig.of(f.function),
          f.owner == kNoIndex ? std::string() : m.owner_name(f.owner)};
}

std::vector<Finding> unmatched(const Model& m, Signatures& sig, const std::vector<Finding>& mine,
                               const Model& other_m, Signatures& other_sig,
                               const std::vector<Finding>& other) {
  std::map<std::tuple<FindingKind, uint64_t, std::string>, int> budget;
  for (const Finding& f : other) ++budget[finding_key(other_m, other_sig, f)];
  std::vector<Finding> out;
  for (const Finding& f : mine) {
    int& left = budget[finding_key(m, sig, f)];
    if (left > 0) {
      --left;
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
  auto until = [](const std::vector<Finding>& all, size_t at) {
    std::vector<Finding> out;
    for (const Finding& f : all) {
      if (f.at <= at) out.push_back(f);
    }
    return out;
  };
  const std::vector<Finding> findings_a = until(all_a, at_a), findings_b = until(all_b, at_b);
  Signatures &sig_a = match_a.signatures(), &sig_b = match_b.signatures();
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
  std::stable_sort(d.functions.begin(), d.functions.end(),
                   [](const FunctionCounts& x, const FunctionCounts& y) {
                     return std::make_tuple(!x.differs(), x.function) <
                            std::make_tuple(!y.differs(), y.function);
                   });
  d.only_a = unmatched(a, sig_a, findings_a, b, sig_b, findings_b);
  d.only_b = unmatched(b, sig_b, findings_b, a, sig_a, findings_a);
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
