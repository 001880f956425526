// Where a trace opens (Note [Publishing a model]) and the graph's layout at
// open (Note [One layout at open]).
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <string>

#include "analysis/model.h"
#include "analysis/state.h"
#include "app.h"
#include "testing/headless_app.h"

using namespace hookscope;

namespace {

std::filesystem::path scratch_dir() { return testing::scratch_config_dir("hookscope_app_open"); }

class HeadlessUi : public testing::HeadlessApp {
 public:
  explicit HeadlessUi(app::Args args) : HeadlessApp((scratch_dir(), std::move(args))) {}
};

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

}  // namespace

TEST_CASE("app: a run that released every Function opens at its last backward pass, its graph laid out there") {
  HeadlessUi ui(testing::headless_args({sample("autograd-demo")}));
  app::App& a = ui.app();
  const app::Session& s = a.session();
  REQUIRE(s.model() != nullptr);
  const analysis::Model& m = *s.model();
  REQUIRE(m.state_at(m.num_events() - 1).functions.empty());  // what makes it open elsewhere
  const auto& ends = m.events_of_kind(trace::EventKind::kBackwardEnd);
  REQUIRE_FALSE(ends.empty());
  CHECK(s.current() == ends.back());
  CHECK_FALSE(m.state_at(s.current()).functions.empty());
  // The graph shows that event's live Functions once its layout lands.
  a.graph().wait_for_layout();
  a.graph().wait_for_live_index();
  for (int i = 0; i < 3; ++i) ui.frame();
  a.graph().wait_for_layout();
  ui.frame();
  CHECK(a.graph().stats().live_units > 0);
  CHECK_FALSE(a.graph().layout_pending());
}

TEST_CASE("app: a run with live Functions at its end opens at its last event") {
  HeadlessUi ui(testing::headless_args({sample("recovery-none")}));
  const app::Session& s = ui.app().session();
  REQUIRE(s.model() != nullptr);
  REQUIRE_FALSE(s.model()->state_at(s.model()->num_events() - 1).functions.empty());
  CHECK(s.current() == s.num_events() - 1);
}

#endif  // HOOKSCOPE_APP_UI
