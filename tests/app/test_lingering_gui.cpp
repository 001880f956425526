// Lingering owners in the real app under Xvfb (Note [Lingering owners]): the
// kept-alive run (PyTorch #21344, 2 ranks, the old DDPs kept alive and
// rebuilt on the same module, odd steps under no_sync) at 1280x800 and
// 1920x1080, dark and light, measured through the draw report
// (HOOKSCOPE_DRAW_REPORT) and the views report (HOOKSCOPE_VIEWS_REPORT):
// the graph outlines the replaced Reducers' chips in the lingering colour
// and tags their boxes, the legend and the Reducers panel say "replaced,
// still alive", Lanes count hooks that outlive their use, "Why did this
// fire?" calls a replaced Reducer's fire lingering and a no_sync fire normal.
// Skips, saying why, without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/owner_status.h"
#include "render/layout/colors.h"
#include "render/layout/timeline_index.h"
#include "testing/test_util.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;
using analysis::EventIndex;
using analysis::kNever;
namespace fs = std::filesystem;

namespace {

fs::path lingering_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_lingering_gui");
  return dir;
}

std::string kept_alive_trace() {
  return testing::record_once(lingering_dir(), "kept_alive", "kept-alive --world-size 2 --steps 8");
}

struct Size {
  int w, h;
};

struct Shot : testing::Pixels {
  nlohmann::json report;
};

// The app at `size` (its own Xvfb screen of that size), with a report.
Shot shoot(const std::string& args, const std::string& name, Size size, bool light, const std::string& report_env) {
  const std::string png = (lingering_dir() / (name + ".png")).string();
  const std::string json = (lingering_dir() / (name + ".json")).string();
  const std::string dims = std::to_string(size.w) + "x" + std::to_string(size.h);
  const testing::CommandResult r =
      testing::run_gui(std::string(light ? "--light " : "") + args + " --screenshot " + png, report_env + "=" + json, dims);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  Shot s;
  testing::load_png(png, s);
  CHECK(s.w == size.w);
  CHECK(s.h == size.h);
  std::ifstream in(json);
  REQUIRE_MESSAGE(in.good(), "no report at " << json);
  s.report = nlohmann::json::parse(in);
  return s;
}

struct Story {
  EventIndex first_replaced = kNever;  // the earliest replacement on any rank
  EventIndex replaced_r1 = kNever;     // Reducer 1's on rank 0
  EventIndex lingering_fire = kNever;  // a fire of rank 0's Reducer 1 while it lingers
  EventIndex no_sync_fire = kNever;    // a fire whose Reducer ran forward inside no_sync
};

Story story_of(const analysis::Model& m) {
  Story s;
  analysis::OwnerIndex r1 = analysis::kNoIndex;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
    const analysis::OwnerInfo& info = m.owners()[o];
    s.first_replaced = std::min(s.first_replaced, info.replaced_at);
    if (m.owner_name(o) == "Reducer 1" && info.rank == 0) r1 = o;
  }
  REQUIRE(r1 != analysis::kNoIndex);
  s.replaced_r1 = m.owners()[r1].replaced_at;
  for (analysis::HookIndex h = 0; h < m.hooks().size(); ++h) {
    if (m.hooks()[h].owner != r1) continue;
    for (EventIndex e : m.fires(h)) {
      if (e > s.replaced_r1 + 50 && e < m.owners()[r1].destroyed_at) s.lingering_fire = std::min(s.lingering_fire, e);
    }
  }
  for (EventIndex i : m.events_of_kind(trace::EventKind::kAutogradHookNoop)) {
    if (analysis::noop_cause(m, i) != analysis::NoopCause::kNoSync) continue;
    for (EventIndex j = i; j-- > 0 && i - j < 64;) {  // its hook_fire, just before it
      if (m.event(j).kind == trace::EventKind::kHookFired && m.event(j).key == m.event(i).key) {
        s.no_sync_fire = j;
        break;
      }
    }
    if (s.no_sync_fire != kNever) break;
  }
  return s;
}

