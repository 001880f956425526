#pragma once
// When each box of a layout is shown (live or holding ghost hooks), indexed
// by time, so that a frame drawn from a StateView (Note [Graph while the
// state is pending]) costs the boxes in view, not the Functions. Built off
// the UI thread once per layout (GraphView::land_layout). See Note [Liveness
// by intervals].

#include <atomic>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "analysis/model.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"

namespace hookscope::render {

// Note [Liveness by intervals]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A unit (a box) is shown right after event e iff one of its Functions is
// live then (created_at <= e < released_at) or holds a hook on its leaf's
// tensor then (an on_tensor HookSegment from <= e < to, which starts at the
// Function's release): a union of intervals per unit, merged here once per
// layout. Per unit that answers "shown at e?" in O(log its intervals). For
// what needs every shown unit (the live count, their bounds, the minimap,
// the density cells) the units are binned in a grid of cells over the
// layout, each cell holding its units' interval starts and ends sorted: the
// units shown at e in a cell are #(starts <= e) - #(ends <= e), exact, in
// O(log) per cell. The bounds of the shown boxes walk the units sorted by
// each edge up to the first shown one (capped; past the cap the non-empty
// cells' bounds, a little larger, stand in).
class LiveIndex {
 public:
  using EventIndex = analysis::EventIndex;
  // Null when `cancel` was set meanwhile.
  static std::unique_ptr<LiveIndex> build(const analysis::Model& model, const GraphScene& scene,
                                          const FoldedGraph& folded, const Layout& layout,
                                          const std::atomic<bool>& cancel);

  // The slot's Functions, ascending; a unit's slots, ascending.
  std::span<const uint32_t> functions_of_slot(uint32_t slot) const {
    return {slot_fn_.data() + slot_fn_begin_[slot], slot_fn_.data() + slot_fn_begin_[slot + 1]};
  }
  std::span<const uint32_t> slots_of_unit(uint32_t unit) const {
    return {unit_slot_.data() + unit_slot_begin_[unit], unit_slot_.data() + unit_slot_begin_[unit + 1]};
  }
  bool shown(uint32_t unit, EventIndex e) const;

  // The grid: cell c = y * cols + x covers the unit centres in
  // [origin + (x, y) * cell, + cell); per cell the shown units at e.
  int cols() const { return cols_; }
  int rows() const { return rows_; }
  void count_cells(EventIndex e, std::vector<uint32_t>& out) const;
  // The bounds of the unit centres in cell c (empty: min > max).
  Vec2 cell_min(size_t c) const { return cell_min_[c]; }
  Vec2 cell_max(size_t c) const { return cell_max_[c]; }
  // Bounds of the boxes shown at e, given count_cells(e); false when none.
  bool shown_bounds(EventIndex e, const std::vector<uint32_t>& counts, Vec2* lo, Vec2* hi) const;
  // Note [Graph at a million Functions]: whether a slot (laid out or not)
  // may be live or hold tensor hooks after event a and not after b, or the
  // other way round: some Function is created or released, or some tensor
  // hook comes or goes, in (min, max].
  bool keep_changed(EventIndex a, EventIndex b) const;
  // The (rank, source) pairs with a live Function at e, sorted.
  void live_sources(EventIndex e, std::vector<std::pair<uint16_t, uint32_t>>& out) const;
  // Note [Alarms by intervals]: the laid-out units that may hold a hook of
  // a destroyed owner right after e (every one that does), in the cells
  // with at most kExactAlarms of them; the other cells holding some
  // (`crowded`), whole. A unit is or'ed with kAlarmCheck when it may not
  // hold one after all: the frame checks it.
  static constexpr uint32_t kExactAlarms = 8;
  static constexpr uint32_t kAlarmCheck = 0x80000000u;
  void alarm_units(EventIndex e, std::vector<uint32_t>& units, std::vector<uint32_t>& crowded) const;
  // Of a crowded cell (an index into the alarm cells): its units that may
  // hold one at e, appended to `units` as alarm_units gives them; how many
  // units it has at any event (what that walks).
  void alarm_units_of_cell(uint32_t c, EventIndex e, std::vector<uint32_t>& units) const;
  uint32_t alarm_cell_size(uint32_t c) const { return alarm_cell_unit_[c + 1] - alarm_cell_unit_[c]; }
  // Of a crowded cell (an index into the alarm cells): the bounds of its
  // alarm units' centres, and of their boxes.
  Vec2 alarm_cell_min(uint32_t c) const { return alarm_cell_bounds_[4 * c]; }
  Vec2 alarm_cell_max(uint32_t c) const { return alarm_cell_bounds_[4 * c + 1]; }
  Vec2 alarm_cell_box_min(uint32_t c) const { return alarm_cell_bounds_[4 * c + 2]; }
  Vec2 alarm_cell_box_max(uint32_t c) const { return alarm_cell_bounds_[4 * c + 3]; }
  // Whether what alarm_units gives, or the frame's check of it, may differ
  // between events a and b: an alarm interval, a Function or a tensor hook
  // starts or ends in (min, max].
  bool alarms_changed(EventIndex a, EventIndex b) const;
  // The bytes it holds (capacities), and of them the alarm spans' (Note
  // [Alarms by intervals]).
  size_t memory_bytes() const;
  size_t alarm_memory_bytes() const;

