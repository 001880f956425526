// The app's logic without a window: the Session (stepping, lifecycle jumps,
// bookmarks, playback) on real recorded traces. The Events filter:
// test_event_filter.cpp.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <algorithm>
#include <memory>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "session.h"
#include "testing/recovery_model.h"

using namespace hookscope;
using namespace hookscope::app;
using testing::brute_force;
using testing::shared_recovery;
using trace::EventKind;

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
