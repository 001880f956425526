// The desktop app tells the story at a glance, measured on real screenshots
// under Xvfb (1280x800) with the app's draw report (Note [Draw report]):
// the failed rank's banner in its column, text never below 10 px at fit,
// the minimap over no box, disjoint rank columns, stale fires and removed
// hooks' ghost chips at their events and not before; bad --at / --select
// exit 2; the compact view's live boxes all on screen; generation labels. Skips, saying why, without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <stb_image.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/layout/colors.h"
#include "render/layout/story.h"
#include "testing/test_util.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;
using trace::EventKind;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path story_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_story");
  return dir;
}

bool no_xvfb() {
  if (testing::have_xvfb()) return false;
  MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
  return true;
}

std::string record(const std::string& args, const std::string& name) {
  return testing::record_once(story_dir(), name, args);
}

struct Shot : testing::Pixels {
  json report;
  // Pixels within `tol` of `color` (0xAABBGGRR) inside [x0, x1) x [y0, y1).
  size_t count(uint32_t color, float x0, float y0, float x1, float y1, int tol = 10) const {
    return Pixels::count(color, x0, y0, x1, y1, tol);
  }
  size_t count(uint32_t color, int tol = 10) const { return count(color, 0, 0, static_cast<float>(w), static_cast<float>(h), tol); }
};

Shot shoot(const std::string& trace, const std::string& args, const std::string& name,
           const std::string& size = "1280x800") {
  const std::string png = (story_dir() / (name + ".png")).string(), rep = (story_dir() / (name + ".json")).string();
  const auto r = testing::run_gui(trace + " " + args + " --screenshot " + png, "HOOKSCOPE_DRAW_REPORT=" + rep, size);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  Shot s;
  testing::load_png(png, s);
  std::ifstream in(rep);
  REQUIRE_MESSAGE(in.good(), "no draw report: " << r.out);
  s.report = json::parse(in);
  return s;
}

struct Box {
  float x0, y0, x1, y1;
};
Box box_of(const json& j) { return {j[0].get<float>(), j[1].get<float>(), j[2].get<float>(), j[3].get<float>()}; }
bool intersect(Box a, Box b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }
Box clip(Box a, Box c) { return {std::max(a.x0, c.x0), std::max(a.y0, c.y0), std::min(a.x1, c.x1), std::min(a.y1, c.y1)}; }

void check_readable(const Shot& s) {
  CHECK(s.report["texts"].get<int>() > 0);
  CHECK(s.report["small_texts"].get<int>() == 0);
  CHECK(s.report["min_text_px"].get<float>() >= 10.f);
}

void check_minimap_and_columns(const Shot& s) {
  const Box content = box_of(s.report["content"]);
  if (s.report["minimap_shown"].get<bool>()) {
    const Box mm = box_of(s.report["minimap"]);
    for (const json& b : s.report["boxes"]) {
      const Box visible = clip(box_of(b), content);
      if (visible.x0 < visible.x1 && visible.y0 < visible.y1) CHECK_FALSE(intersect(visible, mm));
    }
  }
  const json& cols = s.report["rank_columns"];
  for (size_t i = 0; i < cols.size(); ++i) {
    for (size_t j = i + 1; j < cols.size(); ++j) CHECK_FALSE(intersect(box_of(cols[i]["rect"]), box_of(cols[j]["rect"])));
  }
}

}  // namespace

