#include "analysis/compare.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "analysis/diff_match.h"
#include "analysis/signature.h"

namespace hookscope::analysis {

using trace::EventKind;

namespace {

size_t parse_ordinal(std::string_view name, std::string_view text) {
  size_t n = 0;
  const auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  const bool digits =
      !text.empty() && std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (!digits) {
    const bool negative = text.size() > 1 && text[0] == '-';
    throw std::invalid_argument(fmt::format("matching point '{}': '{}' is {}; counts start at 1 (backward:1 is "
                                            "the first backward pass)", name, text,
                                            negative ? "below 1" : "not a number"));
  }
  if (ec == std::errc::result_out_of_range) {
    throw std::invalid_argument(fmt::format("matching point '{}': '{}' is more than any trace holds", name, text));
  }
  if (n == 0) {
    throw std::invalid_argument(fmt::format("matching point '{}': counts start at 1 (backward:1 is the first "
                                            "backward pass), not 0", name));
  }
  return n;
}

// The n-th (1-based) event among `candidates` passing `keep`, or throws.
template <class Keep>
size_t nth(const Model& m, const std::vector<EventIndex>& candidates, size_t n, std::string_view what,
           Keep keep) {
  size_t seen = 0;
  for (EventIndex i : candidates) {
    if (keep(m.event(i)) && ++seen == n) return i;
  }
  throw std::invalid_argument(fmt::format("the trace has {} {}, not {}", seen, what, n));
}

std::vector<EventIndex> all_of_kind(const Model& m, EventKind kind) {
  const auto& indexed = m.events_of_kind(kind);
  if (!indexed.empty()) return indexed;
  std::vector<EventIndex> out;  // bulk kinds are not indexed: scan
  for (size_t i = 0; i < m.num_events(); ++i) {
    if (m.event(i).kind == kind) out.push_back(static_cast<EventIndex>(i));
  }
  return out;
}

}  // namespace

uint16_t lowest_rank(const Model& m, EventKind kind) {
  uint16_t lowest = UINT16_MAX;
  for (EventIndex i : m.events_of_kind(kind)) lowest = std::min(lowest, m.event(i).rank);
  return lowest;
}

std::vector<EventIndex> backward_pass_ends(const Model& m) {
  const uint16_t lowest = lowest_rank(m, EventKind::kBackwardBegin);
  // a kBackwardEnd does not say which kind of pass it closes: pair it with its begin
  std::map<std::pair<uint32_t, uint32_t>, bool> open;  // (source, thread) -> is backward()
  std::vector<EventIndex> both = m.events_of_kind(EventKind::kBackwardBegin);
  const auto& ends = m.events_of_kind(EventKind::kBackwardEnd);
  both.insert(both.end(), ends.begin(), ends.end());
  std::sort(both.begin(), both.end());
  std::vector<EventIndex> out;
  for (EventIndex i : both) {
    const trace::Event e = m.event(i);
    const auto key = std::make_pair(m.source(i), e.thread);
    if (e.kind == EventKind::kBackwardBegin) {
      open[key] = !e.as<ev::BackwardBegin>().grad;
    } else if (auto it = open.find(key); it != open.end()) {
      if (it->second && e.rank == lowest) out.push_back(i);
      open.erase(it);
    }
  }
  return out;
}

void check_point(std::string_view name) {
  if (name.empty() || name == "end") return;
  const size_t colon = name.rfind(':');
  if (colon == std::string_view::npos) {
    throw std::invalid_argument(fmt::format(
        "matching point '{}': use end, backward:N, rebuild:N, failure:N, constructed:N, destroyed:N "
        "or KIND:N (e.g. hook_fire:100)", name));
  }
  const std::string_view what = name.substr(0, colon);
  (void)parse_ordinal(name, name.substr(colon + 1));
  for (std::string_view alias : {"backward", "rebuild", "failure", "constructed", "destroyed"}) {
    if (what == alias) return;
  }
  if (trace::event_kind_from_string(what) == EventKind::kNone) {
    throw std::invalid_argument(fmt::format(
        "matching point '{}': '{}' is neither backward, rebuild, failure, constructed, destroyed nor an "
        "event kind (hook_fire, reducer_destroyed, ...)", name, what));
  }
}

MatchPoint resolve_point(const Model& m, std::string_view name) {
  check_point(name);
  if (m.num_events() == 0) throw std::invalid_argument("the trace has no events");
  if (name.empty() || name == "end") return {m.num_events() - 1, "at the end"};
  const size_t colon = name.rfind(':');
  const std::string_view what = name.substr(0, colon);
  const size_t n = parse_ordinal(name, name.substr(colon + 1));
  if (what == "backward") {
    if (m.events_of_kind(EventKind::kBackwardBegin).empty()) {
      throw std::invalid_argument("the trace has no backward passes");  // not "on rank 65535"
    }
    const std::vector<EventIndex> backward_ends = backward_pass_ends(m);
    const uint16_t lowest = lowest_rank(m, EventKind::kBackwardBegin);
    if (n > backward_ends.size()) {
      throw std::invalid_argument(fmt::format("the trace has {} backward passes on rank {}, not {}",
                                              backward_ends.size(), lowest, n));
    }
    return {backward_ends[n - 1], fmt::format("after backward {}", n)};
  }
  if (what == "rebuild") {
    // every rank rebuilds its DDP: count the lowest rank's
    if (m.events_of_kind(EventKind::kRecoveryStep).empty()) throw std::invalid_argument("the trace has no DDP rebuilds");
    const uint16_t lowest = lowest_rank(m, EventKind::kRecoveryStep);
    const size_t i = nth(m, m.events_of_kind(EventKind::kRecoveryStep), n,
                         fmt::format("DDP rebuilds on rank {}", lowest), [lowest](const trace::Event& e) {
                           return e.rank == lowest &&
                                  e.as<ev::RecoveryStep>().step == trace::RecoveryStep::kDdpRebuilt;
                         });
    return {i, fmt::format("after rebuild {}", n)};
  }
  struct Alias {
    std::string_view name;
    EventKind kind;
    std::string_view words;
  };
  static constexpr Alias kAliases[] = {{"failure", EventKind::kFailure, "failures"},
                                       {"constructed", EventKind::kReducerConstructed, "Reducers constructed"},
                                       {"destroyed", EventKind::kReducerDestroyed, "Reducers destroyed"}};
  for (const Alias& a : kAliases) {
    if (what != a.name) continue;
    const size_t i = nth(m, m.events_of_kind(a.kind), n, a.words, [](const trace::Event&) { return true; });
    return {i, fmt::format("after {} {}", a.name, n)};
  }
  const EventKind kind = trace::event_kind_from_string(what);  // check_point: a known kind
  const size_t i = nth(m, all_of_kind(m, kind), n, fmt::format("{} events", what),
                       [](const trace::Event&) { return true; });
  return {i, fmt::format("after {} {}", what, n)};
}

namespace {

// A step before it is named: when, whose (index in its Function's hooks),
// add or fire.
struct Timed {
  EventIndex at;
  uint32_t hook;
  bool fire;
};

// A leaf's AccumulateGrads come and go (Note [Leaf hooks live on the
// tensor]): its hooks are one history, kept under the leaf's first one.
FunctionIndex leaf_root(const Model& m, FunctionIndex f) {
  for (size_t guard = 0; guard < m.functions().size() && m.functions()[f].previous != kNoIndex; ++guard) {
    f = m.functions()[f].previous;
  }
  return f;
}

// Owners named so that two runs compare: labels carry process-wide counters
// ("Reducer 7" in a process that built six before), so an owner is named by
// its kind and its ordinal among the owners of that kind on its rank.
std::vector<std::string> comparable_owner_names(const Model& m) {
  std::map<std::pair<uint16_t, trace::OwnerKind>, uint32_t> count;
  std::vector<std::string> out;
  out.reserve(m.owners().size());
  for (const OwnerInfo& o : m.owners()) {
    out.push_back(fmt::format("{}#{}", trace::to_string(o.kind), ++count[{o.rank, o.kind}]));
  }
  return out;
}

// Every Function's add/fire steps up to `at`, in event order, by leaf root
// ascending. Sorted arrays, and steps sorted before they are named: a
// trace of 1.78M events is 1.78M steps, and a std::map per Function and
// named steps moved by the sort were most of a compare's wait for it.
std::vector<std::pair<FunctionIndex, std::vector<OrderStep>>> sequences(const Model& m, size_t at) {
  const std::vector<std::string> owner_names = comparable_owner_names(m);
  struct Added {
    FunctionIndex root;
    EventIndex at;
    HookIndex hook;
  };
  std::vector<Added> added;
  for (HookIndex h = 0; h < m.hooks().size(); ++h) {
    const HookInfo& info = m.hooks()[h];
    if (info.function != kNoIndex && info.added_at <= at) added.push_back({leaf_root(m, info.function), info.added_at, h});
  }
  std::sort(added.begin(), added.end(), [](const Added& x, const Added& y) {
    return std::tie(x.root, x.at, x.hook) < std::tie(y.root, y.at, y.hook);
  });
  std::vector<std::pair<FunctionIndex, std::vector<OrderStep>>> out;
  std::vector<std::string> names;
  std::vector<Timed> timed;
  for (size_t begin = 0, end = 0; begin < added.size(); begin = end) {
    while (end < added.size() && added[end].root == added[begin].root) ++end;
    names.clear();
    timed.clear();
    uint32_t ordinal[trace::kNumHookKinds] = {};
    for (size_t i = begin; i < end; ++i) {
      const HookIndex h = added[i].hook;
      const HookInfo& info = m.hooks()[h];
      const auto local = static_cast<uint32_t>(names.size());
      names.push_back(fmt::format("{}#{} {}", trace::to_string(info.kind), ++ordinal[static_cast<int>(info.kind)],
                                  info.owner == kNoIndex ? "?" : owner_names[info.owner]));
      timed.push_back({info.added_at, local, false});
      for (EventIndex fire : m.fires(h)) {
        if (fire > at) break;
        timed.push_back({fire, local, true});
      }
    }
    std::stable_sort(timed.begin(), timed.end(), [](const Timed& x, const Timed& y) { return x.at < y.at; });
    auto& seq = out.emplace_back(added[begin].root, std::vector<OrderStep>{}).second;
    seq.reserve(timed.size());
    for (const Timed& t : timed) seq.push_back({t.fire, names[t.hook]});
  }
  return out;
}

}  // namespace

std::vector<OrderDiff> hook_order_diff(const Model& a, size_t at_a, const Model& b, size_t at_b) {
  FunctionMatch match_a(a), match_b(b);
  return hook_order_diff(a, match_a, at_a, b, match_b, at_b);
}

std::vector<OrderDiff> hook_order_diff(const Model& a, FunctionMatch& match_a, size_t at_a, const Model& b,
                                       FunctionMatch& match_b, size_t at_b) {
  // Note [Parameter copies in a diff]. Each side by key, ascending (of
  // equal keys the first), then merged (sorted arrays, as diff_models does).
  using Keyed = std::vector<std::pair<MatchKey, std::pair<FunctionIndex, std::vector<OrderStep>>>>;
  auto keyed = [](const Model& m, FunctionMatch& match, size_t at) {
    auto seqs = sequences(m, at);  // by leaf root
    std::vector<FunctionIndex> functions;
    functions.reserve(seqs.size());
    for (auto& [f, seq] : seqs) functions.push_back(f);
    const std::vector<MatchKey> keys = match.keys(functions);
    Keyed out;
    out.reserve(seqs.size());
    size_t i = 0;
    for (auto& [f, seq] : seqs) out.emplace_back(keys[i++], std::make_pair(f, std::move(seq)));
    std::stable_sort(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
    out.erase(std::unique(out.begin(), out.end(), [](const auto& x, const auto& y) { return x.first == y.first; }),
              out.end());
    return out;
  };
  Keyed ka = keyed(a, match_a, at_a), kb = keyed(b, match_b, at_b);
  std::vector<OrderDiff> out;
  for (auto ia = ka.begin(), ib = kb.begin(); ia != ka.end() || ib != kb.end();) {
    const bool from_a = ia != ka.end() && (ib == kb.end() || !(ib->first < ia->first));
    const bool from_b = ib != kb.end() && (ia == ka.end() || !(ia->first < ib->first));
    OrderDiff row;
    if (from_a) {
      row.a = ia->second.first;
      row.steps_a = std::move(ia->second.second);
      ++ia;
    }
    if (from_b) {
      row.b = ib->second.first;
      row.steps_b = std::move(ib->second.second);
      ++ib;
    }
    if (row.steps_a == row.steps_b) continue;
    row.function = from_a ? match_a.name(row.a) : std::string();
    if (row.function.empty() && from_b) row.function = match_b.name(row.b);
    const auto mismatch = std::mismatch(row.steps_a.begin(), row.steps_a.end(), row.steps_b.begin(),
                                        row.steps_b.end());
    row.position = static_cast<size_t>(mismatch.first - row.steps_a.begin());
    out.push_back(std::move(row));
  }
  // By name, stably: sorted as indices, each row moved once.
  std::vector<uint32_t> order(out.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    const int c = out[x].function.compare(out[y].function);
    return c != 0 ? c < 0 : x < y;
  });
  std::vector<OrderDiff> sorted;
  sorted.reserve(out.size());
  for (uint32_t i : order) sorted.push_back(std::move(out[i]));
  return sorted;
}

std::string format_order_diff(const std::vector<OrderDiff>& diffs, std::string_view name_a,
                              std::string_view name_b, size_t max_functions) {
  std::string out = fmt::format("hook order: {} Function(s) differ ({} vs {})\n", diffs.size(), name_a, name_b);
  auto step = [](const std::vector<OrderStep>& v, size_t i) {
    if (i >= v.size()) return std::string("(nothing)");
    return fmt::format("{} {}", v[i].fire ? "fire" : "add ", v[i].hook);
  };
  for (size_t d = 0; d < diffs.size() && d < max_functions; ++d) {
    const OrderDiff& x = diffs[d];
    out += fmt::format("    {}: step {} of {} / {}: {} | {}\n", x.function, x.position + 1, x.steps_a.size(),
                       x.steps_b.size(), step(x.steps_a, x.position), step(x.steps_b, x.position));
  }
  if (diffs.size() > max_functions) out += fmt::format("    ... {} more\n", diffs.size() - max_functions);
  return out;
}

}  // namespace hookscope::analysis
