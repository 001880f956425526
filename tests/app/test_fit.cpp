// Fit that fits (Note [Readable text], Note [Fit shows every rank]): opened
// at an event, or after Fit there, every rank's live boxes are inside the
// graph's canvas with their text at 10 px or more, or the toolbar names
// what is off it; at 1280x800 and 1920x1080, dark and light, at several
// events of the samples and of two-rank runs (mid-backward, the failure, the
// rebuild, the end). Measured through the graph's draw stats (Note [Draw report]).
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "testing/headless_app.h"
#include "render/layout/timeline_index.h"
#include "render/draw/graph_view.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;
using trace::EventKind;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

fs::path fit_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_fit");
  return dir;
}

// Events worth a look: a few mid-backward (the 5th event after a backward
// begins), the first failure, each Reducer built, the last event.
std::vector<size_t> story_events(const analysis::Model& m) {
  std::vector<size_t> at;
  const auto& backwards = m.events_of_kind(EventKind::kBackwardBegin);
  for (size_t k = 0; k < backwards.size(); k += std::max<size_t>(1, backwards.size() / 4)) {
    at.push_back(std::min<size_t>(backwards[k] + 5, m.num_events() - 1));
  }
  if (!m.events_of_kind(EventKind::kFailure).empty()) at.push_back(m.events_of_kind(EventKind::kFailure)[0]);
  for (size_t i : m.events_of_kind(EventKind::kReducerConstructed)) at.push_back(i);
  at.push_back(m.num_events() - 1);
  std::sort(at.begin(), at.end());
  at.erase(std::unique(at.begin(), at.end()), at.end());
  return at;
}

// Frames until the layout (and the fit that follows it) has landed.
void settle(testing::HeadlessApp& h) {
  for (int i = 0; i < 12; ++i) {
    h.frame();
    h.app().graph().wait_for_layout();
  }
  h.frame();
}

struct Measured {
  size_t live = 0, drawn = 0, outside = 0;
  std::map<uint16_t, std::pair<float, float>> columns;  // rank -> x extent of its drawn boxes
};

// `whole`: every live box must be on the canvas (no off-canvas note);
// `inside_x`: every rank's live boxes inside the canvas horizontally (none
// beside it, none cut at its left or right edge).
void check_fits(testing::HeadlessApp& h, const std::string& where, bool whole = false, bool inside_x = false) {
  const render::GraphDrawStats& s = h.app().graph().stats();
  const render::GraphDrawStats::Rect c = s.content;
  size_t outside = 0;
  for (const auto& b : s.box_rects) {
    outside += b.x0 < c.x0 - 0.5f || b.y0 < c.y0 - 0.5f || b.x1 > c.x1 + 0.5f || b.y1 > c.y1 + 0.5f;
  }
  // A rank's column spans every box the layout holds for it, live or not
  // (the full view lays out the whole trace; fit frames the live ones), so a
  // column may run past the canvas with all its live boxes in view. Columns
  // are reported, not judged; a rank's live boxes are (box_rects).
  std::string columns;
  for (const auto& [rank, r] : s.rank_columns) {
    columns += " r" + std::to_string(rank) + " [" + std::to_string(static_cast<int>(r.x0)) + "," +
               std::to_string(static_cast<int>(r.x1)) + "]";
  }
  INFO(where << ": live " << s.live_units << ", drawn " << s.box_rects.size() << ", outside " << outside
             << ", text " << s.min_text_px << " px (" << s.small_texts << " small), canvas [" << c.x0 << "," << c.x1
             << "] x [" << c.y0 << "," << c.y1 << "], layout " << s.layout_w << "x" << s.layout_h << ", columns" << columns << ", off-canvas note '" << s.off_canvas << "', compact "
             << h.app().graph().compact());
  if (s.texts > 0) {
    CHECK(s.small_texts == 0);
    CHECK(s.min_text_px >= 10.f);
  }
  const bool all_in = s.box_rects.size() == s.live_units && outside == 0;
  if (whole) CHECK(all_in);
  if (!all_in) {
    // What does not fit is named in the toolbar, and what matters is in view.
    CHECK_FALSE(s.off_canvas.empty());
    CHECK(s.focus_on_canvas);
  } else {
    CHECK(s.off_canvas.empty());
  }
  if (s.live_units > 0) CHECK(s.box_rects.size() > 0);
  if (inside_x) {
    CHECK(s.off_canvas.find("beside") == std::string::npos);
    for (const auto& b : s.box_rects) CHECK((b.x0 >= c.x0 - 0.5f && b.x1 <= c.x1 + 0.5f));
  }
}

