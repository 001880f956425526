#pragma once
// What the graph's draw code asks of the event drawn (Note [One graph
// drawing path]): which boxes are shown, each box's live Function and hooks,
// and, of every shown box, their count, bounds and cells. Internal to the
// graph view (render/draw).

#include <cstdint>
#include <deque>
#include <span>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"

namespace hookscope::render {

class LiveIndex;  // graph_view_live.h

// Note [One graph drawing path]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The graph is drawn by one path whatever the State at hand: the draw code
// (boxes, chips, tooltips, edges, density cells, minimap, fit) asks a
// GraphSource, never which kind it is. Two implement it:
//   StateSource    the full State, walked once per event (Note [Frame
//                  caches]): every answer is a table lookup, and it lists its
//                  live Functions and shown units (listed()).
//   IndexedSource  a StateView and the layout's LiveIndex, for the event of
//                  a State still being built (Note [Graph while the state is
//                  pending]) or of a full State too big to walk per event
//                  (Note [Graph at a million Functions]). It is lazy: a box's
//                  liveness, its Function's hooks and its tensor hooks are
//                  worked out the first time a frame asks, once per event, so
//                  that a frame costs the boxes in view; the count, bounds and
//                  cells of every shown box come from the LiveIndex. Its
//                  caches (stamped per event) live inside it: the draw code
//                  sees const answers.
// A handle the draw code holds means one thing: a slot, a unit (a box of the
// folded graph), a FunctionIndex. What the sources cannot both give is
// named as what it is: listed() (the walk over the live Functions: edges, the
// off-canvas note), keep() (the live slots the compact layout packs).
// GraphView::draw picks the source, the one place that knows there are two.
class GraphSource {
 public:
  struct Scene {  // what a source reads besides the event (GraphView's; outlive the frame)
    const analysis::Model* model = nullptr;
    const GraphScene* scene = nullptr;
    const FoldedGraph* folded = nullptr;
    const Layout* layout = nullptr;
    bool ranks = false;  // several (rank, source) pairs: live_sources() is wanted
    uint64_t generation = 0;  // GraphView::generation_: bumped by every new scene or layout
  };
  using TensorHook = std::pair<uint32_t, const analysis::HookAt*>;  // (slot, hook)

  virtual ~GraphSource() = default;

  // ---- a box ----
  // Shown: a live Function in the unit, or a leaf's hooks on its tensor.
  virtual bool shown(uint32_t unit) const = 0;
  virtual uint32_t live_in(uint32_t unit) const = 0;  // live Functions in the unit
  // The slot's live Function at the event with its hooks; null when none is live.
  virtual const analysis::FunctionAt* function_at(uint32_t slot) const = 0;
  // A leaf's hooks that live on its tensor (no live Function in the slot), by since then hook.
  virtual std::span<const TensorHook> tensor_hooks(uint32_t slot) const = 0;
  // Per owner: analysis::OwnerStatus at the event (0 alive; else an alarm).
  uint8_t owner_status(analysis::OwnerIndex o) const { return o < owner_status_.size() ? owner_status_[o] : 0; }
  // The density cells' alarm rule: a box of one Function whose live Function
  // holds a hook of a destroyed or lingering owner (Note [Alarms by intervals]).
  bool cell_alarm(uint32_t unit) const;

