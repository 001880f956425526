// Note [Start-up band] in the app under Xvfb, measured through the draw
// report (Note [Draw report]): the timeline gives its width to the training,
// not to what a run records before it. A trace shaped like a 2-rank bridge
// run under PyTorch 2.6 with ranks launched by hand (100 ms of start-up on
// each rank, 4.09 s waiting for the peer, 20 ms of training), at 1280x800 and
// 1920x1080, dark and light; and the samples, headless. Real programs'
// traces: tests/torch/test_gui.py (test_timeline_*).
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "render/draw/timeline_view.h"
#include "render/layout/timeline_index.h"
#include "testing/gui_harness.h"
#include "testing/headless_imgui.h"
#include "testing/write_trace.h"
#include "trace/reader.h"

using namespace hookscope;
using trace::EventKind;
using trace::HookKind;
namespace fs = std::filesystem;

namespace {

constexpr uint64_t kMs = 1'000'000;

fs::path timeline_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_timeline_gui");
  return dir;
}

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

// Each rank: 100 ms of the recorder's start-up (owners, parameters'
// AccumulateGrads, the Reducer's hooks, a Reducer built), 4.09 s waiting for
// the peer, then `steps` steps of 4 ms: a forward (Functions, edges,
// prepare_for_backward), a backward whose hooks fire and mark parameters
// ready, an allreduce. `wait_ms` instead of 4.09 s, after rank 0 prepared
// for its first backward (as a transformer's bridge trace: 421 ms).
trace::TraceData startup_trace(int steps, uint64_t wait_ms = 4'090, bool prepared_early = false) {
  analysis::TraceBuilder b;
  struct Rank {
    uint32_t reducer = 0;
    std::vector<uint64_t> params, keys;
  } ranks[2];
  uint64_t t = 10'000 * kMs;
  for (int i = 0; i < 4; ++i) {  // 4 parameters a rank, 25 ms apart
    for (uint16_t r : {0, 1}) {
      Rank& k = ranks[r];
      b.rank(r).time(t + r * kMs / 2);
      if (i == 0) k.reducer = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
      k.params.push_back(b.accumulator("weight " + std::to_string(i)));
      k.keys.push_back(b.add_hook(k.params.back(), HookKind::kPost, k.reducer));
      if (i == 3) b.reducer_constructed(k.reducer, 4, 1);
      if (i == 3 && r == 0 && prepared_early) b.prepare_for_backward(k.reducer, 1);
    }
    t += 25 * kMs;
  }
  t += wait_ms * kMs;  // rank 1 was launched seconds after rank 0
  for (int s = 0; s < steps; ++s) {
    for (uint16_t r : {0, 1}) {
      Rank& k = ranks[r];
      b.rank(r).time(t + r * kMs / 4);
      const uint64_t loss = b.function("MeanBackward0");
      for (uint64_t p : k.params) {
        const uint64_t mm = b.function("MmBackward0");
        b.edge(loss, mm);
        b.edge(mm, p);
      }
      if (!(prepared_early && r == 0 && s == 0)) b.prepare_for_backward(k.reducer, static_cast<uint64_t>(s + 1));
      b.time(t + kMs + r * kMs / 4).push(EventKind::kBackwardBegin);
      for (size_t p = 0; p < k.params.size(); ++p) {
        b.fire(k.params[p], k.keys[p], HookKind::kPost, k.reducer);
        b.mark_ready(k.reducer, k.params[p], static_cast<uint32_t>(p), 0);
      }
      const uint64_t c = b.bucket_ready(k.reducer, 0, 4);
      b.time(t + 3 * kMs + r * kMs / 4).collective_end(k.reducer, c);
      b.buckets_finalized(k.reducer, static_cast<uint64_t>(s + 1));
      b.push(EventKind::kBackwardEnd);
    }
    t += 4 * kMs;
  }
  return b.take();
}

// The start-up band's and the training's share of the plot, in one view.
struct Shares {
  bool band = false;
  float band_w = 0.f, training = 0.f;
};

Shares headless_shares(const analysis::Model& m) {
  testing::HeadlessImGui imgui(1280.f, 300.f);
  render::TimelineView view;
  view.set_model(&m);
  imgui.frame([&] { view.draw(0); });
  imgui.frame([&] { view.draw(0); });
  const render::TimelineDrawStats& s = view.stats();
  const float plot = s.plot_x1 - s.plot_x0;
  Shares out;
  out.training = (s.last_event_x - s.first_backward_x) / plot;
  for (const render::TimelineGapDraw& g : s.gaps) {
    if (g.events == 0) continue;
    out.band = true;
    out.band_w = (g.x1 - g.x0) / plot;
  }
  return out;
}

}  // namespace

