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
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/compare.h"
#include "analysis/diff.h"
#include "analysis/model.h"
#include "panel_compare.h"
#include "render/layout/colors.h"
#include "testing/test_util.h"
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

Shot shoot(const std::string& trace, const std::string& args, const std::string& name,
           const std::string& report = "HOOKSCOPE_VIEWS_REPORT", const std::string& size = "1280x800") {
  const std::string png = (views_dir() / (name + ".png")).string();
  const std::string json = (views_dir() / (name + ".json")).string();
  const auto r = testing::run_gui(trace + " " + args + " --screenshot " + png, report + "=" + json, size);
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

namespace {

struct Png {
  int w = 0, h = 0;
  std::vector<unsigned char> rgba;
  size_t count(uint32_t color, int tol = 6) const {
    const int cr = color & 0xff, cg = (color >> 8) & 0xff, cb = (color >> 16) & 0xff;
    size_t n = 0;
    for (size_t i = 0; i + 3 < rgba.size(); i += 4) {
      n += std::abs(rgba[i] - cr) <= tol && std::abs(rgba[i + 1] - cg) <= tol && std::abs(rgba[i + 2] - cb) <= tol;
    }
    return n;
  }
};

Png load_png(const std::string& path) {
  Png p;
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &p.w, &p.h, &channels, 4);
  REQUIRE_MESSAGE(data != nullptr, "cannot read " << path);
  p.rgba.assign(data, data + static_cast<size_t>(p.w) * p.h * 4);
  stbi_image_free(data);
  return p;
}

testing::CommandResult export_run(const std::string& trace, const std::string& args) {
  return testing::run_command("xvfb-run -a -s '-screen 0 1280x800x24' " + std::string(HOOKSCOPE_GUI_PATH) +
                              " --size 1280x800 " + trace + " " + args);
}

// The recovery story recorded with policy none (A) and by-key (B), two rebuilds each.
struct RecoveryPair {
  std::string none = record("recovery", "--policy none --recoveries 2");
  std::string by_key = record("recovery", "--policy by-key --recoveries 2");
  analysis::Model a{trace::read_trace(none)}, b{trace::read_trace(by_key)};
};

}  // namespace

