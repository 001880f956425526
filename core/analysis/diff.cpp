#include "analysis/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <future>
#include <tuple>

#include "analysis/diff_match.h"
#include "analysis/signature.h"
#include "analysis/state.h"

namespace hookscope::analysis {

namespace {

constexpr size_t kTwoThreadDiff = 20'000;  // Functions and findings of both sides

struct EndCounts {
  FunctionIndex function = kNoIndex;
  std::array<uint32_t, trace::kNumHookKinds> hooks{};
};

// Hooks per Function right after event `at`, a leaf's counted on its live
// AccumulateGrad or, while it has none, on its last (one row per leaf:
// Note [Parameter copies in a diff]); by leaf root.
std::vector<EndCounts> counts_at(const Model& m, FunctionMatch& match, size_t at) {
  if (m.num_events() == 0) return {};
  const State st = m.state_at(std::min(at, m.num_events() - 1));
  std::vector<FunctionIndex> roots;
  std::vector<EndCounts> rows;
  std::vector<uint32_t> slot(m.functions().size(), UINT32_MAX);  // per root, its row
  auto row = [&](FunctionIndex f) -> EndCounts& {
    const FunctionIndex r = match.root(f);
    if (slot[r] == UINT32_MAX) {
      slot[r] = static_cast<uint32_t>(rows.size());
      roots.push_back(r);
      rows.emplace_back();
    }
    EndCounts& c = rows[slot[r]];
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
  std::sort(roots.begin(), roots.end());
  std::vector<EndCounts> out;
  out.reserve(roots.size());
  for (FunctionIndex r : roots) out.push_back(rows[slot[r]]);
  return out;
}

// The rows of one side by key, ascending; of equal keys (a hostile trace's
// cycle of AccumulateGrads) the first. Sorted arrays, not a std::map: a
// node per row was a sixth of `diff` on 300k stale lanes.
std::vector<std::pair<MatchKey, EndCounts>> keyed(const Model& m, FunctionMatch& match, size_t at) {
  const std::vector<EndCounts> counts = counts_at(m, match, at);
  std::vector<FunctionIndex> functions;
  functions.reserve(counts.size());
  for (const EndCounts& c : counts) functions.push_back(c.function);
  const std::vector<MatchKey> keys = match.keys(functions);
  std::vector<std::pair<MatchKey, EndCounts>> out;
  out.reserve(counts.size());
  for (size_t i = 0; i < counts.size(); ++i) out.emplace_back(keys[i], counts[i]);
  std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  out.erase(std::unique(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
            out.end());
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
  auto operator<=>(const FindingKey&) const = default;
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

// One side's findings up to event `at`, keyed: (key, index in its findings), sorted.
using KeyedFindings = std::vector<std::pair<FindingKey, size_t>>;
KeyedFindings keyed_findings(FindingKeys& keys, const std::vector<Finding>& findings, size_t at) {
  KeyedFindings out;
  out.reserve(findings.size());
  for (size_t i = 0; i < findings.size(); ++i) {
    if (findings[i].at <= at) out.emplace_back(keys.of(findings[i]), i);
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Findings of `mine` with no counterpart in `theirs` (duplicates counted: of
// n equal findings in `mine` and m in `theirs`, the first m of `mine` are
// matched). Sorted arrays, not a hash table of counters (Note [Ordinals by
// sorting]).
std::vector<Finding> unmatched(const std::vector<Finding>& mine, const KeyedFindings& ours,
                               const KeyedFindings& theirs) {
  std::vector<size_t> left;  // indices in mine without a counterpart
  auto t = theirs.begin();
  for (size_t begin = 0, end = 0; begin < ours.size(); begin = end) {
    const FindingKey& key = ours[begin].first;
    while (end < ours.size() && ours[end].first == key) ++end;
    const auto first_of_key = [](const std::pair<FindingKey, size_t>& x, const FindingKey& k) { return x.first < k; };
    t = std::lower_bound(t, theirs.end(), key, first_of_key);
    size_t budget = 0;
    while (t != theirs.end() && t->first == key) ++budget, ++t;
    for (size_t i = begin + std::min(budget, end - begin); i < end; ++i) left.push_back(ours[i].second);
  }
  std::sort(left.begin(), left.end());
  std::vector<Finding> out;
  out.reserve(left.size());
  for (size_t i : left) out.push_back(mine[i]);
  return out;
}

// What diff_models_at needs of one side, made on its own thread: the rows
// and the findings, keyed (each side reads only its own model and match).
struct Side {
  std::vector<std::pair<MatchKey, EndCounts>> rows;
  KeyedFindings findings;
};
Side side(const Model& m, FunctionMatch& match, const std::vector<Finding>& findings, size_t at) {
  FindingKeys keys(m, match.signatures());
  return {keyed(m, match, at), keyed_findings(keys, findings, at)};
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
  // Only findings that hold by then count. B's side is made on a second
  // thread (half of a diff's time on 300k stale lanes): Models are
  // read-only, each FunctionMatch is used by its side alone (the caller
  // passes one per model). Small diffs stay on this thread.
  const size_t size = a.functions().size() + b.functions().size() + all_a.size() + all_b.size();
  auto pending_b = std::async(size >= kTwoThreadDiff ? std::launch::async : std::launch::deferred,
                              [&] { return side(b, match_b, all_b, at_b); });
  const Side side_a = side(a, match_a, all_a, at_a);
  const Side side_b = pending_b.get();
  ModelDiff d;
  // Both sides' rows by key (ascending, one per key): merged.
  const auto& rows_a = side_a.rows;
  const auto& rows_b = side_b.rows;
  d.functions.reserve(std::max(rows_a.size(), rows_b.size()));
  for (auto ia = rows_a.begin(), ib = rows_b.begin(); ia != rows_a.end() || ib != rows_b.end();) {
    const bool from_a = ia != rows_a.end() && (ib == rows_b.end() || !(ib->first < ia->first));
    const bool from_b = ib != rows_b.end() && (ia == rows_a.end() || !(ia->first < ib->first));
    FunctionCounts& row = d.functions.emplace_back();
    if (from_a) {
      row.function = match_a.name(ia->second.function);
      row.a = ia->second.function;
      row.hooks_a = ia->second.hooks;
      ++ia;
    }
    if (from_b) {
      if (row.function.empty()) row.function = match_b.name(ib->second.function);
      row.b = ib->second.function;
      row.hooks_b = ib->second.hooks;
      ++ib;
    }
  }
  // Those that differ first, then by name, stably. Sorted as indices, each
  // row moved once (make_tuple copied both names at every comparison: 10M
  // strings for 300k rows; a merge sort of the rows moved each ~20 times).
  std::vector<uint32_t> order(d.functions.size());
  std::vector<uint8_t> differs(d.functions.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    order[i] = i;
    differs[i] = d.functions[i].differs();
  }
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    if (differs[x] != differs[y]) return differs[x] > differs[y];
    const int c = d.functions[x].function.compare(d.functions[y].function);
    return c != 0 ? c < 0 : x < y;
  });
  std::vector<FunctionCounts> sorted;
  sorted.reserve(order.size());
  for (uint32_t i : order) sorted.push_back(std::move(d.functions[i]));
  d.functions = std::move(sorted);
  d.only_a = unmatched(all_a, side_a.findings, side_b.findings);
  d.only_b = unmatched(all_b, side_b.findings, side_a.findings);
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