bool overlap(const nlohmann::json& a, const nlohmann::json& b) {
  return a[0].get<float>() < b[2].get<float>() && b[0].get<float>() < a[2].get<float>() &&
         a[1].get<float>() < b[3].get<float>() && b[1].get<float>() < a[3].get<float>();
}

bool says(const nlohmann::json& words, const std::string& what) {
  return std::any_of(words.begin(), words.end(), [&](const auto& w) { return w.template get<std::string>() == what; });
}

}  // namespace

TEST_CASE("gui lingering: a kept-alive DDP's replaced Reducers are alarms of their own colour, at two sizes and themes" *
          doctest::test_suite("gui")) {
  std::string why;
  if (!testing::have_xvfb(&why)) {
    MESSAGE("skipping: " << why);
    return;
  }
  const std::string trace = kept_alive_trace();
  const analysis::Model m(trace::read_trace(trace));
  const Story st = story_of(m);
  REQUIRE(st.first_replaced != kNever);
  REQUIRE(st.lingering_fire != kNever);
  for (const auto& [size, light] : {std::pair{Size{1280, 800}, false}, std::pair{Size{1920, 1080}, true},
                                    std::pair{Size{1280, 800}, true}, std::pair{Size{1920, 1080}, false}}) {
    const std::string tag = std::to_string(size.w) + (light ? "_light" : "_dark");
    CAPTURE(tag);
    const render::Palette& pal = light ? render::kLightPalette : render::kDarkPalette;
    // Before any Reducer is replaced: no lingering anywhere.
    const Shot before = shoot(trace + " --at " + std::to_string(st.first_replaced - 1), "before_" + tag, size, light,
                              "HOOKSCOPE_DRAW_REPORT");
    CHECK(before.report["lingering"]["boxes"].get<int>() == 0);
    CHECK(before.report["lingering"]["tags"].get<int>() == 0);
    const auto& words = before.report["reducers"];
    CHECK(std::any_of(words.begin(), words.end(), [](const auto& w) { return w.template get<std::string>().rfind("Reducer 1 r0: alive", 0) == 0; }));

    // While Reducer 1 lingers: chips, boxes, tags, legend and Reducers say so.
    const Shot during = shoot(trace + " --at " + std::to_string(st.lingering_fire), "lingering_" + tag, size, light,
                              "HOOKSCOPE_DRAW_REPORT");
    const nlohmann::json& r = during.report;
    CHECK(r["lingering"]["boxes"].get<int>() > 0);
    CHECK(r["alarms"].get<int>() >= r["lingering"]["boxes"].get<int>());
    CHECK(r["lingering"]["tags"].get<int>() > 0);
    // One tag per lingering owner (Reducer 1 on each of the 2 ranks), not one
    // per box: copies of one sentence over every box hid the graph.
    CHECK(r["lingering"]["tags"].get<int>() <= 2);
    CHECK(r["lingering"]["boxes"].get<int>() > r["lingering"]["tags"].get<int>());
    CHECK(r["lingering"]["legend"].get<int>() > 0);
    CHECK(says(r["reducers"], "Reducer 1 r0: replaced, still alive (lingering)"));
    for (const auto& w : r["reducers"]) CHECK(w.get<std::string>().rfind("Reducer 1 r0: alive", 0) == std::string::npos);
    // The Reducers panel's summary ("+ 2 replaced, still ali..." was cut at 1280) wraps inside the panel.
    CHECK(r["reducer_summary_overflow"].get<float>() <= 0.5f);
    // Tags never overlap one another.
    const auto& tags = r["tag_rects"];
    for (size_t i = 0; i < tags.size(); ++i) {
      for (size_t j = i + 1; j < tags.size(); ++j) CHECK_FALSE(overlap(tags[i], tags[j]));
    }
    // The colour is on screen (outlines, "!" discs, tags), inside the graph's canvas.
    const auto& c = r["content"];
    const size_t lingering_px =
        during.count(pal.lingering, c[0].get<float>(), c[1].get<float>(), c[2].get<float>(), c[3].get<float>(), 10);
    CHECK(lingering_px > 200);
    CHECK(before.count(pal.lingering, c[0].get<float>(), c[1].get<float>(), c[2].get<float>(), c[3].get<float>(), 10) <
          lingering_px / 10);
  }
}

