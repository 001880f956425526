// hook_growth (Note [Hook growth]): the last backward each Reducer prepared,
// and the finding's text.

#include "analysis/diagnostics_growth.h"

#include <fmt/format.h>

#include <algorithm>

namespace hookscope::analysis {

namespace {

constexpr size_t kMaxEvidence = 8;  // as diagnostics.cpp
constexpr size_t kMaxNamed = 8;     // owners named one by one; more are elided in the middle

std::string series_text(const std::vector<uint32_t>& counts) {
  std::string s;
  for (size_t k = 0; k < counts.size(); ++k) {
    if (counts.size() > 8 && k == 3) {
      s += " → …";
      k = counts.size() - 3;
    }
    s += fmt::format("{}{}", k ? " → " : "", counts[k]);
  }
  return s;
}

}  // namespace

std::vector<EventIndex> last_prepares(const Model& m) {
  std::vector<EventIndex> out(m.owners().size(), kNever);
  for (const ReducerInfo& r : m.reducers()) {
    if (r.owner == kNoIndex || r.owner >= out.size() || r.prepares.empty()) continue;
    const EventIndex last = r.prepares.back();
    if (out[r.owner] == kNever || out[r.owner] < last) out[r.owner] = last;
  }
  return out;
}

void describe_growth(const Model& m, trace::HookKind kind, FunctionIndex f, const HookGrowth& g,
                     const std::vector<EventIndex>& last_prepare, Finding& out) {
  const auto& owners = m.owners();
  out.at = g.first;
  out.count = *std::max_element(g.counts.begin(), g.counts.end());
  for (size_t k = 0; k < g.at.size(); ++k) {
    if (k < kMaxEvidence / 2 || k + kMaxEvidence / 2 >= g.at.size()) {
      if (g.at[k] != kNever) out.events.push_back(g.at[k]);
    }
  }
  std::sort(out.events.begin(), out.events.end());
  out.events.erase(std::unique(out.events.begin(), out.events.end()), out.events.end());
  // Each owner but the last: destroyed, or replaced while alive (it never
  // prepared a backward again once the next owner added its hook).
  size_t destroyed = 0, replaced = 0;
  const size_t n = g.adders.size();
  std::vector<const char*> tags(n, "");
  for (size_t k = 0; k + 1 < n; ++k) {
    const OwnerIndex o = g.adders[k];
    if (owners[o].destroyed_at != kNever) {
      tags[k] = " destroyed";
      ++destroyed;
    } else if (replaced_by(last_prepare, o, g.at[k + 1])) {
      tags[k] = " replaced";
      ++replaced;
    }
  }
  std::string names;
  for (size_t k = 0; k < n; ++k) {
    if (n > kMaxNamed && k == 3) {
      names += fmt::format(", … {} more", n - 6);
      k = n - 3;
    }
    names += fmt::format("{}{}{}", k ? ", " : "", m.owner_name(g.adders[k]), tags[k]);
  }
  std::string why;
  if (destroyed > 0 || replaced == 0) why = "hooks of destroyed owners stay attached and keep firing";
  if (replaced > 0) {
    why += fmt::format(
        "{}replaced owners never prepared a backward again but are still alive (a forgotten "
        "reference keeps each old DDP), so their hooks stay attached and fire as no-ops on every "
        "backward",
        why.empty() ? "" : "; ");
  }
  out.message = fmt::format("{} hooks on {} grew {} as {} {} owners added theirs ({}): {}",
                            trace::to_string(kind), m.function_name(f), series_text(g.counts), n,
                            trace::to_string(owners[g.adders.front()].kind), names, why);
}

}  // namespace hookscope::analysis