TEST_CASE("gui story: at the failure the failed rank's banner is drawn in its column, in both themes" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = record("recovery --policy none --recoveries 2", "recovery_none");
  const analysis::Model m(trace::read_trace(trace));
  const size_t failure = m.events_of_kind(EventKind::kFailure).at(0);
  const int failed = static_cast<int>(m.event(failure).actor);
  for (const bool light : {false, true}) {
    CAPTURE(light);
    const std::string theme = light ? " --light" : "";
    const render::Palette& pal = light ? render::kLightPalette : render::kDarkPalette;
    const Shot before = shoot(trace, "--at " + std::to_string(failure - 1) + theme, light ? "before_l" : "before_d");
    const Shot at = shoot(trace, "--at " + std::to_string(failure) + theme, light ? "failure_l" : "failure_d");
    CHECK(before.report["banners"].empty());
    REQUIRE(at.report["banners"].size() == 1);
    const json& banner = at.report["banners"][0];
    CHECK(banner["rank"].get<int>() == failed);
    CHECK(banner["failed"].get<bool>());
    // Its pixels, inside the failed rank's column (x) and the header strip.
    Box col{0, 0, 0, 0};
    for (const json& c : at.report["rank_columns"]) {
      if (c["rank"].get<int>() == failed) col = box_of(c["rect"]);
    }
    const Box b = box_of(banner["rect"]);
    const Box inside = clip(b, {col.x0, b.y0, col.x1, b.y1});
    REQUIRE(inside.x0 < inside.x1);
    const size_t red = at.count(pal.banner, inside.x0, inside.y0, inside.x1, inside.y1);
    CHECK(red > static_cast<size_t>(0.5f * (inside.x1 - inside.x0) * (inside.y1 - inside.y0)));
    CHECK(before.count(pal.banner, b.x0, b.y0, b.x1, b.y1) == 0);
    // Labelled lifecycle markers on the timeline.
    CHECK(at.report["timeline_markers"].get<int>() >= 4);
    CHECK(at.report["timeline_marker_labels"].get<int>() >= 2);
    // The failure's own label is among them, beside its line (labels go 7 px
    // right of it, or left at the edge): the story's first moment is named.
    bool failure_named = false;
    for (const json& d : at.report["timeline_marker_lines"]) {
      if (d["kind"] != "failed") continue;
      const float x = d["x"].get<float>();
      for (const json& lx : at.report["timeline_marker_label_x"]) {
        failure_named |= std::abs(lx[0].get<float>() - (x + 7.f)) < 1.f || std::abs(lx[1].get<float>() - (x - 7.f)) < 1.f;
      }
    }
    INFO(at.report["timeline_marker_lines"].dump() << " labels " << at.report["timeline_marker_label_x"].dump());
    CHECK(failure_named);
    check_readable(at);
    check_minimap_and_columns(at);
  }
}

TEST_CASE("gui story: at fit every label is at least 10 px, the minimap covers no box, rank columns are disjoint" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string recovery = record("recovery --policy none --recoveries 2", "recovery_none");
  const Shot end = shoot(recovery, "", "fit_end");
  check_readable(end);
  check_minimap_and_columns(end);
  CHECK(end.report["boxes"].size() >= 4);
  const std::string unused = record("unused-parameter", "unused");
  const Shot u = shoot(unused, "", "fit_unused");
  check_readable(u);
  check_minimap_and_columns(u);
  CHECK(u.report["rank_columns"].size() == 2);
}

TEST_CASE("gui story: a stale fire is drawn red and labelled at its event, not before" * doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = record("recovery --policy none --recoveries 2", "recovery_none");
  const analysis::Model m(trace::read_trace(trace));
  size_t stale = 0;
  for (size_t i = 0; i < m.num_events() && !stale; ++i) stale = render::is_stale_fire(m, i) ? i : 0;
  REQUIRE(stale > 0);
  const Shot at = shoot(trace, "--at " + std::to_string(stale), "stale_at");
  const Shot before = shoot(trace, "--at " + std::to_string(stale - 1), "stale_before");
  CHECK(at.report["stale_chips"].get<int>() >= 1);
  CHECK(before.report["stale_chips"].get<int>() == 0);
  const Box content = box_of(at.report["content"]);
  const uint32_t pink = render::kDarkPalette.stale;
  CHECK(at.count(pink, content.x0, content.y0 - 40.f, content.x1, content.y1) > 150);
  CHECK(before.count(pink, content.x0, content.y0 - 40.f, content.x1, content.y1) < 20);
  check_readable(at);
}

