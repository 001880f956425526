// The app's logic without a window: filter expressions and the Session
// (stepping, lifecycle jumps, bookmarks, playback) on real recorded traces.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <memory>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "event_filter.h"
#include "scenarios/ddp_scenarios.h"
#include "session.h"
#include "test_util.h"

using namespace hookscope;
using namespace hookscope::app;
using trace::EventKind;

namespace {

// Two ranks, one failure, DDP rebuilt, old Reducer's hooks left (policy none).
std::shared_ptr<const analysis::Model> recovery_model(trace::DestroyPolicy policy) {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = policy;
  o.steps = 5;
  o.recoveries = 1;
  auto data = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
  return std::make_shared<const analysis::Model>(std::move(data));
}

const std::shared_ptr<const analysis::Model>& shared_recovery() {
  static auto model = recovery_model(trace::DestroyPolicy::kNone);
  return model;
}

std::vector<size_t> brute_force(const analysis::Model& m, const std::function<bool(size_t)>& pred) {
  std::vector<size_t> out;
  for (size_t i = 0; i < m.num_events(); ++i) {
    if (pred(i)) out.push_back(i);
  }
  return out;
}

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

TEST_CASE("session: stepping moves the current state as the model replays it") {
  Session s;
  CHECK(s.empty());
  s.step(1);  // nothing open: nothing happens
  CHECK(s.current() == 0);
  const auto& model = shared_recovery();
  s.set_model(model, false, 10);
  CHECK(s.current() == 10);
  s.step(+1);
  CHECK(s.current() == 11);
  CHECK(s.state() == model->state_at(11));
  s.step(-100);
  CHECK(s.current() == 0);
  s.go_last();
  CHECK(s.current() == model->num_events() - 1);
  s.step(+5);
  CHECK(s.current() == model->num_events() - 1);
  s.go_to(model->num_events() / 2);
  CHECK(s.state() == model->state_at(model->num_events() / 2));
  s.go_to(1'000'000'000);
  CHECK(s.current() == model->num_events() - 1);
}

TEST_CASE("session: PgDn/PgUp walk constructed, failure, destroyed, rebuilt in order") {
  Session s;
  s.set_model(shared_recovery(), false, 0);
  std::vector<EventKind> seen;
  while (s.step_lifecycle(+1)) seen.push_back(s.model()->event(s.current()).kind);
  REQUIRE(seen.size() >= 4);
  CHECK(seen.front() == EventKind::kReducerConstructed);
  // The story: constructed ... failure ... destroyed ... rebuilt ... (constructed again).
  const auto failure = std::find(seen.begin(), seen.end(), EventKind::kFailure);
  REQUIRE(failure != seen.end());
  const auto destroyed = std::find(failure, seen.end(), EventKind::kReducerDestroyed);
  REQUIRE(destroyed != seen.end());
  const auto rebuilt = std::find(destroyed, seen.end(), EventKind::kRecoveryStep);
  CHECK(rebuilt != seen.end());
  CHECK(std::find(destroyed, seen.end(), EventKind::kReducerConstructed) != seen.end());
  const size_t last = s.current();
  CHECK_FALSE(s.step_lifecycle(+1));
  CHECK(s.current() == last);
  CHECK(s.step_lifecycle(-1));
  CHECK(s.current() < last);
}

TEST_CASE("session: Ctrl+arrows step through events of one kind") {
  Session s;
  const auto& m = shared_recovery();
  s.set_model(m, false, 0);
  s.set_step_kind(EventKind::kHookFired);
  const auto fires = brute_force(*m, [&](size_t i) { return m->event(i).kind == EventKind::kHookFired; });
  for (size_t k = 0; k < 5; ++k) {
    REQUIRE(s.step_kind(+1));
    CHECK(s.current() == fires[k]);
  }
  REQUIRE(s.step_kind(-1));
  CHECK(s.current() == fires[3]);
  // No kind chosen: the current event's kind.
  s.set_step_kind(EventKind::kNone);
  s.go_to(m->events_of_kind(EventKind::kBucketReady).front());
  REQUIRE(s.step_kind(+1));
  CHECK(m->event(s.current()).kind == EventKind::kBucketReady);
  CHECK(s.current() == m->events_of_kind(EventKind::kBucketReady)[1]);
}

TEST_CASE("session: bookmarks toggle, stay sorted, keep at most nine, and jump") {
  Session s;
  s.set_model(shared_recovery(), false, 0);
  for (size_t i : {50u, 20u, 80u}) {
    s.go_to(i);
    CHECK(s.toggle_bookmark());
  }
  CHECK(s.bookmarks() == std::vector<size_t>{20, 50, 80});
  s.go_to(0);
  CHECK(s.jump_to_bookmark(1));
  CHECK(s.current() == 50);
  CHECK_FALSE(s.toggle_bookmark());  // removed
  CHECK(s.bookmarks() == std::vector<size_t>{20, 80});
  CHECK_FALSE(s.jump_to_bookmark(5));
  for (size_t i = 100; i < 120; ++i) {
    s.go_to(i);
    s.toggle_bookmark();
  }
  CHECK(s.bookmarks().size() == Session::kMaxBookmarks);
  CHECK(std::is_sorted(s.bookmarks().begin(), s.bookmarks().end()));
  CHECK(s.bookmarks().back() == 119);  // the newest is kept
}

TEST_CASE("session: playback advances at its speed and stops at the end") {
  Session s;
  const auto& m = shared_recovery();
  s.set_model(m, false, 0);
  s.set_speed(100.0);
  s.set_playing(true);
  s.advance(0.105);
  CHECK(s.current() == 10);
  s.advance(0.005);  // half an event owed, then the other half
  s.advance(0.005);
  CHECK(s.current() == 11);
  s.advance(1e6);
  CHECK(s.current() == m->num_events() - 1);
  CHECK_FALSE(s.playing());
  s.set_playing(true);  // at the end: plays from the start
  CHECK(s.current() == 0);
}

TEST_CASE("session: a grown live model keeps the position, or follows the end") {
  auto small = std::make_shared<const analysis::Model>(analysis::make_synthetic_trace({.events = 5000}));
  auto big = std::make_shared<const analysis::Model>(analysis::make_synthetic_trace({.events = 20000}));
  Session s;
  s.set_model(small, false, 100);
  s.select_function(3);
  s.set_model(big, true);
  CHECK(s.current() == 100);
  CHECK(s.selected_function() == 3);
  s.set_model(small, false, 0);
  s.go_last();
  s.set_model(big, true);
  CHECK(s.current() == big->num_events() - 1);
}
#endif

#if HOOKSCOPE_APP_UI
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