TEST_CASE("timeline: a start-up burst and the gap after it are one band, the training gets the width (Note [Start-up band])") {
  const analysis::Model m(startup_trace(5));
  const render::TimelineIndex index(m);
  REQUIRE(!index.idle_gaps().empty());
  const render::IdleGap& band = index.idle_gaps()[0];
  CHECK(band.what == "start-up");
  CHECK(band.begin == m.time_ns(0));  // from the first event
  CHECK(band.events > 0);
  // It ends where the first step's forward begins: the first MeanBackward0.
  CHECK(m.event(band.after).kind == EventKind::kNodeCreated);
  CHECK(band.after < m.events_of_kind(EventKind::kBackwardBegin)[0]);
  CHECK(m.events_of_kind(EventKind::kReducerConstructed).back() < band.after);
  const Shares s = headless_shares(m);
  CHECK(s.band);
  CHECK(s.band_w <= 0.1f);
  CHECK(s.training >= 0.6f);
}

TEST_CASE("timeline: a pause before the first forward, shorter than an idle gap, is in the start-up band") {
  // Rank 0 prepared for backward, then waited 420 ms for rank 1: under
  // kIdleGapMinNs, but longer than the forward after it.
  const analysis::Model m(startup_trace(5, 420, true));
  const render::TimelineIndex index(m);
  REQUIRE(index.idle_gaps().size() == 1);
  const render::IdleGap& band = index.idle_gaps()[0];
  CHECK(band.events > 0);
  CHECK(m.event(band.after).kind == EventKind::kNodeCreated);
  CHECK(band.end - m.time_ns(m.events_of_kind(EventKind::kPrepareForBackward)[0]) >= 400 * static_cast<int64_t>(kMs));
  const Shares s = headless_shares(m);
  CHECK(s.band_w <= 0.1f);
  CHECK(s.training >= 0.6f);
}

TEST_CASE("timeline: the samples' training gets most of the width") {
  // autograd-demo: 0.1 ms of ops, 28.6 ms with no event (under kIdleGapMinNs),
  // then the forward and backward it exists to show: the pause is in its band.
  // Recorded on a loaded machine it can have no pause at all (1.1 ms of
  // events, its first forward half of them): then there is no band, and none
  // is due, as long as no stretch without events was long enough to be one.
  for (const std::string name : {"recovery-none", "recovery-by-key", "shared-module-by-type", "autograd-demo"}) {
    CAPTURE(name);
    const analysis::Model m(trace::read_trace(sample(name)));
    const Shares s = headless_shares(m);
    std::vector<int64_t> times(m.num_events());
    for (size_t i = 0; i < times.size(); ++i) times[i] = m.time_ns(i);
    std::sort(times.begin(), times.end());
    int64_t pause = 0;
    for (size_t i = 1; i < times.size(); ++i) pause = std::max(pause, times[i] - times[i - 1]);
    INFO("training " << s.training << ", band " << s.band << " " << s.band_w << ", longest pause " << pause << " ns");
    if (!s.band && name == "autograd-demo") {
      CHECK(pause < render::kQuietMinNs);
      continue;
    }
    CHECK(s.training >= 0.6f);
    CHECK(s.band_w <= 0.1f);
  }
}

TEST_CASE("gui timeline: a start-up band is marked and labelled, the training gets >= 60% of the width" *
          doctest::test_suite("gui")) {
  if (!testing::have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
    return;
  }
  const std::string trace = (timeline_dir() / "startup.hstrace").string();
  testing::write_trace_file(startup_trace(5), trace, "startup");
  for (const char* size : {"1280x800", "1920x1080"}) {
    for (const bool light : {false, true}) {
      CAPTURE(size);
      CAPTURE(light);
      const std::string name = std::string("startup_") + size + (light ? "_l" : "_d");
      const std::string png = (timeline_dir() / (name + ".png")).string();
      const std::string rep = (timeline_dir() / (name + ".json")).string();
      const auto r = testing::run_command("HOOKSCOPE_DRAW_REPORT=" + rep + " xvfb-run -a -s '-screen 0 " + size +
                                          "x24' " + HOOKSCOPE_GUI_PATH + " --size " + size +
                                          (light ? " --light " : " ") + trace + " --screenshot " + png);
      REQUIRE_MESSAGE(r.exit == 0, r.out);
      std::ifstream in(rep);
      const nlohmann::json report = nlohmann::json::parse(in);
      const float plot_x0 = report["timeline_plot"][0].get<float>(), plot_x1 = report["timeline_plot"][1].get<float>();
      const float plot = plot_x1 - plot_x0;
      const nlohmann::json& gaps = report["timeline_gaps"];
      REQUIRE(gaps.size() == 1);
      const nlohmann::json& band = gaps[0];
      INFO(band.dump());
      CHECK(band["collapsed"].get<bool>());
      CHECK(band["events"].get<int>() > 0);
      CHECK(band["label"].get<std::string>() == "4.19 s start-up");
      const float x0 = band["x0"].get<float>(), x1 = band["x1"].get<float>();
      CHECK(x1 - x0 >= 40.f);  // room for its label
      CHECK(x1 - x0 <= 0.1f * plot);
      CHECK(band["label_rect"][0].get<float>() >= x0 - 1.f);
      CHECK(band["label_rect"][2].get<float>() <= x1 + 1.f);
      // The training: from the first backward to the last event, after the band, most of the plot.
      const float t0 = report["timeline_training"][0].get<float>(), t1 = report["timeline_training"][1].get<float>();
      CHECK(t0 >= x1);
      CHECK(t1 <= plot_x1);
      CHECK(t1 - t0 >= 0.6f * plot);
    }
  }
}