TEST_CASE("gui story: a removed hook leaves a ghost chip and its box is highlighted at the removal" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = record("recovery --policy by-key", "recovery_bykey");
  const analysis::Model m(trace::read_trace(trace));
  size_t removed = 0;
  for (size_t i = 0; i < m.num_events() && !removed; ++i) {
    const trace::Event e = m.event(i);
    if (e.kind == EventKind::kHookRemoved && e.node != 0) removed = i;
  }
  REQUIRE(removed > 0);
  const Shot at = shoot(trace, "--at " + std::to_string(removed), "removed_at");
  const Shot before = shoot(trace, "--at " + std::to_string(removed - 1), "removed_before");
  CHECK(at.report["ghost_chips"].get<int>() >= 1);
  CHECK(at.report["removal_boxes"].get<int>() == 1);
  CHECK(before.report["ghost_chips"].get<int>() == 0);
  CHECK(before.report["removal_boxes"].get<int>() == 0);
  const uint32_t orange = render::kDarkPalette.removed;
  const Box content = box_of(at.report["content"]);
  CHECK(at.count(orange, content.x0, content.y0 - 40.f, content.x1, content.y1) > 100);
  CHECK(before.count(orange, content.x0, content.y0 - 40.f, content.x1, content.y1) < 20);
}

TEST_CASE("gui story: --at out of range and an unknown --select exit 2 with a message" * doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = record("recovery --policy none --recoveries 2", "recovery_none");
  const std::string png = (story_dir() / "bad.png").string();
  const auto at = testing::run_gui(trace + " --at 99999 --screenshot " + png);
  CHECK_MESSAGE(at.exit == 2, at.out);
  CHECK(at.out.find("--at 99999") != std::string::npos);
  CHECK(at.out.find("events 0 to") != std::string::npos);
  const auto sel = testing::run_gui(trace + " --select 987654 --screenshot " + png);
  CHECK_MESSAGE(sel.exit == 2, sel.out);
  CHECK(sel.out.find("--select 987654: no Function") != std::string::npos);
}

// Note [Banner rows]: a rank's banner never takes its caption's place. At
// the failure (rank 1's "failed" banner) and after rank 1's rebuild (its
// "rebuilt" banner over its column) of the recovery sample, at 1280x800 dark
// and 1920x1080 light: every rank column on screen is named "rank N"
// above it, the caption clear of every banner, its rank's banner after it.
TEST_CASE("gui story: a rank's banner leaves its \"rank N\" caption in place, at two sizes and themes" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = std::string(HOOKSCOPE_SAMPLES_DIR) + "/recovery-none.hstrace";
  const analysis::Model m(trace::read_trace(trace));
  const size_t failure = m.events_of_kind(EventKind::kFailure).at(0);
  const render::RunStory story(m);
  size_t rebuilt = 0;  // the first "rebuilt" banner
  for (const render::RankIncident& i : story.incidents()) {
    if (i.kind == render::IncidentKind::kRebuilt && rebuilt == 0) rebuilt = i.at;
  }
  REQUIRE(rebuilt > failure);
  // Mid-backward after the rebuild: both ranks' graphs live, rank 1's banner "rebuilt".
  const auto& backwards = m.events_of_kind(EventKind::kBackwardBegin);
  const size_t after = *std::upper_bound(backwards.begin(), backwards.end(), rebuilt) + 5;
  const render::RankIncident* status = story.rank_status(1, after);
  REQUIRE(status != nullptr);
  REQUIRE(status->kind == render::IncidentKind::kRebuilt);
  for (const auto& [size, theme] : {std::pair{"1280x800", ""}, std::pair{"1920x1080", " --light"}}) {
    for (const size_t at : {failure, after}) {
      CAPTURE(size);
      CAPTURE(theme);
      CAPTURE(at);
      const Shot s = shoot(trace, "--at " + std::to_string(at) + theme,
                           "captions_" + std::string(size) + (*theme ? "_l_" : "_d_") + std::to_string(at), size);
      INFO("captions " << s.report["captions"].dump() << " banners " << s.report["banners"].dump() << " columns "
                       << s.report["rank_columns"].dump());
      REQUIRE(s.report["banners"].size() >= 1);
      const Box content = box_of(s.report["content"]);
      size_t on_screen = 0;
      for (const json& col : s.report["rank_columns"]) {
        const Box c = clip(box_of(col["rect"]), {content.x0, -1e9f, content.x1, 1e9f});
        if (c.x1 - c.x0 < 60.f) continue;  // a sliver: named in the edge list
        ++on_screen;
        const int rank = col["rank"].get<int>();
        const json* caption = nullptr;
        for (const json& cap : s.report["captions"]) caption = cap["rank"].get<int>() == rank ? &cap : caption;
        CAPTURE(rank);
        REQUIRE(caption != nullptr);
        const Box cap = box_of((*caption)["rect"]);
        CHECK(cap.x0 >= c.x0 - 0.5f);  // over its own column
        CHECK(cap.x0 < c.x1);
        CHECK(cap.x1 - cap.x0 >= 30.f);  // "rank N" whole, not a clipped sliver
        CHECK(cap.y1 <= content.y0 + 0.5f);  // in the header strip
        for (const json& banner : s.report["banners"]) {
          const Box b = box_of(banner["rect"]);
          CHECK_FALSE(intersect(cap, b));
          if (banner["rank"].get<int>() == rank && b.y0 < cap.y1 && cap.y0 < b.y1) CHECK(b.x0 >= cap.x1);
        }
      }
      CHECK(on_screen == 2);
    }
  }
}

