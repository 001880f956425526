// hookscope-cli info / events / state / check / export / diff / stats.
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <future>
#include <map>
#include <new>

#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "analysis/state.h"
#include "analysis/stats.h"
#include "analysis/summary.h"
#include "cli.h"
#include "cli_json.h"
#include "export/export.h"
#include "trace/reader.h"

namespace hookscope::cli {

using analysis::Model;
using exporters::terminal_safe;

namespace {

std::string dump(const nlohmann::json& j) { return dump_json(j, 2); }

// Text for a terminal: trace strings may hold escape sequences.
void print_safe(const std::string& text) {
  const std::string safe = terminal_safe(text);
  std::fwrite(safe.data(), 1, safe.size(), stdout);
}

}  // namespace

thread_local std::string g_cli_step = "starting";
void cli_step(std::string what) { g_cli_step = std::move(what); }
const std::string& cli_step() { return g_cli_step; }

Model load_model(const std::vector<std::string>& files, bool quiet) {
  std::vector<trace::TraceData> traces;
  const bool tty = ::isatty(2);
  for (const auto& f : files) {
    if (!std::filesystem::exists(f)) throw CliError(kExitUsage, f + ": no such file");
    trace::ReadOptions opts;
    opts.packed = true;  // the model keeps them packed (Note [Packed events])
    if (tty && !quiet) {
      opts.progress = [&f](uint64_t done, uint64_t total) {
        fmt::print(stderr, "\rloading {}: {:3d}%", f, total ? static_cast<int>(100 * done / total) : 100);
        if (done == total) fmt::print(stderr, "\r\033[K");
      };
    }
    cli_step("reading " + f);
    try {
      traces.push_back(trace::read_trace(f, opts));
    } catch (const std::bad_alloc&) {
      throw;
    } catch (const std::exception& e) {
      throw CliError(kExitUsage, e.what());
    }
    if (!traces.back().truncation.empty() && !quiet) {
      fmt::print(stderr, "hookscope-cli: warning: {}: {}\n", terminal_safe(f), traces.back().truncation);
    }
    if (const std::string newer = trace::superseded_by_temporary(f); !newer.empty() && !quiet) {
      fmt::print(stderr, "hookscope-cli: warning: {}: {}\n", terminal_safe(f), terminal_safe(newer));
    }
    if (traces.back().dropped_events && !quiet) {
      fmt::print(stderr, "hookscope-cli: warning: {}: the recorder dropped {} events (ring buffer)\n", f,
                 traces.back().dropped_events);
    }
  }
  cli_step(files.size() == 1 ? "analysing " + files[0] : "analysing the traces");
  try {
    return Model(std::move(traces));
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
}

size_t event_at(const EventIndexArg& arg, const Model& m, std::string_view option) {
  try {
    return arg.in(m.num_events(), option);
  } catch (const std::invalid_argument& e) {
    throw CliError(kExitUsage, e.what());
  }
}

int run_info(const std::vector<std::string>& files) {
  Model m = load_model(files, false);
  std::string text;
  for (size_t s = 0; s < m.num_traces(); ++s) {
    const auto& t = m.trace(s);
    const auto& h = t.header;
    text += fmt::format("{}: hookscope trace v{}.{} (written by hookscope {})\n", t.source, h.version_major,
                        h.version_minor, h.hookscope_version);
    text += fmt::format("  scenario: {}\n", h.scenario.empty() ? "-" : h.scenario);
    text += fmt::format("  rank {} of world {}, host {}, pid {}, clock {}\n",
                        h.rank < 0 ? std::string("(all, as threads)") : std::to_string(h.rank),
                        h.world_size, h.host, h.pid, h.clock);
    text += fmt::format("  {} events, {} strings{}\n", t.num_events(), t.strings.size(),
                        t.truncation.empty() ? "" : "; " + t.truncation);
  }
  print_safe(text);
  std::vector<trace::Event> all;
  all.reserve(m.num_events());
  for (size_t i = 0; i < m.num_events(); ++i) all.push_back(m.event(i));
  fmt::print("{}", analysis::format_summary(analysis::summarize(all)));
  fmt::print("  {} Functions, {} hooks, {} owners, {} Reducers, {} collectives\n", m.functions().size(),
             m.hooks().size(), m.owners().size(), m.reducers().size(), m.collectives().size());
  if (!m.malformations().empty()) {
    fmt::print("  {} malformed event(s): the trace claims things that cannot happen; see `check`\n",
               m.malformations().size());
  }
  return kExitOk;
}

int run_events(const std::vector<std::string>& files, const EventsArgs& a) {
  Model m = load_model(files, true);
  std::vector<trace::EventKind> kinds;
  for (const auto& k : a.kinds) {
    auto kind = trace::event_kind_from_string(k);
    if (kind == trace::EventKind::kNone) {
      throw CliError(kExitUsage, fmt::format("unknown event kind '{}' (e.g. hook_fire, hook_add, "
                                             "hook_remove, reducer_destroyed; see `info`)", k));
    }
    kinds.push_back(kind);
  }
  if (a.from.given() && a.to.given() && a.from.value() > a.to.value()) {
    throw CliError(kExitUsage, fmt::format("--from {} is after --to {}", a.from.text, a.to.text));
  }
  // --to is a bound (past the end: to the end); --from must name an event
  const size_t from = a.from.given() ? event_at(a.from, m, "--from") : 0;
  const size_t to = a.to.given() ? static_cast<size_t>(std::min<uint64_t>(a.to.value(), m.num_events() - 1) + 1)
                                 : m.num_events();
  if (m.num_events() == 0) return kExitOk;
  std::FILE* out = stdout;
  cli_step("listing events");
  for (size_t i = from; i < to; ++i) {
    const trace::Event e = m.event(i);
    if (!kinds.empty() && std::find(kinds.begin(), kinds.end(), e.kind) == kinds.end()) continue;
    if (a.node >= 0 && e.node != static_cast<uint64_t>(a.node)) continue;
    if (a.owner >= 0 && e.owner != static_cast<uint32_t>(a.owner) && trace::remover_of(e) != static_cast<uint32_t>(a.owner)) {
      continue;
    }
    if (a.rank >= 0 && e.rank != a.rank) continue;
    // One JSON Lines format: the exporter's (`export --format jsonl`).
    const std::string line = a.format == "jsonl" ? exporters::jsonl_line(m, i) : terminal_safe(m.describe(i));
    fmt::print(out, "{}\n", line);
  }
  return kExitOk;
}

int run_state(const std::vector<std::string>& files, const EventIndexArg& at_arg, int rank,
              const std::string& format) {
  Model m = load_model(files, true);
  const size_t at = event_at(at_arg, m, "--at");
  cli_step(fmt::format("replaying to event {}", at));
  const analysis::State st = m.state_at(at);
  std::map<analysis::OwnerIndex, bool> live;
  for (const auto& o : st.owners) live[o.owner] = o.live;
  nlohmann::json j = nlohmann::json::array();
  if (format == "text") print_safe(fmt::format("state after event {}: {}\n", at, m.describe(at)));
  for (const auto& f : st.functions) {
    const auto& info = m.functions()[f.function];
    if (rank >= 0 && info.rank != rank) continue;
    nlohmann::json jf = {{"function", m.function_name(f.function)}, {"id", info.id}, {"rank", info.rank},
                         {"hooks", nlohmann::json::array()}};
    std::string line = fmt::format("  #{} r{} {}", info.id, info.rank, m.function_name(f.function));
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      for (const auto& h : f.hooks[static_cast<size_t>(k)]) {
        const auto& hi = m.hooks()[h.hook];
        const bool alive = hi.owner == analysis::kNoIndex || live[hi.owner];
        const std::string owner = hi.owner == analysis::kNoIndex ? "?" : m.owner_name(hi.owner);
        jf["hooks"].push_back({{"kind", trace::to_string(static_cast<trace::HookKind>(k))},
                               {"key", hi.key}, {"owner", owner}, {"owner_alive", alive},
                               {"fires", h.fires}, {"added_at", hi.added_at}});
        line += fmt::format("\n      {} key {} owner {}{} fired {}x, added at event {}",
                            trace::to_string(static_cast<trace::HookKind>(k)), trace::format_hook_key(hi.key), owner,
                            alive ? "" : " (DESTROYED)", h.fires, hi.added_at);
      }
    }
    if (format == "json") {
      j.push_back(jf);
    } else {
      print_safe(line + "\n");
    }
  }
  // Module hooks (Note [Module hooks in traces]) and Reducers' comm hooks
  // (Note [Comm hooks in traces]): on no Function, by owner.
  std::map<analysis::OwnerIndex, std::vector<const analysis::HookAt*>> by_owner;
  for (const auto& h : st.module_hooks) {
    const auto& hi = m.hooks()[h.hook];
    if (rank >= 0 && hi.rank != rank) continue;
    by_owner[hi.owner].push_back(&h);
  }
  for (const auto& [owner, hooks] : by_owner) {
    const std::string name = owner == analysis::kNoIndex ? "?" : m.owner_name(owner);
    const bool alive = owner == analysis::kNoIndex || live[owner];
    const bool module = owner == analysis::kNoIndex || m.owners()[owner].kind == trace::OwnerKind::kModule;
    nlohmann::json jm = {{module ? "module" : "owner", name}, {"owner_alive", alive},
                         {"hooks", nlohmann::json::array()}};
    std::string line = fmt::format("  {}{}{}", module ? "module " : "", name, alive ? "" : " (DESTROYED)");
    for (const auto* h : hooks) {
      const auto& hi = m.hooks()[h->hook];
      jm["hooks"].push_back({{"kind", trace::to_string(hi.kind)}, {"key", hi.key}, {"fires", h->fires},
                             {"added_at", hi.added_at}});
      line += fmt::format("\n      {} key {} fired {}x, added at event {}", trace::to_string(hi.kind),
                          trace::format_hook_key(hi.key), h->fires, hi.added_at);
    }
    if (format == "json") {
      j.push_back(jm);
    } else {
      print_safe(line + "\n");
    }
  }
  if (format == "json") fmt::print("{}\n", dump(j));
  return kExitOk;
}

int run_check(const std::vector<std::string>& files, const std::string& format, bool all) {
  Model m = load_model(files, true);
  cli_step("diagnosing");
  auto findings = analysis::diagnose(m);
  const auto counts = analysis::count_findings(findings);
  if (format == "json") {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& f : findings) {
      j.push_back({{"kind", analysis::to_string(f.kind)},
                   {"severity", analysis::to_string(f.severity)},
                   {"message", f.message},
                   {"at", f.at},
                   {"events", f.events},
                   {"count", f.count},
                   {"node", f.node},
                   {"owner_id", f.owner_id},
                   {"key", f.key},
                   {"rank", f.rank}});
      if (!f.detail.empty()) j.back()["detail"] = f.detail;
    }
    fmt::print("{}\n", dump(j));
  } else if (findings.empty()) {
    fmt::print("clean: no findings in {} events\n", m.num_events());
  } else {
    print_safe(analysis::format_findings(m, findings, all ? SIZE_MAX : 3));
  }
  if (format != "json") {
    // A killed rank's trace ends without its footer: the findings stop where it died.
    for (size_t i = 0; i < m.num_traces(); ++i) {
      if (!m.trace(i).truncation.empty()) print_safe(fmt::format("note: {}: {}\n", files[i], m.trace(i).truncation));
    }
  }
  return counts.errors + counts.warnings > 0 ? kExitFindings : kExitOk;
}

