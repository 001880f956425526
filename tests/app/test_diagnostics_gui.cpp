// The Diagnostics panel in the real app under Xvfb, measured through the draw
// report (Note [Draw report]: "diagnostics" lists each message's text and
// rect, and the panel's text area): at 1280x800 and 1920x1080, dark and
// light, every row's message is drawn whole (the finding's full text,
// wrapped inside the panel, never cut until clicked), on the kept-alive run
// (its hook_growth rows telling each old Reducer's story as the run had it),
// a failed 2-rank run with and without findings, and the samples. The bridge
// trace's cell is tests/torch/test_gui_bridge.py. Skips without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/model.h"
#include "testing/gui_harness.h"
#include "testing/test_util.h"
#include "trace/reader.h"

using namespace hookscope;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path diagnostics_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_diagnostics_gui");
  return dir;
}

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

struct Size {
  const char* dims;
  bool light;
};
constexpr Size kSizes[] = {{"1280x800", false}, {"1920x1080", true}};

// The draw report's "diagnostics" of `trace` at `size`.
json diagnostics_of(const std::string& trace, const std::string& name, const Size& size) {
  const std::string png = (diagnostics_dir() / (name + ".png")).string();
  const std::string rep = (diagnostics_dir() / (name + ".json")).string();
  const auto r = testing::run_gui(std::string(size.light ? "--light " : "") + trace + " --screenshot " + png,
                                  "HOOKSCOPE_DRAW_REPORT=" + rep, size.dims);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  std::ifstream in(rep);
  REQUIRE_MESSAGE(in.good(), "no report: " << r.out);
  return json::parse(in)["diagnostics"];
}

float at(const json& rect, int i) { return rect[i].get<float>(); }

// Every row is a whole message of the trace (its findings', or the
// no-findings line) inside the text area across, wrapped where it is longer
// than a line; one row per finding; some rows on screen.
void check_rows_whole(const json& d, const std::vector<analysis::Finding>& findings) {
  INFO(d.dump());
  const json& area = d["area"];
  const float line_h = d["line_h"].get<float>();
  REQUIRE(line_h > 0.f);
  const json& rows = d["rows"];
  CHECK(rows.size() == std::max<size_t>(findings.size(), 1));
  size_t on_screen = 0;
  for (const json& row : rows) {
    const std::string text = row["text"].get<std::string>();
    CAPTURE(text);
    const json& r = row["rect"];
    CHECK(row["wrapped"].get<bool>());
    CHECK(at(r, 0) >= at(area, 0) - 0.5f);
    CHECK(at(r, 2) <= at(area, 2) + 0.5f);  // a line of a cut message ran past the panel's edge
    CHECK(text.find("more bytes)") == std::string::npos);
    if (findings.empty()) {
      CHECK(row["kind"] == "none");
      CHECK(text.rfind("At the end (#", 0) == 0);
    } else {
      const bool found = std::any_of(findings.begin(), findings.end(), [&](const analysis::Finding& f) {
        return f.message == text && analysis::to_string(f.kind) == row["kind"].get<std::string>();
      });
      CHECK(found);
    }
    on_screen += at(r, 1) < at(area, 3) && at(r, 3) > at(area, 1);
  }
  CHECK(on_screen >= 1);
}

bool no_xvfb() {
  if (testing::have_xvfb()) return false;
  MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
  return true;
}

}  // namespace