// README: a click anywhere on a track moves to the nearest event. In the real
// window (Xvfb), a left click on empty space of rank 1's tick row (no tick,
// fold or marker under it: the canvas's background in a screenshot), given
// through GLFW (HOOKSCOPE_TEST_CLICK, app/main.cpp), moves the current event
// to rank 1's event nearest in time to the click, as the draw report says.
TEST_CASE("gui timeline: a click on empty track space in the real window moves to that track's nearest event" *
          doctest::test_suite("gui")) {
  if (!testing::have_xvfb()) {
    MESSAGE("skipping: xvfb-run is not installed (scripts/setup.sh installs xvfb)");
    return;
  }
  const std::string trace = testing::record_once(timeline_dir(), "kept_alive", "kept-alive --world-size 2 --steps 8");
  const analysis::Model m(trace::read_trace(trace));
  const render::TimelineIndex index(m);
  REQUIRE(index.tracks().size() == 2);
  auto shot = [&](const std::string& name, const std::string& env, testing::Pixels* pixels) {
    const std::string png = (timeline_dir() / (name + ".png")).string();
    const std::string rep = (timeline_dir() / (name + ".json")).string();
    const auto r = testing::run_gui(trace + " --at 0 --screenshot " + png, env + " HOOKSCOPE_DRAW_REPORT=" + rep);
    REQUIRE_MESSAGE(r.exit == 0, r.out);
    if (pixels) testing::load_png(png, *pixels);
    std::ifstream in(rep);
    return nlohmann::json::parse(in);
  };
  testing::Pixels before_px;
  const nlohmann::json before = shot("click_before", "", &before_px);
  REQUIRE(before["event"].get<size_t>() == 0);
  CHECK(before["timeline_click"].is_null());
  const auto& rows = before["timeline_track_y"];
  REQUIRE(rows.size() == 2);
  const float x0 = before["timeline_plot"][0].get<float>(), x1 = before["timeline_plot"][1].get<float>();
  const int y = static_cast<int>(rows[1][0].get<float>()) + 6;  // rank 1's tick row
  // The row's own shade is its most common colour; the middle of its widest
  // run (three rows high) is where nothing is drawn: no tick, fold or marker.
  std::map<uint32_t, int> shades;
  for (int x = static_cast<int>(x0); x < static_cast<int>(x1); ++x) {
    const unsigned char* p = &before_px.rgba[(static_cast<size_t>(y) * before_px.w + x) * 4];
    ++shades[p[0] | p[1] << 8 | p[2] << 16];
  }
  const uint32_t bg = std::max_element(shades.begin(), shades.end(), [](const auto& a, const auto& b) {
                        return a.second < b.second;
                      })->first;
  int best = -1, best_w = 0;
  for (int x = static_cast<int>(x0) + 4, run = 0; x < static_cast<int>(x1) - 4; ++x) {
    run = before_px.count(bg, static_cast<float>(x), static_cast<float>(y - 1), static_cast<float>(x + 1),
                          static_cast<float>(y + 2), 1) == 3 ? run + 1 : 0;
    if (run > best_w) best_w = run, best = x - run / 2;
  }
  INFO("click at " << best << "," << y << " in an empty run of " << best_w << " px");
  REQUIRE(best_w >= 12);
  const nlohmann::json after =
      shot("click_after", "HOOKSCOPE_TEST_CLICK=" + std::to_string(best) + "," + std::to_string(y), nullptr);
  const nlohmann::json& click = after["timeline_click"];
  INFO(click.dump());
  REQUIRE_FALSE(click.is_null());
  CHECK(std::abs(click["x"].get<float>() - static_cast<float>(best)) <= 1.f);
  const size_t moved = click["event"].get<size_t>();
  CHECK(after["event"].get<size_t>() == moved);  // the current event
  CHECK(moved != 0);
  // Rank 1's event nearest to the time under the click (ties: the earlier).
  const render::TimelineTrack& track = index.tracks()[1];
  const int64_t t = click["t"].get<int64_t>();
  size_t nearest = track.event(0);
  int64_t gap = INT64_MAX;
  for (size_t k = 0; k < track.size(); ++k) {
    const int64_t d = std::abs(track.time(k) - t);
    if (d < gap) gap = d, nearest = track.event(k);
  }
  CHECK(moved == nearest);
  CHECK(m.event(moved).rank == 1);
}

#endif  // HOOKSCOPE_APP_UI
