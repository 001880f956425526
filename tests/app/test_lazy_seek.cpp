// Note [Lazy seeks in the GUI]: above a (here lowered) size threshold a far
// seek moves the current event at once and the full State follows from a
// worker thread; until then the Session says pending and the panels say
// "computing the state at #N...", never the old event's content. Then the
// State is state_at's.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "analysis/model.h"
#include "app.h"
#include "panel_common.h"
#include "session.h"
#include "testing/headless_app.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::app;
namespace fs = std::filesystem;

namespace {

// Lowers the threshold for one test, restores it after.
struct LazyThreshold {
  LazyThreshold(size_t functions, size_t step_events) { Session::set_lazy_threshold(functions, step_events); }
  ~LazyThreshold() { Session::set_lazy_threshold(kLazyStateFunctions, kLazyStepEvents); }
};

std::shared_ptr<const analysis::Model> recovery_model() {
  static const auto m =
      std::make_shared<const analysis::Model>(testing::record_recovery_trace(), analysis::ModelOptions{256, 8.0});
  return m;
}

fs::path scratch_dir() { return testing::scratch_config_dir("hookscope_lazy_seek"); }

}  // namespace

TEST_CASE("session: below the threshold a seek is synchronous, as before") {
  Session s;
  s.set_model(recovery_model(), false, 0);
  REQUIRE(recovery_model()->functions().size() <= Session::lazy_threshold());
  CHECK_FALSE(s.lazy());
  s.go_last();
  REQUIRE(s.full_state() != nullptr);
  CHECK(s.full_state()->index == s.current());
  CHECK(&s.state() == s.full_state());
}

TEST_CASE("session: above the threshold a far seek is pending until polled, then state_at's; near moves step") {
  LazyThreshold lower(0, 8);
  const auto model = recovery_model();
  const size_t last = model->num_events() - 1;
  REQUIRE(last > 100);
  Session s;
  s.set_model(model, false, 0);
  REQUIRE(s.lazy());
  REQUIRE(s.full_state() != nullptr);  // opening builds the state, as before

  s.go_to(last);
  CHECK(s.current() == last);
  CHECK(s.state_pending());
  CHECK(s.full_state() == nullptr);  // never event 0's state
  CHECK(s.state().index == last);
  CHECK(s.state().functions.empty());
  CHECK(s.view().index() == last);
  s.wait_state();
  REQUIRE(s.full_state() != nullptr);
  CHECK(*s.full_state() == model->state_at(last));

  // Near: stepped on the calling thread, never pending.
  s.step(-3);
  CHECK_FALSE(s.state_pending());
  CHECK(*s.full_state() == model->state_at(last - 3));

  // A second far seek before the first is built: the latest wins, and a
  // poll hands over nothing but the current event's state.
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const size_t a = rng() % model->num_events(), b = rng() % model->num_events();
    s.go_to(a);
    s.go_to(b);
    CHECK(s.current() == b);
    for (int i = 0; i < 3; ++i) {
      s.poll();
      if (const analysis::State* st = s.full_state()) CHECK(st->index == b);
    }
    s.wait_state();
    REQUIRE(s.full_state() != nullptr);
    CHECK(*s.full_state() == model->state_at(b));
    CHECK(s.view().index() == b);
  }
  // Back where the cursor is while pending: no longer pending.
  const size_t here = s.current();
  s.go_to(here > 100 ? here - 100 : here + 100);
  CHECK(s.state_pending());
  s.go_to(here);
  CHECK_FALSE(s.state_pending());
  CHECK(*s.full_state() == model->state_at(here));
}

namespace {

// How many panels said "computing the state at #N..." (pending_notes()) in
// one frame, and in the frame a key goes down in (the App moves after its
// poll, so the panels drawn in it see the move).
size_t notes_in_frame(testing::HeadlessApp& ui) {
  const size_t before = pending_notes().drawn;
  ui.frame();
  return pending_notes().drawn - before;
}
size_t notes_in_press(testing::HeadlessApp& ui, int code) {
  ui.key(code, true);
  const size_t down = notes_in_frame(ui);
  ui.key(code, false);
  ui.frame();
  return down;
}

}  // namespace

TEST_CASE("app: above the threshold the whole-state panels say computing, the Graph draws the new event's view") {
  LazyThreshold lower(0, 8);
  const fs::path trace = scratch_dir() / "recovery_none.hstrace";
  const auto rec = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " record recovery --steps 5 --policy none -o " +
                                        trace.string());
  REQUIRE_MESSAGE(rec.exit == 0, rec.out);
  testing::HeadlessApp ui(testing::headless_args({trace.string()}));
  Session& s = ui.app().session();
  REQUIRE(s.model() != nullptr);
  REQUIRE(s.lazy());
  const size_t last = s.num_events() - 1;
  REQUIRE(s.current() == last);  // opens at the end
  CHECK(notes_in_frame(ui) == 0);

  // A far seek: the panels drawn in the frame it happens in that need the
  // whole State say pending (the Inspector, the Reducers), for the new
  // event; the Graph draws that event from the StateView (Note [Graph while
  // the state is pending]).
  const render::GraphView& graph = ui.app().graph();
  ui.key(testing::kHome, true);
  const size_t down = notes_in_frame(ui);
  const bool pending_then = s.state_pending(), graph_pending = graph.stats().state_pending;
  ui.key(testing::kHome, false);
  ui.frame();
  CHECK(down >= 1);
  CHECK(s.current() == 0);
  CHECK(pending_notes().last_at == 0);
  CHECK(graph_pending == pending_then);
  if (s.state_pending()) CHECK(s.full_state() == nullptr);
  REQUIRE(testing::frames_until([&] { return !s.state_pending(); }, [&] { ui.frame(); }));
  CHECK(*s.full_state() == s.model()->state_at(0));
  CHECK(notes_in_frame(ui) == 0);

  CHECK(notes_in_press(ui, testing::kEnd) >= 1);
  CHECK(pending_notes().last_at == last);
  REQUIRE(testing::frames_until([&] { return !s.state_pending(); }, [&] { ui.frame(); }));
  REQUIRE(s.full_state() != nullptr);
  CHECK(*s.full_state() == s.model()->state_at(last));
  CHECK(notes_in_frame(ui) == 0);
}
#endif
