// Readable text in the real app under Xvfb at 1280x800, measured through the
// draw and views reports (Note [Draw report]): the owners' legend never runs
// past the graph panel's edge (1280x800 and 1920x1080) and says "gen" only where a rank holds copies
// of its parameters; the readiness map numbers its backward passes; the
// lanes of several ranks name each group's rank. Skips without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "analysis/model.h"
#include "render/layout/story.h"
#include "testing/test_util.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path text_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_text_gui");
  return dir;
}

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

// The draw report (or the views report) of a screenshot of `trace` with `args`.
json report_of(const std::string& trace, const std::string& args, const std::string& name,
               const std::string& env = "HOOKSCOPE_DRAW_REPORT", const std::string& size = "1280x800") {
  const std::string png = (text_dir() / (name + ".png")).string(), rep = (text_dir() / (name + ".json")).string();
  const auto r = testing::run_gui(trace + " " + args + " --screenshot " + png, env + "=" + rep, size);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  std::ifstream in(rep);
  REQUIRE_MESSAGE(in.good(), "no report: " << r.out);
  return json::parse(in);
}

bool no_xvfb() {
  if (testing::have_xvfb()) return false;
  MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
  return true;
}

}  // namespace

TEST_CASE("gui text: the owners' legend stays inside the graph panel and says gen only where copies exist" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  // Three Reducers per rank, leaked, and the user's hooks: more owners than one line holds at 1280.
  const std::string trace = testing::record_once(text_dir(), "recovery_none_3", "recovery --policy none --recoveries 3");
  const analysis::Model m(trace::read_trace(trace));
  const render::Generations gens(m);
  analysis::EventIndex first = analysis::kNever;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) first = std::min(first, gens.owner_label_from(o));
  REQUIRE(first != analysis::kNever);  // rank 1 is replaced: its parameters have copies
  for (const std::string theme : {"", " --light"}) {
    const json end = report_of(trace, theme, "legend_end")["legend"];
    INFO("end" << theme << ": " << end.dump());
    CHECK(end["entries"].get<int>() >= 1);
    CHECK(end["right"].get<float>() <= end["panel_right"].get<float>());
    CHECK(end["lines"].get<int>() <= 2);
    CHECK(end["gens"].get<int>() >= 1);
  }
  // Before the first copy nothing needs telling apart: no "gen" anywhere.
  const json before = report_of(trace, "--at " + std::to_string(first - 1), "legend_before")["legend"];
  INFO("before: " << before.dump());
  CHECK(before["gens"].get<int>() == 0);
  CHECK(before["right"].get<float>() <= before["panel_right"].get<float>());
}

// 1280 is the narrow case; at 1920x1080 the graph panel is wider but the
// font too may be: the legend still ends inside the panel, dark and light,
// on the runs with most owners (three leaked Reducers a rank; the kept-alive
// run's lingering ones).
TEST_CASE("gui text: the owners' legend never runs past the graph panel at 1920x1080, dark and light" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string recovery =
      testing::record_once(text_dir(), "recovery_none_3", "recovery --policy none --recoveries 3");
  const std::string kept = testing::record_once(text_dir(), "kept_alive", "kept-alive --world-size 2 --steps 8");
  // Where each holds most owners: recovery's end (its Reducers leaked), the
  // kept-alive run's middle (its Reducers are destroyed at exit).
  for (const auto& [trace, end] : {std::pair{recovery, true}, std::pair{kept, false}}) {
    const analysis::Model m(trace::read_trace(trace));
    const size_t at = end ? m.num_events() - 1 : m.num_events() / 2;
    for (const std::string theme : {"", "--light"}) {
      const std::string name =
          fs::path(trace).stem().string() + "_" + std::to_string(at) + (theme.empty() ? "_dark" : "_light");
      const json legend = report_of(trace, theme + " --at " + std::to_string(at), "legend_1920_" + name,
                                    "HOOKSCOPE_DRAW_REPORT", "1920x1080")["legend"];
      INFO(name << ": " << legend.dump());
      CHECK(legend["entries"].get<int>() >= 1);
      CHECK(legend["right"].get<float>() <= legend["panel_right"].get<float>());
      CHECK(legend["entries"].get<size_t>() + legend["more"].get<size_t>() == legend["names"].size());
    }
  }
}