// At `events` (default: story_events); from a display `whole_from` wide on,
// every live box in view (no off-canvas note).
void check_trace(const std::string& trace, bool both_themes, const std::vector<size_t>& events = {},
                 float whole_from = INFINITY, bool columns = false) {
  const analysis::Model m(trace::read_trace(trace));
  for (const ImVec2 display : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
    for (const bool light : {false, true}) {
      if (light && !(both_themes && display.x == 1280)) continue;
      for (size_t at : events.empty() ? story_events(m) : events) {
        app::Args args = testing::headless_args({trace});
        args.at.text = std::to_string(at);
        args.light = light;
        testing::HeadlessApp h(args, display);
        settle(h);
        const std::string where = fs::path(trace).filename().string() + " at #" + std::to_string(at) + " " +
                                  std::to_string(static_cast<int>(display.x)) + "x" +
                                  std::to_string(static_cast<int>(display.y)) + (light ? " light" : " dark");
        const bool whole = display.x >= whole_from;
        check_fits(h, where + " (open)", whole, columns);
        h.app().graph().fit();
        settle(h);
        check_fits(h, where + " (Fit)", whole, columns);
      }
    }
  }
}

}  // namespace

TEST_CASE("fit: the recovery sample's ranks are inside the canvas, text >= 10 px, mid-backward to the end") {
  testing::scratch_config_dir("hookscope_fit");
  check_trace(sample("recovery-none"), true);
}

// Mid-backward once a rank was rebuilt: its parameters' leaves in two and
// three copies under one Function (Note [Stacked leaves]) beside the other
// rank's graph. The samples are recorded at build time by two threads, so an
// event's index moves between builds: the events are found by what happens.
std::vector<size_t> after_rebuild_events(const analysis::Model& m) {
  const auto& built = m.events_of_kind(EventKind::kReducerConstructed);
  const size_t world = 2;  // the first Reducer of each rank is no rebuild
  std::vector<size_t> at;
  if (built.size() <= world) return at;
  for (size_t b : m.events_of_kind(EventKind::kBackwardBegin)) {
    if (b > built[world] && b + 12 < m.num_events()) {
      at.push_back(b + 5);
      at.push_back(b + 12);
    }
  }
  return at;
}

TEST_CASE("fit: recovery-none mid-backward after the rebuilds shows every live box at 1280x800 and 1920x1080, "
          "text >= 10 px") {
  testing::scratch_config_dir("hookscope_fit");
  const std::string trace = sample("recovery-none");
  const std::vector<size_t> at = after_rebuild_events(analysis::Model(trace::read_trace(trace)));
  REQUIRE(at.size() >= 4);
  // Both ranks side by side fit the 1280x800 window's graph panel at 10 px
  // text with room to spare (Note [Narrow columns]: the widest recording
  // measured, 1040 layout units against ~1165). The sample is recorded at
  // build time by two threads, so which Functions are live at an event
  // varies between builds; one recording's interleaving had a layout 1281
  // units wide before the columns were narrowed.
  check_trace(trace, true, at, 1280.f);
}

TEST_CASE("fit: two-rank runs (unused parameter, shared module, recovery by key) fit at every step") {
  testing::scratch_config_dir("hookscope_fit");
  check_trace(sample("recovery-by-key"), false);
  check_trace(sample("shared-module-by-type"), false);
  check_trace(testing::record_once(fit_dir(), "unused", "unused-parameter"), false);
}

TEST_CASE("fit: the runtime's kept-alive run (three Reducers, two lingering) shows every rank's column inside "
          "the canvas, text >= 10 px, at every step") {
  testing::scratch_config_dir("hookscope_fit");
  check_trace(testing::record_once(fit_dir(), "kept", "kept-alive"), true, {}, INFINITY, true);
}