// no_sync micro-batches (correct, expected) were red "alarm" ticks. A
// no-op fire inside no_sync is a DDP tick; a lingering Reducer's is an alarm;
// a fold (several events in a pixel) is red only when it holds an alarm.
TEST_CASE("timeline: a kept-alive run's no_sync no-op fires are neutral ticks, a lingering Reducer's are alarms") {
  const analysis::Model m(trace::read_trace(kept_alive_trace()));
  const render::TimelineIndex index(m);
  const auto alarm = static_cast<uint8_t>(render::TickClass::kAlarm);
  size_t no_sync = 0, lingering = 0;
  for (const render::TimelineTrack& t : index.tracks()) {
    for (size_t k = 0; k < t.size(); ++k) {
      const size_t i = t.event(k);
      if (m.event(i).kind != trace::EventKind::kAutogradHookNoop) continue;
      const analysis::NoopCause cause = analysis::noop_cause(m, i);
      CAPTURE(i);
      CHECK((t.cls(k) == alarm) == analysis::is_alarm(cause));
      no_sync += cause == analysis::NoopCause::kNoSync;
      lingering += cause == analysis::NoopCause::kLingering;
    }
  }
  CHECK(no_sync > 0);
  CHECK(lingering > 0);
  // Before the first replacement (micro-batches under no_sync already ran):
  // folds of any width hold no alarm.
  analysis::EventIndex first_replaced = kNever;
  for (const analysis::OwnerInfo& o : m.owners()) first_replaced = std::min(first_replaced, o.replaced_at);
  REQUIRE(first_replaced != kNever);
  for (const render::TimelineTrack& t : index.tracks()) {
    size_t end = 0;
    while (end < t.size() && t.event(end) < first_replaced) ++end;
    CHECK((t.classes(0, end) >> alarm & 1) == 0);
  }
}

TEST_CASE("gui lingering: Lanes count hooks that outlive their use, Explain says lingering and no_sync is normal" *
          doctest::test_suite("gui")) {
  std::string why;
  if (!testing::have_xvfb(&why)) {
    MESSAGE("skipping: " << why);
    return;
  }
  const std::string trace = kept_alive_trace();
  const analysis::Model m(trace::read_trace(trace));
  const Story st = story_of(m);
  REQUIRE(st.no_sync_fire != kNever);
  for (const auto& [size, light] : {std::pair{Size{1280, 800}, false}, std::pair{Size{1920, 1080}, true}}) {
    const std::string tag = std::to_string(size.w) + (light ? "_light" : "_dark");
    CAPTURE(tag);
    const render::Palette& pal = light ? render::kLightPalette : render::kDarkPalette;
    const Shot lanes = shoot(trace + " --panel lanes", "lanes_" + tag, size, light, "HOOKSCOPE_VIEWS_REPORT");
    const std::string summary = lanes.report["lanes_summary"].get<std::string>();
    CAPTURE(summary);
    CHECK(summary.find("outlive their use (owner replaced, still alive)") != std::string::npos);
    CHECK(summary.find("outlive their owner") == std::string::npos);  // by-key: none outlives its owner
    CHECK(lanes.report["lingering_segments"].get<int>() > 0);
    CHECK(lanes.report["dead_segments"].get<int>() == 0);
    const auto& l = lanes.report["lanes"];
    CHECK(lanes.count(pal.lingering, l[0].get<float>(), l[1].get<float>(), l[2].get<float>(), l[3].get<float>(), 10) > 500);
    CHECK(lanes.count(pal.alarm, l[0].get<float>(), l[1].get<float>(), l[2].get<float>(), l[3].get<float>(), 6) == 0);

    const Shot fire = shoot(trace + " --panel explain --at " + std::to_string(st.lingering_fire), "explain_" + tag,
                            size, light, "HOOKSCOPE_VIEWS_REPORT");
    CHECK(fire.report["explain_verdict"] == "lingering");
    CHECK(fire.report["explain_summary"].get<std::string>() ==
          "lingering: Reducer 1 was replaced by Reducer 2 at #" + std::to_string(st.replaced_r1) +
              " and is still alive - a reference the program kept; its hook did nothing");

    const Shot ns = shoot(trace + " --panel explain --at " + std::to_string(st.no_sync_fire), "no_sync_" + tag, size,
                          light, "HOOKSCOPE_VIEWS_REPORT");
    CHECK(ns.report["explain_verdict"] == "normal");
  }
}

