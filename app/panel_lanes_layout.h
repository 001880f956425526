#pragma once
// The Lanes panel's layout and level of detail, without ImGui: rows (groups
// of lanes, folded or not), the event axis, fire ticks aggregated per pixel
// column and live-hook counters. Tested headless (tests/app/test_panel_lanes_layout.cpp).
// See Note [Lanes level of detail].

#include <cstdint>
#include <span>
#include <vector>

#include "analysis/lanes.h"

namespace hookscope::app {

// Note [Lanes level of detail]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A frame of the Lanes panel costs what its pixels show, not what the trace
// holds: rows are clipped to the visible ones (ImGuiListClipper over
// `LaneRows::rows`), a bar is one rectangle (at least a pixel wide) whatever
// its length, and a hook's fires are drawn one tick per pixel column that has
// any (tick_columns: one binary search per column with ticks, so a hook that
// fired 100k times costs at most the canvas width). The counter track samples
// the live-hook count once per pixel column (LiveCounter: two binary searches).
// Measured: 100k hooks, 265k events (bench/make_lanes_trace), Lanes in front
// at 1600x1000 under Xvfb, `--bench-frames 300`: median CPU frame time
// 1.27 ms, median of three runs (0.73 ms for the same trace without the panel).

// The visible event range [begin, end) mapped onto [x0, x0 + width).
struct EventAxis {
  double begin = 0.0, end = 1.0;
  float x0 = 0.f, width = 1.f;
  float x(double event) const { return x0 + static_cast<float>((event - begin) / (end - begin) * width); }
  double event_at(float px) const { return begin + (px - x0) / width * (end - begin); }
  // Zoom by `factor` (< 1: in) keeping the event under `px` in place, within [0, limit].
  void zoom(double factor, float px, double limit);
  void pan(float dx_px, double limit);
};

enum class LaneGrouping : uint8_t { kFunction = 0, kOwner = 1 };

struct LaneGroup {
  uint32_t key = analysis::kNoIndex;  // a FunctionIndex or an OwnerIndex
  uint32_t count = 0;                 // lanes in it
  analysis::EventIndex begin = 0;     // first add
  analysis::EventIndex end = 0;       // last end (num_events for lanes never ended)
  uint32_t outliving = 0;             // lanes that outlive their owner
  uint32_t unused = 0;                // the others that outlive their use (owner replaced, alive)
  uint32_t stale_fires = 0;
  bool folded = false;
};

struct LaneRow {
  uint32_t group = 0;
  uint32_t lane = analysis::kNoIndex;  // index into the lanes; kNoIndex: the group's header
};

struct LaneRows {
  std::vector<LaneGroup> groups;
  std::vector<LaneRow> rows;  // what the clipper walks
};

// Groups `lanes` by Function (their order: creation) or by owner (first add),
// lanes in each group by add; a header row per group, then its lanes unless
// `folded` (keys of folded groups, sorted) holds the group's key.
LaneRows build_lane_rows(std::span<const analysis::HookLane> lanes, LaneGrouping grouping,
                         std::span<const uint32_t> folded, size_t num_events);

struct TickColumn {
  float x = 0.f;         // the column's left edge
  uint32_t fires = 0;    // fires drawn as this one tick
  analysis::EventIndex first = 0;  // the first of them (a click goes there)
  bool stale = false;    // any of them at or after `stale_from`
};

// One tick per pixel column of `axis` holding fires (ascending), visible ones only.
void tick_columns(std::span<const analysis::EventIndex> fires, const EventAxis& axis,
                  analysis::EventIndex stale_from, std::vector<TickColumn>& out);

// The lane's event nearest `event`: its add, end, owner's death or a fire.
analysis::EventIndex nearest_lane_event(const analysis::HookLane& lane,
                                        std::span<const analysis::EventIndex> fires, double event);

// Live hooks over time, in total and per owner: attached right after event i
// is added_at <= i < ended_at, as hook_count_series counts them.
class LiveCounter {
 public:
  void build(std::span<const analysis::HookLane> lanes, size_t num_owners);
  uint32_t total_at(size_t event) const { return at(all_, event); }
  uint32_t owner_at(analysis::OwnerIndex owner, size_t event) const {
    return owner < owners_.size() ? at(owners_[owner], event) : 0;
  }
  // Owners by hooks added, most first.
  const std::vector<analysis::OwnerIndex>& owners_by_size() const { return by_size_; }

 private:
  struct Steps {
    std::vector<analysis::EventIndex> from, to;  // sorted
  };
  static uint32_t at(const Steps& s, size_t event);
  Steps all_;
  std::vector<Steps> owners_;
  std::vector<analysis::OwnerIndex> by_size_;
};

}  // namespace hookscope::app