// Note [The view follows the current event]: the full boxes of the recovery
// (every Function of the run laid out, far larger than the canvas at 10 px
// text), stepped with the arrow key through a backward and the failure: at
// every event about a Function, its box is inside the canvas, the view
// moved to get it there, zoom unchanged.
TEST_CASE("fit: stepping through a graph larger than the canvas, the view follows the current event's box") {
  testing::scratch_config_dir("hookscope_fit");
  const std::string trace = sample("recovery-none");
  const analysis::Model m(trace::read_trace(trace));
  const auto& backwards = m.events_of_kind(EventKind::kBackwardBegin);
  REQUIRE(backwards.size() >= 4);
  for (const ImVec2 display : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
    app::Args args = testing::headless_args({trace});
    args.at.text = std::to_string(backwards[backwards.size() / 2]);
    testing::HeadlessApp h(args, display);
    h.app().graph().set_compact(false);
    settle(h);
    const float zoom = h.app().graph().zoom();
    size_t followed = 0, moves = 0;
    render::Vec2 was = h.app().graph().center();
    for (int step = 0; step < 120; ++step) {
      h.press(testing::kRight);
      h.frame();
      const render::GraphDrawStats& s = h.app().graph().stats();
      const render::Vec2 now = h.app().graph().center();
      moves += now.x != was.x || now.y != was.y;
      was = now;
      if (!s.has_current) continue;
      ++followed;
      const auto& c = s.content;
      const auto& b = s.current;
      INFO("#" << h.app().session().current() << " " << display.x << "x" << display.y << ": box [" << b.x0 << ","
               << b.y0 << "," << b.x1 << "," << b.y1 << "], canvas [" << c.x0 << "," << c.y0 << "," << c.x1 << ","
               << c.y1 << "]");
      CHECK((b.x0 >= c.x0 - 0.5f && b.y0 >= c.y0 - 0.5f && b.x1 <= c.x1 + 0.5f && b.y1 <= c.y1 + 0.5f));
      CHECK(s.focus_on_canvas);
    }
    CHECK(h.app().graph().zoom() == zoom);  // scrolled, never zoomed
    CHECK(followed >= 40);
    CHECK(moves >= 3);  // the graph is larger than the canvas: following moved the view

    // Dragging the view away: a step while the mouse drags moves only with
    // the mouse; released, the view stays; the next step follows again. In
    // the backward just stepped through (the events after it release
    // Functions, no box to follow).
    auto box_inside = [&] {
      const render::GraphDrawStats& s = h.app().graph().stats();
      const auto& b = s.current;
      return s.has_current && b.x0 >= s.content.x0 - 0.5f && b.y0 >= s.content.y0 - 0.5f &&
             b.x1 <= s.content.x1 + 0.5f && b.y1 <= s.content.y1 + 0.5f;
    };
    auto back_to_a_box = [&] {
      h.press(testing::kLeft);
      for (int k = 0; k < 40 && !h.app().graph().stats().has_current; ++k) h.press(testing::kLeft);
      REQUIRE(h.app().graph().stats().has_current);
    };
    back_to_a_box();
    ImGuiIO& io = ImGui::GetIO();
    const auto& c = h.app().graph().stats().content;
    io.MousePos = {(c.x0 + c.x1) * 0.5f, (c.y0 + c.y1) * 0.5f};
    io.MouseDown[0] = true;
    h.frame();
    for (int i = 0; i < 12; ++i) {  // 1200 px down: the current box leaves the canvas
      io.MousePos.y += 100.f;
      h.frame();
    }
    CHECK_FALSE(box_inside());
    const render::Vec2 dragged = h.app().graph().center();
    back_to_a_box();  // stepped while the mouse still drags
    CHECK_FALSE(box_inside());
    CHECK(h.app().graph().center().x == dragged.x);
    CHECK(h.app().graph().center().y == dragged.y);
    io.MouseDown[0] = false;
    for (int i = 0; i < 3; ++i) h.frame();
    CHECK(h.app().graph().center().x == dragged.x);  // released: no jump
    CHECK(h.app().graph().center().y == dragged.y);
    back_to_a_box();
    const render::GraphDrawStats& after = h.app().graph().stats();
    INFO("after the drag, #" << h.app().session().current() << ": box [" << after.current.x0 << "," << after.current.y0
                             << "," << after.current.x1 << "," << after.current.y1 << "], canvas [" << after.content.x0
                             << "," << after.content.y0 << "," << after.content.x1 << "," << after.content.y1 << "]");
    CHECK(box_inside());
  }
}

