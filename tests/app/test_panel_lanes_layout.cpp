// The Lanes panel's layout and level of detail (app/panel_lanes_layout.h,
// Note [Lanes level of detail]): rows and folding, ticks aggregated per pixel
// column, the nearest event a click goes to, live-hook counters that agree
// with `hookscope-cli stats`' series.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <vector>

#include "analysis/lanes.h"
#include "analysis/model.h"
#include "analysis/stats.h"
#include "analysis/synthetic.h"
#include "panel_lanes_layout.h"

using namespace hookscope;
using namespace hookscope::app;
using analysis::EventIndex;
using analysis::HookLane;
using analysis::kNever;
using analysis::kNoIndex;

namespace {

HookLane lane(uint32_t hook, uint32_t function, uint32_t owner, EventIndex added, EventIndex ended,
              EventIndex died = kNever) {
  HookLane l;
  l.hook = hook;
  l.function = function;
  l.owner = owner;
  l.added_at = added;
  l.ended_at = ended;
  l.owner_died_at = died;
  return l;
}

}  // namespace

TEST_CASE("lanes layout: rows by Function and by owner, folded groups keep only their header") {
  // As hook_lanes orders them: by Function, then by add.
  const std::vector<HookLane> lanes = {lane(0, 0, 1, 5, 20), lane(1, 0, 0, 8, kNever, 12), lane(2, 3, 1, 2, 9),
                                       lane(3, 3, 0, 30, 40, 35)};
  const LaneRows by_f = build_lane_rows(lanes, LaneGrouping::kFunction, {}, 100);
  REQUIRE(by_f.groups.size() == 2);
  CHECK(by_f.rows.size() == 6);  // 2 headers + 4 lanes
  CHECK(by_f.groups[0].key == 0);
  CHECK(by_f.groups[0].count == 2);
  CHECK(by_f.groups[0].begin == 5);
  CHECK(by_f.groups[0].end == 100);  // a lane never ended runs to the end of the trace
  CHECK(by_f.groups[0].outliving == 1);
  CHECK(by_f.groups[1].outliving == 1);  // removed at 40, owner died at 35
  CHECK(by_f.rows[1].lane == 0);
  CHECK(by_f.rows[2].lane == 1);

  // By owner: owner 1 added first (event 2), then owner 0 (event 8); lanes by add.
  const LaneRows by_o = build_lane_rows(lanes, LaneGrouping::kOwner, {}, 100);
  REQUIRE(by_o.groups.size() == 2);
  CHECK(by_o.groups[0].key == 1);
  CHECK(by_o.rows[1].lane == 2);
  CHECK(by_o.rows[2].lane == 0);
  CHECK(by_o.groups[1].key == 0);

  const std::vector<uint32_t> folded = {1};
  const LaneRows f = build_lane_rows(lanes, LaneGrouping::kOwner, folded, 100);
  CHECK(f.rows.size() == 4);  // owner 1 folded to its header
  CHECK(f.groups[0].folded);
  CHECK(f.rows[1].group == 1);
  CHECK(f.rows[1].lane == kNoIndex);
}

TEST_CASE("lanes layout: a hook firing 100k times costs at most one tick per pixel column") {
  std::vector<EventIndex> fires;
  for (EventIndex e = 0; e < 200'000; e += 2) fires.push_back(e);
  EventAxis axis{0.0, 200'000.0, 100.f, 400.f};
  std::vector<TickColumn> ticks;
  tick_columns(fires, axis, 150'000, ticks);
  CHECK(ticks.size() <= 400);
  CHECK(ticks.size() >= 399);
  uint32_t total = 0;
  float last_x = -1.f;
  for (const TickColumn& t : ticks) {
    CHECK(t.x > last_x);  // one per column, left to right
    last_x = t.x;
    total += t.fires;
  }
  CHECK(total == fires.size());  // every fire in some tick
  // Stale from event 150000: the last quarter of the columns.
  size_t stale = 0;
  for (const TickColumn& t : ticks) stale += t.stale;
  CHECK(stale >= 99);
  CHECK(stale <= 101);

  // Zoomed in to 40 events over 400 px: each fire its own tick, and only the visible ones.
  EventAxis zoomed{1000.0, 1040.0, 0.f, 400.f};
  tick_columns(fires, zoomed, kNever, ticks);
  REQUIRE(ticks.size() == 20);
  CHECK(ticks[0].first == 1000);
  CHECK(ticks[0].fires == 1);
  CHECK(ticks[1].x == doctest::Approx(20.f));
  CHECK_FALSE(ticks[0].stale);
}

TEST_CASE("lanes layout: the axis zooms about the mouse and stays inside the trace") {
  EventAxis a{0.0, 1000.0, 0.f, 500.f};
  CHECK(a.x(500.0) == doctest::Approx(250.f));
  CHECK(a.event_at(250.f) == doctest::Approx(500.0));
  a.zoom(0.5, 250.f, 1000.0);
  CHECK(a.end - a.begin == doctest::Approx(500.0));
  CHECK(a.event_at(250.f) == doctest::Approx(500.0));  // the event under the mouse stayed
  a.pan(-10000.f, 1000.0);                             // far right: clamped at the end
  CHECK(a.end == doctest::Approx(1000.0));
  a.zoom(100.0, 0.f, 1000.0);  // out past the trace: the whole trace
  CHECK(a.begin == doctest::Approx(0.0));
  CHECK(a.end == doctest::Approx(1000.0));
}

TEST_CASE("lanes layout: a click goes to the lane's nearest event") {
  const HookLane l = lane(0, 0, 0, 10, 90, 50);
  const std::vector<EventIndex> fires = {20, 30, 60};
  CHECK(nearest_lane_event(l, fires, 11.0) == 10);
  CHECK(nearest_lane_event(l, fires, 27.0) == 30);
  CHECK(nearest_lane_event(l, fires, 48.0) == 50);  // the owner's death
  CHECK(nearest_lane_event(l, fires, 200.0) == 90);
}

TEST_CASE("lanes layout: live-hook counters agree with hook_count_series, owners sum to the total") {
  analysis::SyntheticOptions o;
  o.events = 20'000;
  o.parameters = 16;
  o.rebuild_every = 5;
  o.policy = trace::DestroyPolicy::kNone;
  const analysis::Model m(analysis::make_synthetic_trace(o));
  const auto lanes = analysis::hook_lanes(m);
  LiveCounter c;
  c.build(lanes, m.owners().size());
  REQUIRE_FALSE(c.owners_by_size().empty());
  for (const analysis::SeriesPoint& p : analysis::hook_count_series(m, kNoIndex, 57)) {
    CHECK(c.total_at(p.index) == p.hooks);
    uint32_t sum = 0;
    for (analysis::OwnerIndex owner : c.owners_by_size()) sum += c.owner_at(owner, p.index);
    CHECK(sum <= c.total_at(p.index));  // hooks with no owner count in the total only
  }
}

#endif
