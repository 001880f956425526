// Folding findings for people: groups, counts and terminal text.

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <tuple>

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_table.h"

namespace hookscope::analysis {

namespace {

// Findings or FindingRows: the fields read are the same.
template <typename Rows>
std::vector<FindingGroup> group_rows(const Rows& findings) {
  std::vector<FindingGroup> out;
  std::map<FindingKind, size_t> where;
  for (size_t k = 0; k < findings.size(); ++k) {
    const auto& f = findings[k];
    auto [it, inserted] = where.try_emplace(f.kind, out.size());
    if (inserted) {
      FindingGroup g;
      g.kind = f.kind;
      g.severity = f.severity;
      g.first = k;
      out.push_back(g);
    }
    FindingGroup& g = out[it->second];
    ++g.findings;
    g.occurrences += f.count;
    g.severity = std::min(g.severity, f.severity);  // the most severe
    if (f.at < findings[g.first].at) g.first = k;
    auto owner = std::find_if(g.owners.begin(), g.owners.end(),
                              [&](const auto& o) { return o.first == f.owner; });
    if (owner == g.owners.end()) {
      g.owners.emplace_back(f.owner, 1);
    } else {
      ++owner->second;
    }
  }
  std::stable_sort(out.begin(), out.end(), [&](const FindingGroup& a, const FindingGroup& b) {
    return std::make_tuple(a.severity, findings[a.first].at) <
           std::make_tuple(b.severity, findings[b.first].at);
  });
  return out;
}

template <typename Rows>
FindingCounts count_rows(const Rows& findings) {
  FindingCounts c;
  for (const auto& f : findings) {
    ++c.per_kind[static_cast<int>(f.kind)];
    switch (f.severity) {
      case Severity::kError: ++c.errors; break;
      case Severity::kWarning: ++c.warnings; break;
      case Severity::kInfo: ++c.infos; break;
    }
  }
  return c;
}

}  // namespace

size_t findings_memory_bytes(const std::vector<Finding>& findings) {
  // A std::string holds up to 15 chars in place (libstdc++, libc++ 22).
  auto text = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 : 0; };
  size_t bytes = findings.capacity() * sizeof(Finding);
  for (const Finding& f : findings) {
    bytes += text(f.message) + text(f.detail) + f.events.capacity() * sizeof(size_t);
  }
  return bytes;
}

std::vector<FindingGroup> group_findings(const std::vector<Finding>& findings) { return group_rows(findings); }
std::vector<FindingGroup> group_findings(const FindingTable& findings) { return group_rows(findings.rows()); }
FindingCounts count_findings(const std::vector<Finding>& findings) { return count_rows(findings); }
FindingCounts count_findings(const FindingTable& findings) { return count_rows(findings.rows()); }

std::string format_findings(const Model& model, const std::vector<Finding>& findings,
                            size_t per_group) {
  if (findings.empty()) return "no findings\n";
  // Several ranks may each have a "Reducer 2": say whose.
  bool ranks = false;
  for (const Finding& f : findings) ranks = ranks || f.rank != findings.front().rank;
  auto owner_words = [&](OwnerIndex o) {
    if (o == kNoIndex) return std::string("no owner");
    std::string s = model.owner_name(o);
    if (ranks) s += fmt::format(" on rank {}", model.owners()[o].rank);
    return s;
  };
  const FindingCounts c = count_findings(findings);
  std::string out = fmt::format("{} finding(s): {} error(s), {} warning(s), {} info\n",
                                findings.size(), c.errors, c.warnings, c.infos);
  for (const FindingGroup& g : group_findings(findings)) {
    out += fmt::format("{} {}: {} finding(s), {} occurrence(s)", to_string(g.severity),
                       to_string(g.kind), g.findings, g.occurrences);
    constexpr size_t kOwnersShown = 6;
    for (size_t k = 0; k < g.owners.size() && k < kOwnersShown; ++k) {
      const auto [owner, n] = g.owners[k];
      out += fmt::format("{}{} ({})", k ? ", " : "; ", owner_words(owner), n);
    }
    if (g.owners.size() > kOwnersShown) {
      out += fmt::format(" and {} more owners", g.owners.size() - kOwnersShown);
    }
    out += "\n";
    size_t shown = 0;
    for (const Finding& f : findings) {
      if (f.kind != g.kind) continue;
      if (shown == per_group) {
        out += fmt::format("    ... {} more\n", g.findings - shown);
        break;
      }
      out += ranks ? fmt::format("    #{} rank {}: {}\n", f.at, f.rank, f.message)
                   : fmt::format("    #{} {}\n", f.at, f.message);
      ++shown;
    }
  }
  return out;
}

}  // namespace hookscope::analysis