#endif  // HOOKSCOPE_APP_UI

#if HOOKSCOPE_APP_UI
// Note [Idle gaps] in the app under Xvfb: a run whose rank 1 times out has
// rank 0 wait seconds in an allreduce, most of the trace's time. Opened, the
// timeline collapses the wait to one band that says so, and the work fills
// the axis; at 1280x800 and 1920x1080, dark and light (the draw report).
TEST_CASE("gui timeline: a failed run's wait in allreduce is one labelled band, the work fills the axis" *
          doctest::test_suite("gui")) {
  if (!testing::have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
    return;
  }
  const std::string trace =
      testing::record_once(fit_dir(), "timeout", "recovery --fail-mode timeout --timeout-ms 3000 --recoveries 1");
  const analysis::Model m(trace::read_trace(trace));
  const render::TimelineIndex index(m);
  // The wait is the one idle gap of kIdleGapMinNs; the start-up before the
  // first forward may be a band of its own (Note [Start-up band]), with
  // events in it, and a shorter wait (a loaded machine's) one too when it is
  // long beside the work (Note [Quiet stretches]).
  std::vector<render::IdleGap> idle;
  for (const render::IdleGap& g : index.idle_gaps()) {
    if (g.events == 0 && g.end - g.begin >= render::kIdleGapMinNs) idle.push_back(g);
  }
  REQUIRE(idle.size() == 1);
  const render::IdleGap& gap = idle[0];
  // To scale, the wait would take most of the axis.
  CHECK(static_cast<double>(gap.end - gap.begin) > 0.5 * static_cast<double>(index.end_ns() - index.begin_ns()));
  for (const char* size : {"1280x800", "1920x1080"}) {
    for (const bool light : {false, true}) {
      CAPTURE(size);
      CAPTURE(light);
      const std::string name = std::string("gap_") + size + (light ? "_l" : "_d");
      const std::string png = (fit_dir() / (name + ".png")).string(), rep = (fit_dir() / (name + ".json")).string();
      const auto r = testing::run_command("HOOKSCOPE_DRAW_REPORT=" + rep + " xvfb-run -a -s '-screen 0 " + size +
                                          "x24' " + HOOKSCOPE_GUI_PATH + " --size " + size + (light ? " --light " : " ") +
                                          trace + " --screenshot " + png);
      REQUIRE_MESSAGE(r.exit == 0, r.out);
      std::ifstream in(rep);
      const nlohmann::json report = nlohmann::json::parse(in);
      nlohmann::json gaps = nlohmann::json::array(), bands = report["timeline_gaps"];
      for (const auto& g : bands) {  // seconds long: the wait (quiet stretches say "ms")
        if (g["events"].get<int>() == 0 && g["label"].get<std::string>().find(" ms ") == std::string::npos) gaps.push_back(g);
      }
      REQUIRE(gaps.size() == 1);
      CHECK(gaps[0]["collapsed"].get<bool>());
      const std::string label = gaps[0]["label"].get<std::string>();
      CHECK(label.find(" s waiting in allreduce") != std::string::npos);
      const float band = gaps[0]["x1"].get<float>() - gaps[0]["x0"].get<float>();
      const float plot = report["timeline_plot"][1].get<float>() - report["timeline_plot"][0].get<float>();
      CHECK(band >= 40.f);
      CHECK(band <= 0.1f * plot);
      // The label inside its band.
      CHECK(gaps[0]["label_rect"][0].get<float>() >= gaps[0]["x0"].get<float>() - 1.f);
      CHECK(gaps[0]["label_rect"][2].get<float>() <= gaps[0]["x1"].get<float>() + 1.f);
      // The story's marker labels (failure, destroyed, rebuilt) stay readable:
      // none under the band (it was drawn over them) and some drawn at all.
      CHECK(report["timeline_marker_labels"].get<int>() >= 1);
      for (const auto& lx : report["timeline_marker_label_x"]) {
        for (const auto& b : bands) {
          const float x0 = lx[0].get<float>(), x1 = lx[1].get<float>();
          INFO("marker label [" << x0 << "," << x1 << "] band [" << b["x0"] << "," << b["x1"] << "]");
          CHECK((x1 <= b["x0"].get<float>() || x0 >= b["x1"].get<float>()));
        }
      }
    }
  }
}
#endif