  // ---- every shown box ----
  size_t shown_count() const { return shown_count_; }
  Vec2 shown_min() const { return shown_min_; }  // their bounds (empty: min > max)
  Vec2 shown_max() const { return shown_max_; }
  // (rank, source) pairs with a live Function, sorted (when Scene::ranks).
  const std::vector<std::pair<uint16_t, uint32_t>>& live_sources() const { return live_sources_; }
  // The density cells (GraphView::draw_cells): per box shown, the cell of
  // its centre on screen, `grid` cells of `cell` px from `canvas_min`, counts
  // (bit 31 kept); then the alarm bit on the cells of alarm boxes.
  struct ScreenGrid {
    float canvas_x = 0.f, canvas_y = 0.f, view_x = 0.f, view_y = 0.f, zoom = 1.f, cell = 1.f;
    int cols = 0, rows = 0;
  };
  virtual void count_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const = 0;
  virtual void mark_alarm_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const = 0;
  // The minimap's cells: 1 where a shown box is, world point w in cell
  // (w - origin) * scale / cell.
  virtual void minimap_cells(Vec2 origin, float scale, float cell, int cols, int rows,
                             std::vector<uint32_t>& out) const = 0;
  // Fit's focus (GraphView::focus_region): the bounds of the shown boxes of
  // `rank`, and of the alarm boxes by `is_alarm` (Note [Alarms by intervals]), into lo, hi.
  virtual void take_rank_boxes(uint16_t rank, Vec2* lo, Vec2* hi) const = 0;
  template <class IsAlarm>
  void take_alarm_boxes(const IsAlarm& is_alarm, Vec2* lo, Vec2* hi) const {
    alarm_boxes(AlarmRule{&is_alarm, [](const void* p, uint32_t u) { return (*static_cast<const IsAlarm*>(p))(u); }},
                lo, hi);
  }

  // ---- what only the walk over the full State gives ----
  // True when the source lists the live Functions and the shown units (the
  // edge walk, the off-canvas note use them); false: only counted.
  virtual bool listed() const = 0;
  virtual std::span<const uint32_t> shown_units() const = 0;  // listed(): every shown unit
  // Note [Compact boxes]: per slot, live or holding tensor hooks (listed()), else null.
  virtual const std::vector<uint8_t>* keep() const = 0;
  // Whether the compact layout of the live set at `keep_at` (`layout_keep`)
  // is out of date at `now` (never while the State is pending).
  virtual bool live_set_changed(const std::vector<uint8_t>& layout_keep, analysis::EventIndex keep_at,
                                analysis::EventIndex now) const = 0;

 protected:
  struct AlarmRule {
    const void* data;
    bool (*call)(const void*, uint32_t);
    bool operator()(uint32_t u) const { return call(data, u); }
  };
  virtual void alarm_boxes(const AlarmRule& is_alarm, Vec2* lo, Vec2* hi) const = 0;
  // The box of unit u into lo, hi (not in the compact layout: nothing).
  void take_box(uint32_t u, Vec2* lo, Vec2* hi) const;
  void set_owner_status(analysis::EventIndex e);
  uint16_t rank_of(uint32_t unit) const;

  Scene s_;
  std::vector<uint8_t> owner_status_;
  size_t shown_count_ = 0;
  Vec2 shown_min_{0.f, 0.f}, shown_max_{0.f, 0.f};
  std::vector<std::pair<uint16_t, uint32_t>> live_sources_;
};

// The full State, walked once per event (Note [Frame caches]).
class StateSource final : public GraphSource {
 public:
  // At `state`'s event: O(live Functions + tensor hooks).
  void refresh(const Scene& scene, const analysis::State& state);

  bool shown(uint32_t unit) const override { return unit_live_[unit] > 0 || unit_ghost_[unit]; }
  uint32_t live_in(uint32_t unit) const override { return unit_live_[unit]; }
  const analysis::FunctionAt* function_at(uint32_t slot) const override {
    return slot_live_[slot] ? &state_->functions[slot_live_[slot] - 1] : nullptr;
  }
  std::span<const TensorHook> tensor_hooks(uint32_t slot) const override;
  void count_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const override;
  void mark_alarm_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const override;
  void minimap_cells(Vec2 origin, float scale, float cell, int cols, int rows,
                     std::vector<uint32_t>& out) const override;
  void take_rank_boxes(uint16_t rank, Vec2* lo, Vec2* hi) const override;
  bool listed() const override { return true; }
  std::span<const uint32_t> shown_units() const override { return shown_units_; }
  const std::vector<uint8_t>* keep() const override { return &keep_; }
  bool live_set_changed(const std::vector<uint8_t>& layout_keep, analysis::EventIndex,
                        analysis::EventIndex) const override {
    return keep_ != layout_keep;
  }

 private:
  void alarm_boxes(const AlarmRule& is_alarm, Vec2* lo, Vec2* hi) const override;
  template <class F>
  void for_screen_cell(const ScreenGrid& g, F&& f) const;

