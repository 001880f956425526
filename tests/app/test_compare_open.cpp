// Note [Compare off the UI thread]: the diff of A and B is made by a job of
// its own, not in a frame; what lands is what diff_models says.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diff.h"
#include "app.h"
#include "testing/headless_app.h"
#include "testing/test_util.h"

using namespace hookscope;

namespace {

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

// The window's way: frames poll, nothing waits for a background job.
app::Args interactive_args(std::vector<std::string> a, std::vector<std::string> b) {
  app::Args args;
  args.files = std::move(a);
  args.compare = std::move(b);
  args.panel = "compare";
  return args;
}

void check_same_finding(const analysis::Finding& x, const analysis::Finding& y) {
  CHECK(x.kind == y.kind);
  CHECK(x.message == y.message);
  CHECK(x.at == y.at);
  CHECK(x.events == y.events);
  CHECK(x.function == y.function);
  CHECK(x.key == y.key);
}

}  // namespace

TEST_CASE("app compare: the diff is made off the UI thread, a frame says comparing meanwhile, and it equals "
          "diff_models") {
  testing::scratch_config_dir("hookscope_app_compare_open");
  testing::HeadlessApp ui(interactive_args({sample("recovery-none")}, {sample("recovery-by-key")}));
  app::App& app = ui.app();
  const app::CompareState& c = app.compare();
  // Before the job: a frame ends with both models and both sides' findings
  // in, and no diff yet (with the diff made inside the frame, no frame ever
  // ended so).
  bool comparing_seen = false;
  const bool settled = testing::frames_until(
      [&] {
        const bool inputs_in = app.session().model() && c.model && app.findings().ready &&
                               c.findings.valid() && c.findings.wait_for(std::chrono::seconds(0)) ==
                                                         std::future_status::ready;
        comparing_seen |= inputs_in && !c.diff;
        return app.settled() && c.diff != nullptr;
      },
      [&] { ui.frame(); }, 120);
  REQUIRE(settled);
  CHECK(comparing_seen);
  CHECK(c.error.empty());

  const analysis::Model& a = *app.session().model();
  const std::vector<analysis::Finding> findings_a = analysis::diagnose(a);
  const analysis::ModelDiff want = analysis::diff_models(a, findings_a, *c.model, analysis::diagnose(*c.model));
  const analysis::ModelDiff& got = *c.diff;
  REQUIRE(got.functions.size() == want.functions.size());
  CHECK(got.num_differing() == want.num_differing());
  CHECK(got.num_differing() > 0);  // policy none leaks hooks that by-key removes
  for (size_t i = 0; i < want.functions.size(); ++i) {
    CHECK(got.functions[i].function == want.functions[i].function);
    CHECK(got.functions[i].hooks_a == want.functions[i].hooks_a);
    CHECK(got.functions[i].hooks_b == want.functions[i].hooks_b);
  }
  REQUIRE(got.only_a.size() == want.only_a.size());
  REQUIRE(got.only_b.size() == want.only_b.size());
  for (size_t i = 0; i < want.only_a.size(); ++i) check_same_finding(got.only_a[i], want.only_a[i]);
  for (size_t i = 0; i < want.only_b.size(); ++i) check_same_finding(got.only_b[i], want.only_b[i]);
  // A's findings unpacked for the synchronised graphs: diagnose()'s, in its order.
  REQUIRE(c.findings_a.size() == findings_a.size());
  for (size_t i = 0; i < findings_a.size(); ++i) check_same_finding(c.findings_a[i], findings_a[i]);
}

TEST_CASE("app compare: a B opened while the diff is being made drops that diff; the new B is compared") {
  testing::scratch_config_dir("hookscope_app_compare_open");
  testing::HeadlessApp ui(interactive_args({sample("recovery-none")}, {sample("recovery-by-key")}));
  app::App& app = ui.app();
  const app::CompareState& c = app.compare();
  REQUIRE(testing::frames_until([&] { return c.pending.valid() || c.diff; }, [&] { ui.frame(); }, 120));
  // A newer B while the first diff may be in flight: the old result must not land as B's.
  app.open_compare({sample("shared-module-by-type")});
  REQUIRE(testing::frames_until([&] { return app.settled() && c.diff != nullptr; }, [&] { ui.frame(); }, 120));
  REQUIRE(c.files == std::vector<std::string>{sample("shared-module-by-type")});
  const analysis::ModelDiff want = analysis::diff_models(*app.session().model(), *c.model);
  REQUIRE(c.diff->functions.size() == want.functions.size());
  for (size_t i = 0; i < want.functions.size(); ++i) {
    CHECK(c.diff->functions[i].function == want.functions[i].function);
    CHECK(c.diff->functions[i].hooks_b == want.functions[i].hooks_b);
  }
  // Retired jobs are forgotten once done: the window goes idle again.
  CHECK(testing::frames_until([&] { return !app.wants_frames(); }, [&] { ui.frame(); }, 120));
}

#endif