// Note [Timeline markers]: where a Reducer starts lingering (replaced while
// alive) the timeline draws a marker in the lingering colour, legend and all;
// its pixels are on screen at its x, in both themes.
TEST_CASE("gui lingering: the timeline's lingering markers are drawn in their own colour at their x" *
          doctest::test_suite("gui")) {
  std::string why;
  if (!testing::have_xvfb(&why)) {
    MESSAGE("skipping: " << why);
    return;
  }
  const std::string trace = kept_alive_trace();
  const analysis::Model m(trace::read_trace(trace));
  const Story st = story_of(m);
  size_t replaced = 0;
  for (const analysis::OwnerInfo& o : m.owners()) replaced += o.replaced_at != kNever;
  REQUIRE(replaced == 4);  // Reducers 1 and 2 on each of the 2 ranks
  for (const auto& [size, light] : {std::pair{Size{1280, 800}, false}, std::pair{Size{1920, 1080}, true}}) {
    const std::string tag = std::to_string(size.w) + (light ? "_light" : "_dark");
    CAPTURE(tag);
    const render::Palette& pal = light ? render::kLightPalette : render::kDarkPalette;
    const Shot s = shoot(trace + " --at " + std::to_string(st.lingering_fire), "markers_" + tag, size, light,
                         "HOOKSCOPE_DRAW_REPORT");
    INFO(s.report["timeline_marker_lines"].dump());
    size_t lingering = 0;
    for (const auto& d : s.report["timeline_marker_lines"]) {
      if (d["kind"] != "lingering") continue;
      ++lingering;
      const float x = d["x"].get<float>(), top = d["top"].get<float>();
      CAPTURE(x);
      // Its triangle (10 x 8 px): mostly the lingering colour (neighbours may overdraw part of it).
      CHECK(s.count(pal.lingering, x - 5.f, top, x + 5.f, top + 8.f, 12) >= 8);
    }
    CHECK(lingering == replaced);  // the whole run fits the timeline at open
    // No label has a lingering or destroyed marker's triangle inside its text
    // (one was drawn inside "Reducer 1 lingering r1"); grazing an end by up
    // to 4 px is allowed, and less telling markers may sit under a label
    // (Note [Timeline markers]). Every label on this run is of those two kinds or less.
    for (const auto& lx : s.report["timeline_marker_label_x"]) {
      for (const auto& d : s.report["timeline_marker_lines"]) {
        if (d["kind"] != "lingering" && d["kind"] != "destroyed") continue;
        const float x = d["x"].get<float>();
        INFO("label [" << lx[0] << "," << lx[1] << "] marker at " << x);
        CHECK((x + 5.f <= lx[0].get<float>() + 4.f || x - 5.f >= lx[1].get<float>() - 4.f));
      }
    }
    CHECK(says(s.report["timeline_legend"], "lingering"));
  }
}
#endif
