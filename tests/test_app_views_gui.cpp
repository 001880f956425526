// The Lanes, Readiness and "Why did this fire?" panels in the real app under
// Xvfb, measured: `--panel NAME` puts the view in front, the screenshot's
// pixels inside the rectangles the panel reports (HOOKSCOPE_VIEWS_REPORT) are
// counted by colour. Skips, saying why, without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <stb_image.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "render/layout/colors.h"
#include "test_util.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"
#include "view_colors.h"

using namespace hookscope;
using trace::EventKind;
namespace fs = std::filesystem;

namespace {

fs::path views_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_views_gui");
  return dir;
}

bool have_xvfb() { return testing::have_xvfb(); }

std::string record(const std::string& scenario, const std::string& options) {
  std::string name = scenario + options;
  for (char& c : name) c = std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return testing::record_once(views_dir(), name, scenario + " " + options);
}

struct Shot : testing::Pixels {
  nlohmann::json report;
  // Pixels within `tol` of `color` (IM_COL32 packing) inside the report's rect `name`.
  size_t count(const std::string& name, uint32_t color, int tol = 12) const {
    const auto& r = report.at(name);
    return Pixels::count(color, r[0].get<float>(), r[1].get<float>(), r[2].get<float>(), r[3].get<float>(), tol);
  }
  size_t area(const std::string& name) const {
    const auto& r = report.at(name);
    return static_cast<size_t>(std::max(0.f, r[2].get<float>() - r[0].get<float>()) *
                               std::max(0.f, r[3].get<float>() - r[1].get<float>()));
  }
};

Shot shoot(const std::string& trace, const std::string& args, const std::string& name) {
  const std::string png = (views_dir() / (name + ".png")).string();
  const std::string json = (views_dir() / (name + ".json")).string();
  const auto r = testing::run_gui(trace + " " + args + " --screenshot " + png, "HOOKSCOPE_VIEWS_REPORT=" + json);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  Shot s;
  testing::load_png(png, s);
  std::ifstream in(json);
  REQUIRE_MESSAGE(in.good(), "no views report at " << json);
  s.report = nlohmann::json::parse(in);
  return s;
}

}  // namespace

TEST_CASE("gui views: lanes turn red where hooks outlive their owner with policy none and never with by-key" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
    return;
  }
  const uint32_t red = render::kDarkPalette.alarm;
  const Shot none = shoot(record("recovery", "--policy none --recoveries 2"), "--panel lanes", "lanes_none");
  CHECK(none.report["bars"].get<int>() > 10);
  CHECK(none.report["ticks"].get<int>() > 10);
  CHECK(none.report["dead_segments"].get<int>() > 0);
  CHECK(none.report["stale_ticks"].get<int>() > 0);
  CHECK(none.area("lanes") > 100'000);  // the panel is in front and wide
  const size_t red_none = none.count("lanes", red);
  CHECK(red_none > 500);
  // The counter track draws something.
  CHECK(none.count("counter", render::kDarkPalette.background, 2) < none.area("counter"));

  const Shot by_key = shoot(record("recovery", "--policy by-key --recoveries 2"), "--panel lanes", "lanes_by_key");
  CHECK(by_key.report["bars"].get<int>() > 10);
  CHECK(by_key.report["dead_segments"].get<int>() == 0);
  CHECK(by_key.count("lanes", red) == 0);
}

TEST_CASE("gui views: the readiness map shows unused cells for the unused-parameter run and twice cells for marked-twice" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  using app::kReadinessTwice;
  using app::kReadinessUnused;
  const Shot unused = shoot(record("unused-parameter", ""), "--panel readiness", "readiness_unused");
  CHECK(unused.report["cell_status"][2].get<int>() > 0);
  CHECK(unused.count("readiness", kReadinessUnused, 6) > 50);
  CHECK(unused.count("readiness", kReadinessTwice, 6) == 0);

  const Shot twice = shoot(record("marked-twice", ""), "--panel readiness", "readiness_twice");
  CHECK(twice.report["cell_status"][3].get<int>() > 0);
  CHECK(twice.count("readiness", kReadinessTwice, 6) > 50);

  // A healthy run: every cell ok or cut short, none unused or twice.
  const Shot ok = shoot(record("recovery", "--policy by-key --recoveries 2"), "--panel readiness", "readiness_ok");
  CHECK(ok.report["cell_status"][1].get<int>() > 0);
  CHECK(ok.count("readiness", app::kReadinessOk, 6) > 50);
  CHECK(ok.count("readiness", kReadinessUnused, 6) == 0);
  CHECK(ok.count("readiness", kReadinessTwice, 6) == 0);
}

TEST_CASE("gui views: --panel explain at a stale fire gives the stale verdict and its chain" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  const std::string trace = record("recovery", "--policy none --recoveries 2");
  const analysis::Model m(trace::read_trace(trace));
  // The first fire of a hook whose owner was destroyed before it.
  size_t stale = SIZE_MAX;
  for (const auto& h : m.hooks()) {
    if (h.owner == analysis::kNoIndex) continue;
    const auto died = m.owners()[h.owner].destroyed_at;
    for (auto f : m.fires(static_cast<analysis::HookIndex>(&h - m.hooks().data()))) {
      if (died != analysis::kNever && f > died) stale = std::min<size_t>(stale, f);
    }
  }
  REQUIRE(stale != SIZE_MAX);
  const Shot s = shoot(trace, "--panel explain --at " + std::to_string(stale), "explain_stale");
  CHECK(s.report["explain_verdict"] == "stale");
  CHECK(s.report["explain_steps"].get<int>() >= 3);
  CHECK(s.report["explain_links"].get<int>() >= 3);
}

#endif