// Note [Legend of the trace's owners]: the legend names exactly the owners
// whose hooks the graph can show at the event: holding hooks, or alive and
// having held one by then; never an owner that never held a hook. The
// timeline's legend names the marker kinds the trace has.
TEST_CASE("gui text: the legends name only owners that hold or held hooks and markers the trace has, on every sample" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  for (const char* name : {"recovery-none", "recovery-by-key", "shared-module-by-type", "autograd-demo"}) {
    const analysis::Model m(trace::read_trace(sample(name)));
    for (const size_t at : {m.num_events() / 2, m.num_events() - 1}) {
      CAPTURE(name);
      CAPTURE(at);
      std::set<std::string> want;
      for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
        const analysis::OwnerInfo& info = m.owners()[o];
        bool held = false, holds = false;
        for (const analysis::HookInfo& h : m.hooks()) {
          if (h.owner != o || h.added_at > at) continue;
          held = true;
          holds |= h.ended_at == analysis::kNever || h.ended_at > at;
        }
        if (info.created_at <= at && (holds || (held && info.destroyed_at > at))) want.insert(m.owner_name(o));
      }
      const std::string shot = std::string("legend_") + name + "_" + std::to_string(at);
      const json report = report_of(sample(name), "--at " + std::to_string(at), shot);
      const json& legend = report["legend"];
      INFO(legend.dump());
      std::set<std::string> got;
      for (const json& n : legend["names"]) got.insert(n.get<std::string>());
      CHECK(got == want);
      CHECK(legend["entries"].get<size_t>() + legend["more"].get<size_t>() == got.size());
      // The timeline's legend: the marker kinds the trace has, no others.
      std::set<std::string> timeline;
      for (const json& n : report["timeline_legend"]) timeline.insert(n.get<std::string>());
      INFO(report["timeline_legend"].dump());
      CHECK((timeline.count("failed") == 1) == !m.events_of_kind(trace::EventKind::kFailure).empty());
      CHECK((timeline.count("Reducer built") == 1) == !m.events_of_kind(trace::EventKind::kReducerConstructed).empty());
      CHECK((timeline.count("destroyed") == 1) == !m.events_of_kind(trace::EventKind::kReducerDestroyed).empty());
      CHECK(timeline.count("Function") == 1);
      // Note [Lingering owners]: a marker of its own where a Reducer was replaced while alive.
      const bool replaced = std::any_of(m.owners().begin(), m.owners().end(),
                                        [](const analysis::OwnerInfo& o) { return o.replaced_at != analysis::kNever; });
      CHECK((timeline.count("lingering") == 1) == replaced);
    }
  }
}

TEST_CASE("gui text: readiness columns carry backward-pass numbers; lanes of two ranks name the rank" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const json readiness = report_of(sample("recovery-none"), "--panel readiness", "readiness", "HOOKSCOPE_VIEWS_REPORT");
  INFO(readiness.dump());
  CHECK(readiness["cells"].get<int>() > 0);
  CHECK(readiness["readiness_headers"].get<int>() >= 2);  // a number per rank's first pass at least
  const json lanes = report_of(sample("recovery-none"), "--panel lanes", "lanes", "HOOKSCOPE_VIEWS_REPORT");
  INFO(lanes.dump());
  CHECK(lanes["lane_headers"].get<int>() > 0);
  CHECK(lanes["ranked_lane_headers"].get<int>() == lanes["lane_headers"].get<int>());
}

#endif  // HOOKSCOPE_APP_UI