  const analysis::State* state_ = nullptr;
  std::vector<uint32_t> slot_live_;   // per slot: 1 + its live Function's place in state_->functions, or 0
  std::vector<uint32_t> unit_live_;   // per unit: its live Functions
  std::vector<uint8_t> unit_ghost_;   // per unit: tensor hooks and no live Function
  std::vector<uint32_t> shown_units_;
  std::vector<TensorHook> ghost_hooks_;  // sorted by slot
  std::vector<uint8_t> keep_;            // per slot: live or holding tensor hooks
};

// A StateView and the layout's LiveIndex, lazily (Note [One graph drawing
// path]); graph_source_indexed.cpp.
class IndexedSource final : public GraphSource {
 public:
  // At `view`'s event. `state`: the full State at that event (Note [Graph at
  // a million Functions]: a live Function's hooks from it), or null while
  // it is pending (Note [Graph while the state is pending]).
  void refresh(const Scene& scene, const analysis::StateView& view, const LiveIndex& index,
               const analysis::State* state);

  bool shown(uint32_t unit) const override;
  uint32_t live_in(uint32_t unit) const override;
  const analysis::FunctionAt* function_at(uint32_t slot) const override;
  std::span<const TensorHook> tensor_hooks(uint32_t slot) const override;
  void count_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const override;
  void mark_alarm_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const override;
  void minimap_cells(Vec2 origin, float scale, float cell, int cols, int rows,
                     std::vector<uint32_t>& out) const override;
  void take_rank_boxes(uint16_t rank, Vec2* lo, Vec2* hi) const override;
  bool listed() const override { return false; }
  std::span<const uint32_t> shown_units() const override { return {}; }
  const std::vector<uint8_t>* keep() const override { return nullptr; }
  bool live_set_changed(const std::vector<uint8_t>& layout_keep, analysis::EventIndex keep_at,
                        analysis::EventIndex now) const override;

 private:
  void alarm_boxes(const AlarmRule& is_alarm, Vec2* lo, Vec2* hi) const override;
  void resolve_slot(uint32_t slot) const;
  void resolve_unit(uint32_t unit) const;
  void resolve_alarms() const;
  // The LiveIndex's grid cells spread over a grid of `cols` x `rows` cells
  // of `cell` px: counts, or 1 each (`mark`).
  void index_cells(Vec2 origin, float scale, float cell, int cols, int rows, bool mark,
                   std::vector<uint32_t>& out) const;
  analysis::EventIndex event() const { return static_cast<analysis::EventIndex>(view_->index()); }

  const analysis::StateView* view_ = nullptr;
  const LiveIndex* index_ = nullptr;
  const analysis::State* state_ = nullptr;  // null while pending
  std::vector<uint32_t> cell_counts_;      // LiveIndex::count_cells at the event
  // Filled when first asked at this event (stamp == stamp_): the draw code
  // asks through const answers, so these are mutable.
  uint32_t stamp_ = 0;
  mutable std::vector<uint32_t> slot_stamp_, unit_stamp_;
  mutable std::vector<uint32_t> slot_live_;  // per slot: 1 + its live FunctionIndex, or 0
  mutable std::vector<uint32_t> unit_live_;
  mutable std::vector<uint8_t> unit_ghost_;
  mutable std::vector<uint32_t> slot_ghost_begin_, slot_ghost_end_;  // into ghosts_, per resolved slot
  mutable std::vector<TensorHook> ghosts_;
  mutable std::deque<analysis::HookAt> ghost_store_;  // stable references
  mutable std::vector<analysis::HookAt> scratch_, scratch2_;
  mutable std::unordered_map<uint32_t, uint32_t> filled_;  // FunctionIndex -> 1 + its place in at_
  mutable std::deque<analysis::FunctionAt> at_;            // from the view (stable references)
  // Note [Alarms by intervals]: LiveIndex::alarm_units at alarms_at_, kept
  // while no alarm can have changed.
  mutable std::vector<uint32_t> alarm_units_, alarm_crowded_, alarm_scratch_;
  mutable analysis::EventIndex alarms_at_ = analysis::kNever;
  mutable const LiveIndex* alarms_index_ = nullptr;
  mutable uint64_t alarms_generation_ = 0;
};

}  // namespace hookscope::render