TEST_CASE("gui diagnostics: the kept-alive run's rows wrap whole, hook_growth tells each Reducer's story" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace =
      testing::record_once(diagnostics_dir(), "kept_alive", "kept-alive --world-size 2 --steps 8");
  const analysis::Model m(trace::read_trace(trace));
  const std::vector<analysis::Finding> findings = analysis::diagnose(m);
  // Each old Reducer on rank 0: replaced while alive, destroyed at exit.
  std::vector<std::string> stories;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
    const analysis::OwnerInfo& info = m.owners()[o];
    if (info.rank != 0 || info.replaced_at == analysis::kNever) continue;
    REQUIRE(info.destroyed_at != analysis::kNever);
    REQUIRE(info.replaced_by != analysis::kNoIndex);
    stories.push_back(m.owner_name(o) + " was replaced by " + m.owner_name(info.replaced_by) + " at #" +
                      std::to_string(info.replaced_at) + " and stayed alive until it was destroyed at #" +
                      std::to_string(info.destroyed_at));
  }
  REQUIRE(stories.size() == 2);
  for (const Size& size : kSizes) {
    CAPTURE(size.dims);
    const json d = diagnostics_of(trace, std::string("kept_alive_") + size.dims, size);
    check_rows_whole(d, findings);
    size_t growth_r0 = 0, multi_line = 0;
    for (const json& row : d["rows"]) {
      const std::string text = row["text"].get<std::string>();
      multi_line += at(row["rect"], 3) - at(row["rect"], 1) >= 1.5f * d["line_h"].get<float>();
      if (row["kind"] != "hook_growth") continue;
      CAPTURE(text);
      // False for this run: its Reducers were alive while their hooks fired.
      CHECK(text.find("destroyed owners stay attached") == std::string::npos);
      CHECK(text.find("still alive") == std::string::npos);  // all were destroyed at exit
      if (text.find(stories[0]) == std::string::npos) continue;  // rank 1's
      ++growth_r0;
      for (const std::string& s : stories) CHECK(text.find(s) != std::string::npos);
    }
    CHECK(growth_r0 > 0);
    CHECK(multi_line > 0);  // hook_growth's story is longer than a line at either size
  }
}

namespace {

// A failed 2-rank run (recovery): rank 1 fails, DDP is rebuilt on the same module.
void check_failed_run(const std::string& policy, bool findings_expected) {
  const std::string trace = testing::record_once(diagnostics_dir(), "recovery_" + policy,
                                                 "recovery --world-size 2 --policy " + policy);
  const analysis::Model m(trace::read_trace(trace));
  REQUIRE_FALSE(m.events_of_kind(trace::EventKind::kFailure).empty());
  const std::vector<analysis::Finding> findings = analysis::diagnose(m);
  CHECK(findings.empty() != findings_expected);
  for (const Size& size : kSizes) {
    CAPTURE(size.dims);
    check_rows_whole(diagnostics_of(trace, "recovery_" + policy + "_" + size.dims, size), findings);
  }
}

void check_samples(std::initializer_list<const char*> names) {
  for (const char* name : names) {
    CAPTURE(name);
    const analysis::Model m(trace::read_trace(sample(name)));
    const std::vector<analysis::Finding> findings = analysis::diagnose(m);
    for (const Size& size : kSizes) {
      CAPTURE(size.dims);
      check_rows_whole(diagnostics_of(sample(name), std::string(name) + "_" + size.dims, size), findings);
    }
  }
}

}  // namespace

TEST_CASE("gui diagnostics: a failed 2-rank run's rows wrap whole (policy none: leaked hooks)" *
          doctest::test_suite("gui")) {
  if (!no_xvfb()) check_failed_run("none", true);
}

TEST_CASE("gui diagnostics: a failed 2-rank run with no findings shows its no-findings line whole (by-key)" *
          doctest::test_suite("gui")) {
  if (!no_xvfb()) check_failed_run("by-key", false);
}

// Two cases of two samples each: each well under 15 s on a loaded machine.
TEST_CASE("gui diagnostics: the recovery samples' rows wrap whole at two sizes" * doctest::test_suite("gui")) {
  if (!no_xvfb()) check_samples({"recovery-none", "recovery-by-key"});
}

TEST_CASE("gui diagnostics: the shared-module and autograd samples' rows wrap whole at two sizes" *
          doctest::test_suite("gui")) {
  if (!no_xvfb()) check_samples({"shared-module-by-type", "autograd-demo"});
}

#endif  // HOOKSCOPE_APP_UI