 private:
  // The parts of build(), in order; those that may take long say false when cancelled.
  void index_slots(const analysis::Model& model, const GraphScene& scene, const FoldedGraph& folded);
  bool merge_intervals(const analysis::Model& model, const FoldedGraph& folded, const std::atomic<bool>& cancel);
  void bin_units(const Layout& layout, const FoldedGraph& folded, std::vector<uint32_t>& cell_of);
  bool sort_by_edges(const std::atomic<bool>& cancel);
  void index_sources(const analysis::Model& model);
  bool index_keep_changes(const analysis::Model& model, const std::atomic<bool>& cancel);

  std::vector<uint32_t> slot_fn_begin_, slot_fn_;
  std::vector<uint32_t> unit_slot_begin_, unit_slot_;
  std::vector<uint32_t> unit_iv_begin_;                 // per unit: its merged intervals (CSR)
  std::vector<std::pair<EventIndex, EventIndex>> iv_;  // [from, to)
  int cols_ = 0, rows_ = 0;
  std::vector<uint32_t> cell_begin_;                    // per cell: its intervals' starts and ends
  std::vector<EventIndex> cell_starts_, cell_ends_;     // each sorted within a cell
  std::vector<Vec2> cell_min_, cell_max_;
  std::vector<Vec2> box_min_, box_max_;                 // per unit (layout units)
  std::vector<uint32_t> by_edge_[4];                    // units by left, right, top, bottom edge, outermost first
  std::vector<Vec2> cell_box_min_, cell_box_max_;       // per cell: its boxes' bounds
  std::vector<std::pair<uint16_t, uint32_t>> sources_;  // sorted
  std::vector<EventIndex> keep_changes_;                // sorted, unique
  std::vector<std::vector<EventIndex>> source_starts_, source_ends_;
  // Note [Alarms by intervals] (graph_view_alarms.cpp): per grid cell with
  // any alarm interval (alarm_cells_), its intervals' starts and ends
  // sorted (CSR by alarm_cell_iv_) and its units (CSR by alarm_cell_unit_),
  // each unit's merged intervals (CSR by alarm_unit_iv_).
  // False when cancelled.
  bool index_alarms(const analysis::Model& model, const FoldedGraph& folded, const std::vector<uint32_t>& cell_of,
                    const std::atomic<bool>& cancel);
  bool alarm_intervals(const analysis::Model& model, const FoldedGraph& folded, uint32_t unit,
                       std::vector<std::pair<EventIndex, EventIndex>>& out) const;
  void finish_alarms();
  std::vector<uint32_t> alarm_cells_, alarm_cell_iv_, alarm_cell_unit_;
  std::vector<EventIndex> alarm_starts_, alarm_ends_;
  std::vector<uint32_t> alarm_unit_, alarm_unit_iv_;  // alarm_unit_: | kAlarmCheck
  std::vector<std::pair<EventIndex, EventIndex>> alarm_iv_;  // [from, to)
  std::vector<Vec2> alarm_cell_bounds_;                      // per alarm cell: 4 (see alarm_cell_min)
  std::vector<EventIndex> alarm_changes_;                    // the intervals' ends, sorted, unique
};

}  // namespace hookscope::render