TEST_CASE("gui compare: A at after rebuild 1 puts B at its own, hooks only in A outlined on A's graph" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  const RecoveryPair pair;
  const std::string &none = pair.none, &by_key = pair.by_key;
  const analysis::Model &a = pair.a, &b = pair.b;
  const size_t at = analysis::resolve_point(a, "rebuild:1").index;
  const Shot s = shoot(none, "--compare " + by_key + " --panel compare --at " + std::to_string(at), "compare",
                       "HOOKSCOPE_COMPARE_REPORT");
  CHECK(s.report["label"] == "after rebuild 1");
  CHECK(s.report["a"].get<size_t>() == at);
  CHECK(s.report["b"].get<size_t>() == analysis::resolve_point(b, "rebuild:1").index);
  CHECK(s.report["found"].get<bool>());
  CHECK(s.report["differing"].get<int>() > 0);
  CHECK(s.report["only_a"].get<int>() > 0);
  // By-key keeps nothing A lacks, but the point is on rank 0: the replaced
  // rank 1 may be further in its own rebuild in B, its new copies' hooks
  // already added (Note [Parameter copies in a diff]). The panel says what
  // the analysis says.
  const analysis::ModelDiff d = analysis::diff_models_at(a, {}, at, b, {}, s.report["b"].get<size_t>());
  int only_b = 0, rows_b = 0;
  for (const analysis::FunctionCounts& fc : d.functions) {
    if (fc.total_b() <= fc.total_a()) continue;
    only_b += static_cast<int>(fc.total_b() - fc.total_a());
    ++rows_b;
    CHECK(b.functions()[fc.b].rank == 1);
  }
  CHECK(s.report["only_b"].get<int>() == only_b);
  CHECK(s.report["boxes_a"].get<int>() > 0);  // what is on screen depends on the fit
  CHECK(s.report["boxes_b"].get<int>() > 0);
  CHECK(s.report["marked_a"].get<int>() > 0);
  CHECK(s.report["marked_b"].get<int>() <= rows_b);
  CHECK(s.report["order_rows"].get<int>() >= 0);
  // Side by side, each wide. The two panes are the same size, but a view's
  // content rect leaves out its minimap column, shown or not by its own fit.
  CHECK(s.area("graph_a") > 90'000);
  CHECK(s.area("graph_b") > 90'000);
  CHECK(s.count("graph_a", render::kDarkPalette.compare_a, 8) > 200);  // the outlines are drawn
  CHECK(s.count("graph_b", render::kDarkPalette.compare_a, 8) == 0);
  // Note [Compare tags]: outlined boxes tagged where there is room (the
  // others are in the list below the graphs), and no tag over another,
  // over a box or a banner, or out of its graph's canvas (the header strip,
  // the minimap's column).
  CHECK(s.report["tags_a"].size() > 0);
  CHECK(s.report["tags_a"].size() + s.report["untagged_a"].get<size_t>() == s.report["marked_a"].get<size_t>());
  auto overlap = [](const nlohmann::json& a, const nlohmann::json& b) {
    return a[0].get<float>() < b[2].get<float>() && b[0].get<float>() < a[2].get<float>() &&
           a[1].get<float>() < b[3].get<float>() && b[1].get<float>() < a[3].get<float>();
  };
  for (const char* side : {"a", "b"}) {
    const nlohmann::json& tags = s.report[std::string("tags_") + side];
    const nlohmann::json& canvas = s.report[std::string("graph_") + side];
    for (size_t i = 0; i < tags.size(); ++i) {
      CAPTURE(tags[i].dump());
      CHECK(tags[i][0].get<float>() >= canvas[0].get<float>());
      CHECK(tags[i][1].get<float>() >= canvas[1].get<float>());
      CHECK(tags[i][2].get<float>() <= canvas[2].get<float>());
      CHECK(tags[i][3].get<float>() <= canvas[3].get<float>());
      for (size_t j = i + 1; j < tags.size(); ++j) CHECK_FALSE(overlap(tags[i], tags[j]));
      for (const auto& box : s.report[std::string("box_rects_") + side]) CHECK_FALSE(overlap(tags[i], box));
      for (const auto& banner : s.report[std::string("banners_") + side]) CHECK_FALSE(overlap(tags[i], banner));
    }
  }
}

// At 1280x800 each graph has half the width: where a side's ranks do not all
// fit at readable text, fit shows the current event's rank column whole and
// names the rest off the canvas; no box is cut by the canvas's edge (A's
// columns were cut mid-box at its left edge, a minimap taking a third of
// the pane), and no tag covers a box, a banner or another tag (Note [Compare
// tags]). At the first rebuild, mid-backward after the last one (rank 1's
// three generations live: 44 boxes) and at the end; there at 1920x1080 light too.
TEST_CASE("gui compare: no box of either graph is cut by its canvas's edge, no tag covers another thing, two sizes" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  const RecoveryPair pair;
  const auto& backwards = pair.a.events_of_kind(EventKind::kBackwardBegin);
  REQUIRE(backwards.size() >= 2);
  const std::vector<size_t> events = {analysis::resolve_point(pair.a, "rebuild:1").index,
                                      size_t{backwards[backwards.size() - 2]} + 5, pair.a.num_events() - 1};
  auto overlap = [](const nlohmann::json& a, const nlohmann::json& b) {
    return a[0].get<float>() < b[2].get<float>() && b[0].get<float>() < a[2].get<float>() &&
           a[1].get<float>() < b[3].get<float>() && b[1].get<float>() < a[3].get<float>();
  };
  for (const auto& [size, theme] : {std::pair{"1280x800", ""}, std::pair{"1920x1080", " --light"}}) {
    for (const size_t at : events) {
      if (*theme && at != events[1]) continue;  // 1920x1080: the largest graph only
      CAPTURE(size);
      CAPTURE(at);
      const Shot s = shoot(pair.none, "--compare " + pair.by_key + " --panel compare --at " + std::to_string(at) + theme,
                           "compare_cut_" + std::string(size) + "_" + std::to_string(at), "HOOKSCOPE_COMPARE_REPORT",
                           size);
      CHECK(s.report["boxes_a"].get<int>() > 0);
      for (const char* side : {"a", "b"}) {
        const nlohmann::json& c = s.report[std::string("graph_") + side];
        const float x0 = c[0].get<float>(), x1 = c[2].get<float>();
        const nlohmann::json& boxes = s.report[std::string("box_rects_") + side];
        for (const auto& box : boxes) {
          INFO(side << ": box " << box.dump() << " on canvas " << c.dump());
          const float b0 = box[0].get<float>(), b1 = box[2].get<float>();
          CHECK_FALSE((b0 < x0 - 0.5f && b1 > x0 + 0.5f));  // across the left edge
          CHECK_FALSE((b0 < x1 - 0.5f && b1 > x1 + 0.5f));  // across the right edge
        }
        // Every banner's text whole (a rebuilt rank's drops "after it failed at #N" first).
        for (const auto& clipped : s.report[std::string("banners_clipped_") + side]) CHECK_FALSE(clipped.get<bool>());
        const nlohmann::json& tags = s.report[std::string("tags_") + side];
        for (size_t i = 0; i < tags.size(); ++i) {
          INFO(side << ": tag " << tags[i].dump());
          for (size_t j = i + 1; j < tags.size(); ++j) CHECK_FALSE(overlap(tags[i], tags[j]));
          for (const auto& box : boxes) CHECK_FALSE(overlap(tags[i], box));
          for (const auto& banner : s.report[std::string("banners_") + side]) CHECK_FALSE(overlap(tags[i], banner));
        }
      }
    }
  }
}

// Light theme: the only-in-A outlines and tags take the light palette's
// colour (dark blue, not the dark theme's light blue, 1.8:1 on white), and
// what is drawn reads at WCAG AA on the graph's background, measured on the
// screenshot's pixels.
TEST_CASE("gui compare: in the light theme hooks only in A are outlined in a colour that reads on white (>= 4.5:1)" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  const RecoveryPair pair;
  const size_t at = analysis::resolve_point(pair.a, "rebuild:1").index;
  const Shot s = shoot(pair.none, "--light --compare " + pair.by_key + " --panel compare --at " + std::to_string(at),
                       "compare_light", "HOOKSCOPE_COMPARE_REPORT");
  const render::Palette& pal = render::kLightPalette;
  REQUIRE(s.report["marked_a"].get<int>() > 0);
  CHECK(s.count("graph_a", pal.compare_a, 8) > 200);
  CHECK(s.count("graph_a", render::kDarkPalette.compare_a, 8) == 0);
  // The canvas's background is the most common pixel of A's graph.
  const auto& g = s.report["graph_a"];
  std::map<uint32_t, size_t> seen;
  for (int y = g[1].get<int>() + 1; y < g[3].get<int>() - 1; y += 3) {
    for (int x = g[0].get<int>() + 1; x < g[2].get<int>() - 1; x += 3) {
      const unsigned char* p = &s.rgba[(static_cast<size_t>(y) * s.w + x) * 4];
      ++seen[render::rgba(p[0], p[1], p[2])];
    }
  }
  const uint32_t bg = std::max_element(seen.begin(), seen.end(), [](auto& l, auto& r) { return l.second < r.second; })->first;
  CHECK(render::relative_luminance(bg) > 0.8);  // the light theme's canvas
  CHECK(render::contrast_ratio(pal.compare_a, bg) >= 4.5);
  CHECK(render::contrast_ratio(pal.compare_b, bg) >= 4.5);
}

// The Hook order tab, picked with --compare-tab: from the first step where A
// and B differ, each Function's adds and fires, those that differ in A's and
// B's colours; rows of up to 9 lines each, only those in view drawn (its
// clipper: a long list costs the rows on screen).
TEST_CASE("gui compare: --compare-tab order shows the Hook order tab, the rows in view, differing steps coloured" *
          doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  const RecoveryPair p;  // A at its end: every rebuild's leftovers
  const Shot s = shoot(p.none, "--compare " + p.by_key + " --compare-tab order --at " + std::to_string(p.a.num_events() - 1),
                       "compare_order", "HOOKSCOPE_COMPARE_REPORT");
  INFO(s.report.dump());
  CHECK(s.report["tab"] == "order");
  // What the analysis says differs at the matching point, row for row.
  const std::vector<analysis::OrderDiff> order =
      analysis::hook_order_diff(p.a, s.report["a"].get<size_t>(), p.b, s.report["b"].get<size_t>());
  REQUIRE(order.size() >= 6);
  CHECK(s.report["order_rows"].get<size_t>() == order.size());
  CHECK(s.report["order_first"].get<std::string>() == order.front().function);  // scrolled to the top
  // The clipper: some rows, not all (each row is several lines; the panel holds a few).
  const size_t drawn = s.report["order_rows_drawn"].get<size_t>();
  CHECK(drawn >= 1);
  CHECK(drawn < order.size());
  // Differing steps are written in A's colour (and B's), inside the panel.
  CHECK(s.count("window", render::kDarkPalette.compare_a, 10) > 30);
  CHECK(s.count("window", render::kDarkPalette.compare_b, 10) > 30);
}

TEST_CASE("gui export: the graph as SVG and PNG (view and whole), the lanes as PNG" * doctest::test_suite("gui")) {
  if (!have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed");
    return;
  }
  const std::string trace = record("recovery", "--policy none --recoveries 2");
  const fs::path dir = views_dir();
  const std::string svg = (dir / "export.svg").string(), view = (dir / "export_view.png").string();
  const std::string whole = (dir / "export_whole.png").string(), lanes = (dir / "export_lanes.png").string();
  auto r = export_run(trace, "--export-graph " + svg + " --whole --export-lanes " + lanes);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  CHECK(r.out.find("wrote " + svg) != std::string::npos);
  const auto parsed = testing::run_command(
      "/usr/bin/python3 -c \"import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]); "
      "print(sum(1 for e in t.iter('{http://www.w3.org/2000/svg}rect') if e.get('class') == 'box'))\" " + svg);
  REQUIRE_MESSAGE(parsed.exit == 0, parsed.out);
  CHECK(std::stoi(parsed.out) > 4);
  const Png lanes_png = load_png(lanes);
  CHECK(lanes_png.w > 600);  // the Lanes panel: 62% of 1280 wide
  CHECK(lanes_png.h > 400);
  CHECK(lanes_png.count(render::kDarkPalette.alarm, 12) > 200);  // red where hooks outlive their owner

  r = export_run(trace, "--export-graph " + view);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  const Png v = load_png(view);
  CHECK(v.w > 500);
  CHECK(v.w < 1280 * 62 / 100);  // the Graph panel's canvas, not the window
  CHECK(v.count(render::kDarkPalette.box, 3) + v.count(render::kDarkPalette.box_leaf, 3) > 500);

  r = export_run(trace, "--export-graph " + whole + " --whole");
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  const Png w = load_png(whole);
  // At zoom 1, offscreen: as large as the layout (the SVG's size: the layout
  // plus its 16-unit margins; the PNG has 24-pixel ones), whatever the Graph
  // panel's size (compact boxes are small enough that this one is smaller).
  std::ifstream svg_in(svg);
  const std::string svg_text((std::istreambuf_iterator<char>(svg_in)), std::istreambuf_iterator<char>());
  const size_t at = svg_text.find("width=\""), at_h = svg_text.find("height=\"");
  REQUIRE(at != std::string::npos);
  REQUIRE(at_h != std::string::npos);
  const int svg_w = std::stoi(svg_text.substr(at + 7)), svg_h = std::stoi(svg_text.substr(at_h + 8));
  CHECK(w.w >= svg_w);
  CHECK(w.w <= svg_w + 40);
  CHECK(w.h >= svg_h);
  CHECK(w.h <= svg_h + 40);
  CHECK(svg_h > 150);  // a graph, not an empty picture (250 units tall here)
  CHECK(w.count(render::kDarkPalette.box, 3) + w.count(render::kDarkPalette.box_leaf, 3) > 500);
  CHECK(w.count(render::kDarkPalette.background, 2) < static_cast<size_t>(w.w) * w.h);

  // Names that are neither .svg nor .png are refused with a message.
  r = export_run(trace, "--export-graph " + (dir / "graph.txt").string());
  CHECK(r.exit == 2);
  CHECK(r.out.find("must end in .svg or .png") != std::string::npos);
}

#endif