int run_export(const std::vector<std::string>& files, const std::string& format, const EventIndexArg& at,
               const std::string& output) {
  Model m = load_model(files, true);
  // checked before the output is created: a bad --at leaves no empty file behind
  size_t dot_at = 0;
  if (format == "dot") {
    if (m.num_events() == 0) throw CliError(kExitUsage, "the trace has no events");
    dot_at = at.given() ? event_at(at, m, "--at") : m.num_events() - 1;
  }
  cli_step("writing " + output);
  std::FILE* out = output == "-" ? stdout : std::fopen(output.c_str(), "w");
  if (!out) throw CliError(kExitUsage, fmt::format("cannot write {}: {}", output, std::strerror(errno)));
  if (format == "chrome") {
    exporters::write_chrome_trace(m, out);
  } else if (format == "jsonl") {
    exporters::write_jsonl(m, out);
  } else {
    exporters::write_dot(m, dot_at, out);
  }
  const bool ok = std::ferror(out) == 0;
  if (out != stdout) std::fclose(out);
  if (!ok) throw CliError(kExitUsage, "writing " + output + " failed");
  if (output != "-") fmt::print(stderr, "wrote {} ({})\n", output, format);
  return kExitOk;
}

int run_diff(const std::string& a, const std::string& b, const std::string& format) {
  // B is read and diagnosed on a second thread while A is on this one: each
  // side is most of a diff's time (300k stale lanes: 2 of 3.5 s each side).
  // A's error, if any, is the one reported, as when they ran in turn.
  struct Side {
    Model model;
    std::vector<analysis::Finding> findings;
  };
  auto side = [](const std::string& file) {
    Model m = load_model({file}, true);
    cli_step("diagnosing " + file);
    std::vector<analysis::Finding> findings = analysis::diagnose(m);
    return Side{std::move(m), std::move(findings)};
  };
  std::string step_b;  // where B's thread was when it failed
  auto pending_b = std::async(std::launch::async, [&] {
    try {
      return side(b);
    } catch (...) {
      step_b = cli_step();
      throw;
    }
  });
  const Side sa = side(a);
  const Side sb = [&] {
    try {
      return pending_b.get();
    } catch (...) {
      cli_step(step_b);
      throw;
    }
  }();
  const Model& ma = sa.model;
  const Model& mb = sb.model;
  cli_step("comparing the traces");
  auto d = analysis::diff_models(ma, sa.findings, mb, sb.findings);
  if (format == "json") {
    const nlohmann::json j = diff_json(d);
    fmt::print("{}\n", dump(j));
  } else {
    print_safe(analysis::format_diff(d, a, b));
  }
  return d.num_differing() || !d.only_a.empty() || !d.only_b.empty() ? kExitFindings : kExitOk;
}

