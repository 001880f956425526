// The Events panel's filter language (Note [Filter expressions]
// app/event_filter.h): expressions parse into terms, bad ones say what is
// wrong and where, and a filter selects what a brute-force scan of a real
// recorded trace selects.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "event_filter.h"
#include "testing/recovery_model.h"

using namespace hookscope;
using namespace hookscope::app;
using testing::brute_force;
using testing::shared_recovery;
using trace::EventKind;

namespace {

std::vector<size_t> selected(const analysis::Model& m, const std::string& expr) {
  FilterParseError err;
  const EventFilter f = EventFilter::parse(expr, &err);
  REQUIRE_MESSAGE(err.message.empty(), err.message);
  const auto rows = f.select(m, 0, m.num_events());
  return std::vector<size_t>(rows.begin(), rows.end());
}

}  // namespace

TEST_CASE("filter: expressions parse into terms") {
  FilterParseError err;
  const EventFilter f = EventFilter::parse(
      R"(kind:hook_fire owner:"Reducer 2" fn:AccumulateGrad rank:1 -hook:pre weight)", &err);
  CHECK(err.message.empty());
  REQUIRE(f.terms().size() == 6);
  CHECK(f.terms()[0].field == FilterField::kKind);
  CHECK(f.terms()[1].field == FilterField::kOwner);
  CHECK(f.terms()[1].values == std::vector<std::string>{"reducer 2"});
  CHECK(f.terms()[2].field == FilterField::kFunction);
  CHECK(f.terms()[3].field == FilterField::kRank);
  CHECK(f.terms()[4].negate);
  CHECK(f.terms()[5].field == FilterField::kText);
  CHECK(EventFilter::parse("   ", &err).empty());
  CHECK(EventFilter::parse("kind:hook_add,hook_remove", &err).terms()[0].values.size() == 2);
}

TEST_CASE("filter: bad expressions say what is wrong and where") {
  FilterParseError err;
  EventFilter::parse("kind:hook_fir", &err);
  CHECK(err.message.find("no event kind is 'hook_fir'") != std::string::npos);
  CHECK(err.message.find("hook_fire") != std::string::npos);  // the list of kinds
  EventFilter::parse("rank:one", &err);
  CHECK(err.message.find("needs a number") != std::string::npos);
  EventFilter::parse("kind:hook_fire colour:red", &err);
  CHECK(err.message.find("unknown filter field 'colour:'") != std::string::npos);
  CHECK(err.position == 15);
  EventFilter::parse("owner:\"Reducer 2", &err);
  CHECK(err.message.find("unterminated quote") != std::string::npos);
  EventFilter::parse("hook:postt", &err);
  CHECK(err.message.find("no hook kind") != std::string::npos);
  EventFilter::parse("owner:", &err);
  CHECK(err.message.find("needs a value") != std::string::npos);
}

TEST_CASE("filter: matches what a brute-force scan of the recovery trace finds") {
  const analysis::Model& m = *shared_recovery();
  const auto fires = brute_force(m, [&](size_t i) { return m.event(i).kind == EventKind::kHookFired; });
  REQUIRE(!fires.empty());
  CHECK(selected(m, "kind:hook_fire") == fires);
  CHECK(selected(m, "KIND:HOOK_FIRE") == fires);  // case-insensitive
  CHECK(selected(m, "kind:hook_*").size() > fires.size());
  const auto not_fires = selected(m, "-kind:hook_fire");
  CHECK(not_fires.size() + fires.size() == m.num_events());

  // owner:"Reducer N" rank:1 — every match is an event of that owner on rank 1.
  std::string reducer_name;
  for (const auto& r : m.reducers()) {
    if (r.rank == 1) {
      reducer_name = m.owner_name(r.owner);
      break;
    }
  }
  REQUIRE(!reducer_name.empty());
  const std::string expr = "kind:hook_fire owner:\"" + reducer_name + "\" fn:AccumulateGrad rank:1";
  const auto rows = selected(m, expr);
  const auto expected = brute_force(m, [&](size_t i) {
    const trace::Event e = m.event(i);
    if (e.kind != EventKind::kHookFired || e.rank != 1) return false;
    const auto o = m.find_owner(m.source(i), e.owner);
    const auto f = m.find_function(m.source(i), e.node);
    return o != analysis::kNoIndex && m.owner_name(o) == reducer_name && f != analysis::kNoIndex &&
           m.function_name(f).find("AccumulateGrad") != std::string::npos;
  });
  CHECK(!rows.empty());
  CHECK(rows == expected);

  // A bare word searches the description; #id names a Function by raw id.
  const auto weight = selected(m, "kind:node_created 0.weight");
  CHECK(!weight.empty());
  for (size_t i : weight) CHECK(m.describe(i).find("0.weight") != std::string::npos);
  const trace::Event first_fire = m.event(fires.front());
  const auto by_id = selected(m, "kind:hook_fire fn:#" + std::to_string(first_fire.node) + " rank:" +
                                     std::to_string(first_fire.rank));
  CHECK(std::find(by_id.begin(), by_id.end(), fires.front()) != by_id.end());
}

TEST_CASE("hook keys read as serial.slot and parse back, key: filters accept both forms") {
  CHECK(trace::format_hook_key(5) == "5");
  CHECK(trace::format_hook_key((uint64_t{9} << 24) | 3) == "9.3");
  CHECK(trace::parse_hook_key("9.3") == ((uint64_t{9} << 24) | 3));
  CHECK(trace::parse_hook_key("150994947") == ((uint64_t{9} << 24) | 3));
  CHECK_FALSE(trace::parse_hook_key("9.x"));
  CHECK_FALSE(trace::parse_hook_key("9.16777216"));  // the slot has 24 bits
  CHECK_FALSE(trace::parse_hook_key(""));
  const analysis::Model& m = *shared_recovery();
  const auto fires = selected(m, "kind:hook_fire");
  REQUIRE(!fires.empty());
  const uint64_t key = m.event(fires.front()).key;
  const auto by_text = selected(m, "kind:hook_fire key:" + trace::format_hook_key(key));
  const auto by_raw = selected(m, "kind:hook_fire key:" + std::to_string(key));
  CHECK(by_text == by_raw);
  CHECK(std::find(by_text.begin(), by_text.end(), fires.front()) != by_text.end());
  CHECK(m.describe(fires.front()).find("key " + trace::format_hook_key(key)) != std::string::npos);
}
#endif
