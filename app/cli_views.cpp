// hookscope-cli lanes / readiness / explain: the answers of the GUI's lanes,
// readiness and "why did this fire" views, headless (the same analysis data).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <stdexcept>

#include "analysis/compare.h"
#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/explain.h"
#include "analysis/lanes.h"
#include "analysis/owner_status.h"
#include "analysis/readiness.h"
#include "cli.h"
#include "cli_json.h"

namespace hookscope::cli {

using analysis::kNever;
using analysis::kNoIndex;
using analysis::Model;

namespace {

std::string dump(const nlohmann::json& j) { return dump_json(j, -1); }

std::string at_text(analysis::EventIndex at) { return at == kNever ? "never" : fmt::format("#{}", at); }

nlohmann::json at_json(analysis::EventIndex at) {
  return at == kNever ? nlohmann::json(nullptr) : nlohmann::json(at);
}

std::string function_text(const Model& m, analysis::FunctionIndex f) {
  return f == kNoIndex ? std::string("(module)") : m.function_name(f);
}

std::string owner_text(const Model& m, analysis::OwnerIndex o) {
  return o == kNoIndex ? std::string("?") : m.owner_name(o);
}

}  // namespace

int run_lanes(const std::vector<std::string>& files, const std::string& format, bool leaks_only) {
  Model m = load_model(files, true);
  const auto lanes = analysis::hook_lanes(m);
  size_t shown = 0, outliving = 0, unused = 0;
  for (const auto& l : lanes) {
    outliving += l.outlives_owner();
    unused += l.outlives_use() && !l.outlives_owner();
    if (leaks_only && !l.leaks() && l.fires_after == 0 && l.fires_after_removal == 0) continue;
    ++shown;
    const auto& h = m.hooks()[l.hook];
    if (format == "jsonl") {
      nlohmann::json j = {{"key", h.key},
                          {"key_text", trace::format_hook_key(h.key)},
                          {"kind", trace::to_string(h.kind)},
                          {"rank", h.rank},
                          {"function", function_text(m, l.function)},
                          {"owner", owner_text(m, l.owner)},
                          {"added_at", l.added_at},
                          {"ended_at", at_json(l.ended_at)},
                          {"owner_died_at", at_json(l.owner_died_at)},
                          {"fires_before_owner_death", l.fires_before},
                          {"fires_after_owner_death", l.fires_after},
                          {"fires_after_removal", l.fires_after_removal},
                          {"outlives_owner", l.outlives_owner()},
                          {"owner_replaced_at", at_json(l.owner_replaced_at)},
                          {"fires_while_owner_lingered", l.fires_lingering},
                          {"outlives_use", l.outlives_use()}};
      fmt::print("{}\n", dump(j));
      continue;
    }
    fmt::print("key {:<8} {:<15} r{} {:<40} owner {:<12} added {:<7} removed {:<7} owner died {:<7} "
               "fires {} before, {} after{}{}\n",
               trace::format_hook_key(h.key), trace::to_string(h.kind), h.rank, function_text(m, l.function),
               owner_text(m, l.owner), at_text(l.added_at), at_text(l.ended_at), at_text(l.owner_died_at),
               l.fires_before, l.fires_after,
               l.outlives_owner() ? "  OUTLIVES OWNER"
               : l.outlives_use() ? fmt::format("  OUTLIVES ITS USE ({}; {} fire(s) did nothing)",
                                                analysis::replaced_text(m, l.owner), l.fires_lingering)
                                  : std::string(),
               l.fires_after_removal ? fmt::format("  {} FIRE(S) AFTER REMOVAL", l.fires_after_removal) : "");
  }
  if (format == "text") {
    fmt::print("{} hooks{}, {} outlive their owner, {} outlive their use (owner replaced, still alive)\n",
               lanes.size(), leaks_only ? fmt::format(" ({} shown)", shown) : std::string(), outliving, unused);
  }
  return kExitOk;
}

int run_readiness(const std::vector<std::string>& files, const std::string& format) {
  Model m = load_model(files, true);
  const auto grids = analysis::readiness_grids(m);
  if (grids.empty()) {
    if (format == "text") fmt::print("no DDP Reducer in this trace: nothing to map\n");
    return kExitOk;
  }
  for (const auto& g : grids) {
    if (format == "jsonl") {
      for (size_t p = 0; p < g.parameters.size(); ++p) {
        for (size_t b = 0; b < g.backwards.size(); ++b) {
          const auto& c = g.cell(p, b);
          nlohmann::json j = {{"rank", g.rank},
                              {"parameter", g.parameters[p].index},
                              {"name", g.parameters[p].name},
                              {"backward", b},
                              {"backward_at", g.backwards[b].begin},
                              {"status", analysis::to_string(c.status)},
                              {"marks", c.marks},
                              {"stale_fires", c.stale},
                              {"noops", c.noops},
                              {"event", at_json(c.event)}};
          fmt::print("{}\n", dump(j));
        }
      }
      continue;
    }
    fmt::print("rank {}: {} parameters x {} backward passes  (o ok, U unused, 2 marked twice, "
               "S stale fire, ~ cut short by a failure, . no DDP)\n",
               g.rank, g.parameters.size(), g.backwards.size());
    size_t width = 9;
    for (const auto& p : g.parameters) width = std::max(width, p.name.size());
    for (size_t p = 0; p < g.parameters.size(); ++p) {
      std::string row;
      for (size_t b = 0; b < g.backwards.size(); ++b) {
        static constexpr char kCode[] = {'.', 'o', 'U', '2', 'S', '~'};
        row += kCode[static_cast<int>(g.cell(p, b).status)];
      }
      fmt::print("  {:<{}}  {}\n", g.parameters[p].name, width, row);
    }
    // the alarming cells, one line per parameter and status, backwards as ranges
    using analysis::Readiness;
    for (size_t p = 0; p < g.parameters.size(); ++p) {
      for (Readiness r : {Readiness::kTwice, Readiness::kUnused, Readiness::kStale}) {
        std::string ranges;
        size_t first_event = kNever, cells = 0, fires = 0;
        for (size_t b = 0; b < g.backwards.size(); ++b) {
          if (g.cell(p, b).status != r) continue;
          if (cells++ == 0) first_event = g.cell(p, b).event;
          fires += g.cell(p, b).stale;
          const bool prev = b > 0 && g.cell(p, b - 1).status == r;
          const bool next = b + 1 < g.backwards.size() && g.cell(p, b + 1).status == r;
          if (!prev) ranges += fmt::format("{}{}", ranges.empty() ? "" : ", ", b);
          else if (!next) ranges += fmt::format("-{}", b);
        }
        if (cells == 0) continue;
        const char* what = r == Readiness::kTwice    ? "marked ready twice"
                           : r == Readiness::kUnused ? "unused (no gradient)"
                                                     : "fired by a destroyed Reducer";
        fmt::print("  {}: {} in backward{} {} (first at #{}{})\n", g.parameters[p].name, what,
                   cells > 1 ? "s" : "", ranges, first_event,
                   r == Readiness::kStale ? fmt::format("; {} stale fires", fires) : std::string());
      }
    }
  }
  return kExitOk;
}

int run_explain(const std::vector<std::string>& files, const EventIndexArg& event, const std::string& format) {
  Model m = load_model(files, true);
  const size_t index = event_at(event, m, "--event");
  analysis::Explanation x;
  try {
    x = analysis::explain_fire(m, index);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
  if (format == "jsonl") {
    nlohmann::json steps = nlohmann::json::array();
    for (const auto& s : x.steps) steps.push_back({{"at", at_json(s.at)}, {"text", s.text}});
    fmt::print("{}\n", dump({{"event", x.fire},
                             {"verdict", analysis::to_string(x.verdict)},
                             {"summary", x.summary},
                             {"steps", steps}}));
    return kExitOk;
  }
  fmt::print("{}\n  {}\n", m.describe(x.fire), x.summary);
  for (const auto& s : x.steps) fmt::print("  {:>8}  {}\n", at_text(s.at), s.text);
  return kExitOk;
}

int run_diff_at(const std::string& a, const std::string& b, const std::string& at, bool order,
                const std::string& format) {
  Model ma = load_model({a}, true);
  Model mb = load_model({b}, true);
  // A point wrong in itself is said once; then each trace on its own, so that
  // the message names the one that lacks it.
  const std::string point = at.empty() ? "end" : at;
  try {
    analysis::check_point(at);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, fmt::format("--at {}: {}", point, e.what()));
  }
  std::string error_a, error_b;
  analysis::MatchPoint pa, pb;
  try {
    pa = analysis::resolve_point(ma, at);
  } catch (const std::invalid_argument& e) {
    error_a = e.what();
  }
  try {
    pb = analysis::resolve_point(mb, at);
  } catch (const std::invalid_argument& e) {
    error_b = e.what();
  }
  if (!error_a.empty() || !error_b.empty()) {
    std::string what;
    if (!error_a.empty()) what += fmt::format("A ({}) lacks it: {}", a, error_a);
    if (!error_b.empty()) what += fmt::format("{}B ({}) lacks it: {}", what.empty() ? "" : "; ", b, error_b);
    throw CliError(kExitUsage, fmt::format("--at {}: {}", point, what));
  }
  auto d = analysis::diff_models_at(ma, analysis::diagnose(ma), pa.index, mb, analysis::diagnose(mb), pb.index);
  d.where = fmt::format("{} (#{} in A, #{} in B)", pa.label, pa.index, pb.index);
  std::vector<analysis::OrderDiff> orders;
  if (order) orders = analysis::hook_order_diff(ma, pa.index, mb, pb.index);
  if (format == "json") {
    nlohmann::json j = {{"at", pa.label}, {"index_a", pa.index}, {"index_b", pb.index}};
    j.update(diff_json(d));
    if (order) {
      j["order"] = nlohmann::json::array();
      for (const auto& o : orders) {
        auto steps = [](const std::vector<analysis::OrderStep>& v) {
          nlohmann::json arr = nlohmann::json::array();
          for (const auto& s : v) arr.push_back(fmt::format("{} {}", s.fire ? "fire" : "add", s.hook));
          return arr;
        };
        j["order"].push_back({{"function", o.function}, {"position", o.position},
                              {"steps_a", steps(o.steps_a)}, {"steps_b", steps(o.steps_b)}});
      }
    }
    fmt::print("{}\n", dump_json(j, 2));
  } else {
    fmt::print("{}", analysis::format_diff(d, a, b));
    if (order) fmt::print("{}", analysis::format_order_diff(orders, a, b));
  }
  const bool differs = d.num_differing() || !d.only_a.empty() || !d.only_b.empty() || !orders.empty();
  return differs ? kExitFindings : kExitOk;
}

}  // namespace hookscope::cli
