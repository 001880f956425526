// The timeline index and view: folding by pixel (Note [Timeline folding]),
// the class summary, tracks and spans of a real trace.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "render/layout/timeline_index.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/recorder.h"
#include "trace/strings.h"

#ifdef HOOKSCOPE_RENDER_DRAW
#include "render/draw/timeline_view.h"
#include "testing/headless_imgui.h"
#include "testing/test_util.h"
#endif

using namespace hookscope;
using namespace hookscope::render;

namespace {

// One track of `n` events spread over a second, classes cycling.
TimelineIndex uniform_index(size_t n, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<int64_t> time(n);
  std::vector<uint32_t> event(n);
  std::vector<uint8_t> cls(n);
  for (size_t i = 0; i < n; ++i) {
    time[i] = static_cast<int64_t>(gen() % 1'000'000'000);
    cls[i] = static_cast<uint8_t>(gen() % 6);
  }
  std::sort(time.begin(), time.end());
  for (size_t i = 0; i < n; ++i) event[i] = static_cast<uint32_t>(i);
  if (n > 10) cls[n / 3] = static_cast<uint8_t>(TickClass::kAlarm);
  TimelineIndex index;
  index.add_track("rank 0", std::move(time), std::move(event), std::move(cls));
  return index;
}

#ifdef HOOKSCOPE_RENDER_DRAW
// A left click (press, release) at `at`; the event the view moved to, if any.
std::optional<size_t> click_timeline(hookscope::testing::HeadlessImGui& imgui, TimelineView& view, ImVec2 at) {
  std::optional<size_t> moved;
  for (bool down : {true, false}) {
    ImGui::GetIO().MousePos = at;
    ImGui::GetIO().MouseDown[0] = down;
    imgui.frame([&] {
      const TimelineResult r = view.draw(0);
      if (r.current_event) moved = r.current_event;
    });
  }
  ImGui::GetIO().MousePos = {-1.f, -1.f};
  return moved;
}

// `view` on `m`, drawn twice (the first frame fits).
void open_view(hookscope::testing::HeadlessImGui& imgui, TimelineView& view, const analysis::Model& m) {
  view.set_model(&m);
  imgui.frame([&] { view.draw(0); });
  imgui.frame([&] { view.draw(0); });
}
#endif

// Note [Idle gaps]: two ranks start 4.5 s apart, train 0.3 s, then rank 0
// waits 59.5 s in an allreduce whose peer died, and ends 0.1 s later.
trace::TraceData idle_trace() {
  analysis::TraceBuilder b;
  constexpr uint64_t kS = 1'000'000'000;
  b.rank(0).time(10 * kS);
  b.function("MulBackward0");
  b.rank(1).time(10 * kS + kS / 1000);
  b.function("MulBackward0");
  uint64_t t = 14 * kS + kS / 2;  // 4.5 s later, training
  for (uint16_t r : {0, 1}) {
    b.rank(r).time(t);
    b.push(trace::EventKind::kBackwardBegin);
    for (int i = 0; i < 15; ++i) b.time(t += 10'000'000).function("AddBackward0");
    b.time(t += 1'000'000).push(trace::EventKind::kBackwardEnd);
  }
  b.rank(0).time(t += 1'000'000);
  const uint32_t reducer = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
  const uint64_t collective = b.bucket_ready(reducer, 0, 4);
  b.time(t += 59'500'000'000).collective_end(reducer, collective, trace::CollectiveStatus::kError);
  for (int i = 0; i < 10; ++i) b.time(t += 10'000'000).function("SubBackward0");
  return b.take();
}

}  // namespace

TEST_CASE("timeline index: idle stretches are found and say what they were (Note [Idle gaps])") {
  const analysis::Model m(idle_trace());
  const TimelineIndex index(m);
  REQUIRE(index.idle_gaps().size() == 2);
  const IdleGap& start = index.idle_gaps()[0];
  CHECK(start.what == "start-up");
  CHECK(static_cast<double>(start.end - start.begin) == doctest::Approx(4.499e9).epsilon(0.001));
  CHECK(m.time_ns(start.before) == start.begin);
  CHECK(m.time_ns(start.after) == start.end);
  const IdleGap& wait = index.idle_gaps()[1];
  CHECK(wait.what == "waiting in allreduce");
  CHECK(static_cast<double>(wait.end - wait.begin) == doctest::Approx(59.5e9).epsilon(0.001));
  // A busy trace has none: the recovery scenario's short waits stay to scale
  // (its start-up before the first step may be a band: Note [Start-up band]).
  scenarios::DdpScenarioOptions o;
  o.steps = 3;
  const analysis::Model busy(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
  const TimelineIndex busy_index(busy);
  for (const IdleGap& g : busy_index.idle_gaps()) {
    CHECK(g.what == "start-up");
    CHECK(g.events > 0);
  }
}
// Note [Quiet stretches]: a rank killed mid-step leaves its peer 126 ms in an
// allreduce after 40 ms of training (under kIdleGapMinNs); `steps` more steps
// of 40 ms, 60 ms apart, before it.
trace::TraceData killed_peer_trace(int steps) {
  analysis::TraceBuilder b;
  constexpr uint64_t kMs = 1'000'000;
  uint64_t t = 1000 * kMs;
  b.rank(0).time(t);
  const uint32_t reducer = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
  for (int step = 0; step <= steps; ++step) {
    if (step > 0) t += 60 * kMs;  // between steps: quiet, but one of many
    for (uint16_t r : {0, 1}) {
      b.rank(r).time(t);
      b.push(trace::EventKind::kBackwardBegin);
      for (int i = 0; i < 10; ++i) b.time(t += 2 * kMs).function("AddBackward0");
      b.time(t += kMs).push(trace::EventKind::kBackwardEnd);
    }
  }
  b.rank(0).time(t += kMs);
  const uint64_t collective = b.bucket_ready(reducer, 0, 4);
  b.time(t += 126 * kMs).collective_end(reducer, collective, trace::CollectiveStatus::kError);
  for (int i = 0; i < 3; ++i) b.time(t += kMs).function("SubBackward0");
  return b.take();
}

TEST_CASE("timeline index: a wait long beside a short run is a gap under kIdleGapMinNs, pauses between many steps are not") {
  const analysis::Model one(killed_peer_trace(0));
  const TimelineIndex index(one);
  REQUIRE(index.idle_gaps().size() == 1);
  const IdleGap& wait = index.idle_gaps()[0];
  CHECK(wait.what == "waiting in allreduce");
  CHECK(wait.events == 0);
  CHECK(static_cast<double>(wait.end - wait.begin) == doctest::Approx(126e6).epsilon(0.01));
  // Ten steps: the 60 ms pauses are short beside 1 s of them all, and the
  // wait too; nothing collapses.
  const analysis::Model ten(killed_peer_trace(10));
  CHECK(TimelineIndex(ten).idle_gaps().empty());
}

#ifdef HOOKSCOPE_RENDER_DRAW
TEST_CASE("timeline view: after a killed peer the training, not the wait, takes the width (Note [Quiet stretches])") {
  const analysis::Model m(killed_peer_trace(0));
  hookscope::testing::HeadlessImGui imgui(1280.f, 300.f);
  TimelineView view;
  open_view(imgui, view, m);
  const TimelineDrawStats& s = view.stats();
  const float plot_w = s.plot_x1 - s.plot_x0;
  REQUIRE(s.gaps.size() == 1);
  CHECK(s.gaps[0].collapsed);
  CHECK(s.gaps[0].label == "126 ms waiting in allreduce");
  // The training (first to last backward event) gets most of the plot;
  // drawn to scale it had 40 / 170 of it.
  const auto& backwards = m.events_of_kind(trace::EventKind::kBackwardEnd);
  const float train0 = view.x_at(static_cast<double>(m.time_ns(0)));
  const float train1 = view.x_at(static_cast<double>(m.time_ns(backwards.back())));
  CHECK(train1 - train0 >= 0.6f * plot_w);
  CHECK(s.gaps[0].x1 - s.gaps[0].x0 <= 0.1f * plot_w);
}
#endif

TEST_CASE("timeline index: times at int64's two ends make one idle gap, not an overflow") {
  // fuzz_gui_frame's find: the gap test subtracted the times in int64.
  analysis::TraceBuilder b;
  b.rank(0).time(0x8000'0000'0000'000Aull);  // INT64_MIN + 10
  b.function("MulBackward0");
  b.time(0x7FFF'FFFF'FFFF'FFF6ull);  // INT64_MAX - 9
  b.function("AddBackward0");
  const analysis::Model m(b.take());
  const TimelineIndex index(m);
  REQUIRE(index.idle_gaps().size() == 1);
  CHECK(static_cast<double>(index.idle_gaps()[0].end) - static_cast<double>(index.idle_gaps()[0].begin) ==
        doctest::Approx(1.8446744e19).epsilon(0.001));
}

TEST_CASE("timeline: the class summary answers like a scan, on random ranges") {
  const TimelineIndex index = uniform_index(300'000, 1);
  const TimelineTrack& t = index.tracks()[0];
  REQUIRE(t.summary.size() >= 2);
  std::mt19937_64 gen(2);
  for (int trial = 0; trial < 300; ++trial) {
    size_t a = gen() % t.size(), b = gen() % t.size();
    if (a > b) std::swap(a, b);
    if (trial % 3 == 0) b = std::min(t.size(), a + gen() % 200);
    uint8_t expect = 0;
    for (size_t i = a; i < b; ++i) expect |= static_cast<uint8_t>(1u << t.cls(i));
    CHECK(t.classes(a, b) == expect);
  }
}

TEST_CASE("timeline folding: marks cover every visible event once and start min_gap apart") {
  for (size_t n : {10u, 1000u, 200'000u}) {
    const TimelineIndex index = uniform_index(n, n);
    const TimelineTrack& t = index.tracks()[0];
    const int64_t t0 = 200'000'000, t1 = 700'000'000, gap = 3 * (t1 - t0) / 1000;  // 3 px of 1000
    std::vector<TickMark> marks;
    for_each_mark(t, t0, t1, gap, [&](TickMark m) { marks.push_back(m); });
    for (size_t k = 0; k < marks.size(); ++k) {
      CHECK(marks[k].first < marks[k].last);
      if (k > 0) {
        CHECK(marks[k].first == marks[k - 1].last);
        CHECK(t.time(marks[k].first) - t.time(marks[k - 1].last - 1) >= gap);
      }
    }
    // All events in [t0, t1] are covered, and the marks fit 1000 pixels.
    size_t lo = 0, hi = 0;  // by a scan, not the index's own search
    while (lo < t.size() && t.time(lo) < t0) ++lo;
    while (hi < t.size() && t.time(hi) <= t1) ++hi;
    if (lo < hi) {
      REQUIRE(!marks.empty());
      CHECK(marks.front().first <= lo);
      CHECK(marks.back().last >= hi);
    }
    CHECK(marks.size() <= 1000 / 3 + 2);
  }
}

TEST_CASE("timeline index of a recovery trace: a track per rank, backward spans matched") {
  scenarios::DdpScenarioOptions o;
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 6;
  const analysis::Model m(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
  const TimelineIndex index(m);
  std::set<uint16_t> ranks;
  size_t events = 0, backward_spans = 0;
  for (const TimelineTrack& t : index.tracks()) {
    ranks.insert(t.rank);
    events += t.size();
    for (size_t k = 1; k < t.size(); ++k) CHECK(t.time(k - 1) <= t.time(k));
    for (const auto& lane : t.lanes) {
      for (size_t k = 0; k < lane.size(); ++k) {
        CHECK(lane[k].begin <= lane[k].end);
        if (k > 0) CHECK(lane[k - 1].end <= lane[k].begin);  // disjoint within a lane
        backward_spans += lane[k].kind == SpanKind::kBackward;
      }
    }
  }
  CHECK(ranks == std::set<uint16_t>{0, 1});
  CHECK(events == m.num_events());
  CHECK(backward_spans == m.events_of_kind(trace::EventKind::kBackwardBegin).size());
}

#ifdef HOOKSCOPE_RENDER_DRAW

TEST_CASE("timeline view: vertices bounded by the pixel width, not the number of events") {
  hookscope::testing::HeadlessImGui imgui(1000.f, 300.f);
  std::vector<int> vertices;
  for (size_t n : {1'000u, 100'000u, 2'000'000u}) {
    TimelineView view;
    view.set_index(uniform_index(n, 7));
    view.set_window(0.0, 1e9);
    const int v = imgui.frame([&] { view.draw(0); });
    const TimelineDrawStats& s = view.stats();
    CHECK(s.ticks + s.folds <= 1000 / 3 + 2);
    vertices.push_back(v);
  }
  // Per mark a rectangle (4 vertices) and maybe a count; the axis and text
  // on top: a bound that depends on the width only.
  for (int v : vertices) CHECK(v < 20000);
  CHECK(vertices[2] <= vertices[0] * 3);
}

// A fold holding an alarm was red from its first event, so a red block could
// start left of the lingering marker it follows: red starts at its first alarm.
TEST_CASE("timeline view: a fold holding an alarm is red from its first alarm on, not from its first event") {
  hookscope::testing::HeadlessImGui imgui(1000.f, 300.f);
  // 1,000 fires 1 ms apart (about a pixel: one fold across the window), the 600th an alarm.
  constexpr size_t kN = 1000, kAlarmAt = 600;
  std::vector<int64_t> time(kN);
  std::vector<uint32_t> event(kN);
  std::vector<uint8_t> cls(kN, static_cast<uint8_t>(TickClass::kFire));
  for (size_t i = 0; i < kN; ++i) time[i] = static_cast<int64_t>(i) * 1'000'000, event[i] = static_cast<uint32_t>(i);
  cls[kAlarmAt] = static_cast<uint8_t>(TickClass::kAlarm);
  TimelineIndex index;
  index.add_track("rank 0", std::move(time), std::move(event), std::move(cls));
  TimelineView view;
  view.set_index(std::move(index));
  imgui.frame([&] { view.draw(0); });  // the canvas's width, which set_window needs
  view.set_window(0.0, 1e9);
  imgui.frame([&] { view.draw(0); });
  const TimelineDrawStats& s = view.stats();
  REQUIRE(s.folds >= 1);
  REQUIRE(s.alarm_folds.size() == 1);
  const TimelineDrawStats::AlarmFold& f = s.alarm_folds[0];
  INFO("fold " << f.x0 << ".." << f.x1 << ", red from " << f.alarm_x);
  REQUIRE(f.x1 - f.x0 > 100.f);
  // The alarm's x inside the fold, within a pixel of where its time falls.
  const float expected = f.x0 + (f.x1 - f.x0) * static_cast<float>(kAlarmAt) / static_cast<float>(kN - 1);
  CHECK(std::abs(f.alarm_x - expected) <= 1.5f);
}

TEST_CASE("timeline view: a still view reuses its marks; a pan or a new index walks again (Note [Timeline mark cache])") {
  hookscope::testing::HeadlessImGui imgui(1000.f, 300.f);
  TimelineView view;
  view.set_index(uniform_index(200'000, 9));
  view.set_window(0.0, 1e9);
  const int first = imgui.frame([&] { view.draw(0); });
  const TimelineDrawStats a = view.stats();
  const int again = imgui.frame([&] { view.draw(0); });
  CHECK(again == first);
  CHECK(view.stats().ticks == a.ticks);
  CHECK(view.stats().folds == a.folds);
  // Zoomed in far enough that every event is a lone tick: the cached fold
  // of the whole window must not be drawn again.
  view.set_window(5e8, 5e8 + 2e5);
  imgui.frame([&] { view.draw(0); });
  TimelineView fresh;
  fresh.set_index(uniform_index(200'000, 9));
  imgui.frame([&] { fresh.draw(0); });  // the canvas's width, which set_window needs
  fresh.set_window(5e8, 5e8 + 2e5);
  imgui.frame([&] { fresh.draw(0); });
  CHECK(view.stats().ticks == fresh.stats().ticks);
  CHECK(view.stats().folds == fresh.stats().folds);
  CHECK(view.stats().ticks > 0);
  // Another index under the same window: its own marks.
  view.set_index(uniform_index(1'000, 10));
  view.set_window(5e8, 5e8 + 2e5);
  imgui.frame([&] { view.draw(0); });
  CHECK(view.stats().ticks + view.stats().folds <= 2);
}

TEST_CASE("timeline view: a click on empty track space moves to that track's nearest event") {
  scenarios::DdpScenarioOptions o;
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 4;
  const analysis::Model m(testing::record_trace([&] { scenarios::run_ddp_scenario(o); }));
  hookscope::testing::HeadlessImGui imgui(1200.f, 400.f);
  TimelineView view;
  view.set_model(&m);
  imgui.frame([&] { view.draw(0); });
  REQUIRE(view.stats().track_y.size() == view.index().tracks().size());
  REQUIRE(view.index().tracks().size() >= 2);
  // On the last track's tick row, at the x of the widest stretch without
  // any of its events: no tick or span under the mouse there.
  const TimelineTrack& track = view.index().tracks().back();
  const auto [top, bottom] = view.stats().track_y.back();
  const float plot_x = 8.f + TimelineViewOptions{}.header_width, right = 1192.f;  // the window's padding is 8
  std::vector<float> xs;
  for (size_t k = 0; k < track.size(); ++k) {
    const double t = static_cast<double>(track.time(k));
    // x of t by bisection on time_at (monotone in x).
    float lo = plot_x - 2000.f, hi = right + 2000.f;
    for (int i = 0; i < 40; ++i) (view.time_at((lo + hi) * 0.5f) < t ? lo : hi) = (lo + hi) * 0.5f;
    xs.push_back(lo);
  }
  float best_gap = 0.f, click_x = 0.f;
  for (size_t k = 1; k < xs.size(); ++k) {
    const float a = std::max(xs[k - 1], plot_x + 4.f), b = std::min(xs[k], right - 4.f);
    if (b - a > best_gap) best_gap = b - a, click_x = a + (b - a) * 0.3f;  // nearer the earlier one
  }
  REQUIRE_MESSAGE(best_gap > 20.f, "no empty stretch on the track to click");
  auto click = [&](ImVec2 at) { return click_timeline(imgui, view, at); };
  const std::optional<size_t> moved = click({click_x, top + 6.f});
  REQUIRE(moved.has_value());
  // The event is on that track, and none of the track's events is nearer in time.
  const double t = view.time_at(click_x);
  size_t on_track = SIZE_MAX;
  double nearest = 1e300;
  for (size_t k = 0; k < track.size(); ++k) {
    nearest = std::min(nearest, std::abs(static_cast<double>(track.time(k)) - t));
    if (track.event(k) == *moved) on_track = k;
  }
  REQUIRE(on_track != SIZE_MAX);
  CHECK(std::abs(static_cast<double>(track.time(on_track)) - t) == doctest::Approx(nearest));
  CHECK(m.event(*moved).rank == track.rank);
  // The track's name column is no track space: nothing moves.
  CHECK_FALSE(click({20.f, top + 6.f}).has_value());
  (void)bottom;
}

// Note [Idle gaps], Note [Timeline time mapping]: at fit the 0.4 s of work
// fill the plot, each idle gap is a labelled band; a click on the label draws
// it to scale; a click elsewhere in the band still moves to the nearest event.
TEST_CASE("timeline view: idle gaps are collapsed to labelled bands, work fills the plot, a click expands one") {
  const analysis::Model m(idle_trace());
  hookscope::testing::HeadlessImGui imgui(1280.f, 300.f);
  TimelineView view;
  open_view(imgui, view, m);
  const TimelineDrawStats& s = view.stats();
  const float plot_w = s.plot_x1 - s.plot_x0;
  REQUIRE(s.gaps.size() == 2);
  CHECK(s.gaps[0].label == "4.5 s start-up");
  CHECK(s.gaps[1].label == "59.5 s waiting in allreduce");
  float bands = 0.f;
  for (const TimelineGapDraw& g : s.gaps) {
    CHECK(g.collapsed);
    CHECK(g.x1 - g.x0 >= 40.f);
    CHECK(g.x1 - g.x0 <= 97.f);
    CHECK(g.lx0 >= g.x0 - 1.f);  // the label inside its band
    CHECK(g.lx1 <= g.x1 + 1.f);
    bands += g.x1 - g.x0;
  }
  // Every event in the plot; from the first to the last they span it all but the margins.
  const float first = view.x_at(static_cast<double>(m.time_ns(0)));
  const float last = view.x_at(static_cast<double>(m.time_ns(m.num_events() - 1)));
  CHECK(first >= s.plot_x0);
  CHECK(last <= s.plot_x1);
  CHECK(last - first >= 0.97f * plot_w);
  CHECK(bands <= 0.3f * plot_w);
  // One mapping: x -> time -> x is the identity, and time grows with x.
  double before = -1e300;
  for (float x = s.plot_x0; x <= s.plot_x1; x += 7.f) {
    const double t = view.time_at(x);
    CHECK(t >= before);
    before = t;
    CHECK(view.x_at(t) == doctest::Approx(x).epsilon(0.0005));
  }
  // A click in the start-up band, below its label, on rank 0's track: rank 0's nearest event.
  const auto [top, bottom] = s.track_y[0];
  const TimelineGapDraw start = s.gaps[0];
  const std::optional<size_t> moved = click_timeline(imgui, view, {start.x0 + 3.f, (top + bottom) * 0.5f});
  REQUIRE(moved.has_value());
  CHECK(m.event(*moved).rank == 0);
  CHECK(m.time_ns(*moved) <= view.index().idle_gaps()[0].begin);  // its last event before the gap, not one after
  CHECK(view.gap_collapsed(0));
  // A click on its label: expanded and drawn to scale, nothing else moves.
  CHECK_FALSE(click_timeline(imgui, view, {(start.lx0 + start.lx1) * 0.5f, (start.ly0 + start.ly1) * 0.5f}).has_value());
  imgui.frame([&] { view.draw(0); });
  CHECK_FALSE(view.gap_collapsed(0));
  REQUIRE(view.stats().gaps.size() == 2);
  const TimelineGapDraw open = view.stats().gaps[0];
  CHECK_FALSE(open.collapsed);
  const double seconds = 4.5 + 0.3 + 0.1;  // what is drawn to scale now, beside the collapsed wait
  CHECK((open.x1 - open.x0) / plot_w > 0.8f * 4.5 / seconds);
  CHECK(view.stats().gaps[1].collapsed);
}

TEST_CASE("timeline view: bookmarks toggle") {
  TimelineView view;
  view.toggle_bookmark(12);
  view.toggle_bookmark(3);
  CHECK(view.bookmarks() == std::vector<size_t>{3, 12});
  view.toggle_bookmark(12);
  CHECK(view.bookmarks() == std::vector<size_t>{3});
}

#endif  // HOOKSCOPE_RENDER_DRAW

TEST_CASE("timeline: a rank recorded by two processes (a replacement) gets a track per process, named by pid") {
  std::vector<trace::TraceData> traces;
  for (int p = 0; p < 3; ++p) {
    const int rank = p == 0 ? 0 : 1;  // rank 1 died and was replaced
    analysis::TraceBuilder b(rank);
    b.rank(static_cast<uint16_t>(rank)).time(1000 + 100 * p);
    b.function("MulBackward0");
    b.function("AddBackward0");
    trace::TraceData t = b.take();
    t.header.pid = 4000 + p;
    traces.push_back(std::move(t));
  }
  const analysis::Model m(std::move(traces));
  const TimelineIndex index(m);
  std::vector<std::string> names;
  for (const auto& t : index.tracks()) names.push_back(t.name);
  REQUIRE(names.size() == 3);
  CHECK(names[0] == "rank 0");
  CHECK(names[1] == "rank 1 \u00b7 pid 4001");
  CHECK(names[2] == "rank 1 \u00b7 pid 4002");
}