int run_stats(const std::vector<std::string>& files) {
  Model m = load_model(files, true);
  cli_step("computing statistics");
  const auto owners = analysis::owner_stats(m);
  fmt::print("{:<28} {:>6} {:>8} {:>8} {:>8} {:>9} {:>7} {:>7}\n", "owner", "hooks", "removed", "by other",
             "dropped", "attached", "fires", "stale");
  for (const auto& o : owners) {
    if (o.hooks_added == 0 && o.removals_it_made == 0) continue;
    fmt::print("{:<28} {:>6} {:>8} {:>8} {:>8} {:>9} {:>7} {:>7}\n", terminal_safe(m.owner_name(o.owner)), o.hooks_added,
               o.removed_by_self, o.removed_by_others, o.dropped, o.attached_at_end, o.fires, o.stale_fires);
  }
  const auto series = analysis::hook_count_series(m, analysis::kNoIndex, 12);
  fmt::print("\nhooks attached over time (all Functions):\n");
  uint32_t peak = 1;
  for (const auto& p : series) peak = std::max(peak, p.hooks);
  for (const auto& p : series) {
    fmt::print("  event {:>8}  {:>5}  {}\n", p.index, p.hooks, std::string(40 * p.hooks / peak, '#'));
  }
  // Functions whose hook count changed the most (AccumulateGrads under policy none).
  std::vector<std::pair<uint32_t, analysis::FunctionIndex>> top;
  for (analysis::FunctionIndex f = 0; f < m.functions().size(); ++f) {
    if (!m.functions()[f].is_leaf_accumulator() || m.functions()[f].next != analysis::kNoIndex) continue;
    auto s = analysis::hook_count_series(m, f, 2);
    if (!s.empty()) top.emplace_back(s.back().hooks, f);
  }
  std::sort(top.rbegin(), top.rend());
  if (!top.empty()) fmt::print("\nhooks per AccumulateGrad at the end (most first):\n");
  for (size_t i = 0; i < std::min<size_t>(top.size(), 10); ++i) {
    fmt::print("  {:>4}  {}\n", top[i].first, terminal_safe(m.function_name(top[i].second)));
  }
  return kExitOk;
}

}  // namespace hookscope::cli