// Note [Compact boxes]: at fit on the recovery trace at 1280x800, every live
// box is drawn, inside the canvas, with its text at 10 px or more: at the
// end (the leaked hooks of three generations) and at the failure.
TEST_CASE("gui story: at fit the recovery's live boxes are all on screen, readable, and only they are laid out" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = record("recovery --policy none --recoveries 2", "recovery_none");
  const analysis::Model m(trace::read_trace(trace));
  const size_t failure = m.events_of_kind(EventKind::kFailure).at(0);
  for (const size_t at : {m.num_events() - 1, failure}) {
    CAPTURE(at);
    const Shot s = shoot(trace, "--at " + std::to_string(at), "compact_" + std::to_string(at));
    analysis::Cursor cursor(m);
    cursor.seek(at);
    const size_t live = cursor.state().functions.size();
    check_readable(s);
    check_minimap_and_columns(s);
    CHECK(s.report["compact"].get<bool>());
    // Released Functions keep no slot: the layout holds the live ones only.
    CHECK(s.report["layout_units"].get<size_t>() == live);
    CHECK(s.report["live_units"].get<size_t>() == live);
    // Every live box drawn, with its text, inside the canvas: no scrolling needed.
    CHECK(s.report["boxes"].size() == live);
    CHECK(s.report["texts"].get<size_t>() == live);
    CHECK_FALSE(s.report["minimap_shown"].get<bool>());
    const Box content = box_of(s.report["content"]);
    for (const json& b : s.report["boxes"]) {
      const Box r = box_of(b);
      CHECK(r.x0 >= content.x0 - 0.5f);
      CHECK(r.y0 >= content.y0 - 0.5f);
      CHECK(r.x1 <= content.x1 + 0.5f);
      CHECK(r.y1 <= content.y1 + 0.5f);
    }
  }
}

// Note [Module generations]: rank 1's replacements bring new copies of the
// parameters; from the first new copy on, the copies say which generation
// they are, and the owners' legend too.
TEST_CASE("gui story: copied parameters are labelled with their generation from the rebuild on, not before" *
          doctest::test_suite("gui")) {
  if (no_xvfb()) return;
  const std::string trace = record("recovery --policy none --recoveries 2", "recovery_none");
  const analysis::Model m(trace::read_trace(trace));
  const render::Generations gens(m);
  analysis::EventIndex first = analysis::kNever;
  for (analysis::FunctionIndex f = 0; f < m.functions().size(); ++f) first = std::min(first, gens.label_from(f));
  REQUIRE(first != analysis::kNever);
  REQUIRE(first > 0);
  const Shot before = shoot(trace, "--at " + std::to_string(first - 1), "gen_before");
  const Shot at = shoot(trace, "--at " + std::to_string(first), "gen_at");
  const Shot end = shoot(trace, "", "gen_end");
  CHECK(before.report["gen_labels"].get<int>() == 0);
  CHECK(at.report["gen_labels"].get<int>() >= 2);  // the old copy and the new one
  CHECK(end.report["gen_labels"].get<int>() == 18);  // rank 1's six parameters in three generations
  check_readable(end);
}

#endif  // HOOKSCOPE_APP_UI
