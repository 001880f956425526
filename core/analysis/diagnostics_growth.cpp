// hook_growth (Note [Hook growth]): the last backward each Reducer prepared,
// and the finding's text.

#include "analysis/diagnostics_growth.h"
#include "analysis/owner_status.h"

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
  // Each owner but the last, as it was when the next one added its hook:
  // destroyed, or replaced while alive (it never prepared a backward again).
  // What the run did with it afterwards is said in its own words (Note
  // [Lingering owners]): "replaced by ... and is still alive", "... until it
  // was destroyed at #N", never "destroyed" for an owner alive while its
  // hooks fired.
  const size_t n = g.adders.size();
  std::vector<const char*> tags(n, "");
  std::vector<std::string> fates;
  for (size_t k = 0; k + 1 < n; ++k) {
    const OwnerIndex o = g.adders[k];
    const OwnerInfo& info = owners[o];
    if (info.destroyed_at <= g.at[k + 1]) {
      tags[k] = " destroyed";
      fates.push_back(fmt::format("{} was destroyed at #{} with its hooks attached: they stay and keep firing "
                                  "(stale)", m.owner_name(o), info.destroyed_at));
    } else if (info.replaced_at != kNever) {
      tags[k] = " replaced";
      fates.push_back(replaced_text(m, o) + ": its hooks stay attached and do nothing on every backward");
    } else if (replaced_by(last_prepare, o, g.at[k + 1])) {
      tags[k] = " replaced";
      fates.push_back(fmt::format(
          "{} never prepared a backward after #{} but {}", m.owner_name(o), last_prepare[o],
          info.destroyed_at == kNever ? std::string("is still alive")
                                      : fmt::format("stayed alive until it was destroyed at #{}", info.destroyed_at)));
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
  for (size_t k = 0; k < fates.size(); ++k) {
    if (fates.size() > kMaxNamed && k == 3) {
      why += fmt::format("; … {} more", fates.size() - 5);
      k = fates.size() - 2;
    }
    why += (k ? "; " : "") + fates[k];
  }
  if (why.empty()) why = "the earlier owners kept their hooks attached";
  out.message = fmt::format("{} hooks on {} grew {} as {} {} owners added theirs ({}): {}",
                            trace::to_string(kind), m.function_name(f), series_text(g.counts), n,
                            trace::to_string(owners[g.adders.front()].kind), names, why);
}

}  // namespace hookscope::analysis
