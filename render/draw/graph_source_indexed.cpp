// The IndexedSource (Note [One graph drawing path]): the event drawn from a
// StateView and the layout's LiveIndex, what a frame asks worked out when
// first asked (Note [Graph while the state is pending], Note [Graph at a
// million Functions], Note [Alarms by intervals]).

#include <algorithm>
#include <cmath>
#include <tuple>

#include "render/draw/graph_source.h"
#include "render/draw/graph_view_live.h"

namespace hookscope::render {

// The counts and bounds from the index; slots and units are resolved when asked.
void IndexedSource::refresh(const Scene& scene, const analysis::StateView& view, const LiveIndex& index,
                            const analysis::State* state) {
  s_ = scene;
  view_ = &view;
  index_ = &index;
  state_ = state;
  const size_t slots = s_.scene->nodes().size(), units = s_.folded->group_of_unit.size();
  const analysis::EventIndex e = event();
  if (slot_stamp_.size() != slots || unit_stamp_.size() != units || ++stamp_ == 0) {
    slot_stamp_.assign(slots, 0);
    unit_stamp_.assign(units, 0);
    stamp_ = 1;
  }
  slot_live_.resize(slots);
  slot_ghost_begin_.resize(slots);
  slot_ghost_end_.resize(slots);
  unit_live_.resize(units);
  unit_ghost_.resize(units);
  ghosts_.clear();
  ghost_store_.clear();
  at_.clear();
  filled_.clear();
  index.count_cells(e, cell_counts_);
  shown_count_ = 0;
  for (uint32_t n : cell_counts_) shown_count_ += n;
  shown_min_ = {INFINITY, INFINITY};
  shown_max_ = {-INFINITY, -INFINITY};
  index.shown_bounds(e, cell_counts_, &shown_min_, &shown_max_);
  set_owner_status(e);
  live_sources_.clear();
  if (s_.ranks) index.live_sources(e, live_sources_);
}

void IndexedSource::resolve_slot(uint32_t slot) const {
  if (slot_stamp_[slot] == stamp_) return;
  slot_stamp_[slot] = stamp_;
  const analysis::Model& model = *s_.model;
  const analysis::EventIndex e = event();
  uint32_t live = 0;
  for (uint32_t fn : index_->functions_of_slot(slot)) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    if (info.created_at <= e && e < info.released_at) live = fn + 1;  // the last, as in State::functions
  }
  slot_live_[slot] = live;
  slot_ghost_begin_[slot] = slot_ghost_end_[slot] = static_cast<uint32_t>(ghosts_.size());
  if (live) return;
  // A hook moves to the tensor when its Function is released (on_tensor
  // segments start there): none on a Function not released yet.
  scratch2_.clear();
  for (uint32_t fn : index_->functions_of_slot(slot)) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    if (info.released_at > e || model.segments_of(fn).empty()) continue;
    view_->tensor_hooks_of(fn, scratch_);
    scratch2_.insert(scratch2_.end(), scratch_.begin(), scratch_.end());
  }
  // As State::tensor_hooks: by since, then hook.
  std::stable_sort(scratch2_.begin(), scratch2_.end(), [](const analysis::HookAt& a, const analysis::HookAt& b) {
    return std::tie(a.since, a.hook) < std::tie(b.since, b.hook);
  });
  for (const analysis::HookAt& h : scratch2_) {
    if (h.function >= model.functions().size()) continue;
    ghost_store_.push_back(h);
    ghosts_.push_back({slot, &ghost_store_.back()});
  }
  slot_ghost_end_[slot] = static_cast<uint32_t>(ghosts_.size());
}

void IndexedSource::resolve_unit(uint32_t unit) const {
  if (unit_stamp_[unit] == stamp_) return;
  unit_stamp_[unit] = stamp_;
  const analysis::Model& model = *s_.model;
  const analysis::EventIndex e = event();
  uint32_t live = 0;
  bool ghost = false;
  for (uint32_t slot : index_->slots_of_unit(unit)) {
    resolve_slot(slot);
    if (!slot_live_[slot]) {
      ghost = ghost || slot_ghost_end_[slot] > slot_ghost_begin_[slot];
      continue;
    }
    for (uint32_t fn : index_->functions_of_slot(slot)) {
      const analysis::FunctionInfo& info = model.functions()[fn];
      live += info.created_at <= e && e < info.released_at;
    }
  }
  unit_live_[unit] = live;
  unit_ghost_[unit] = !live && ghost;
}

bool IndexedSource::shown(uint32_t unit) const {
  resolve_unit(unit);
  return unit_live_[unit] > 0 || unit_ghost_[unit];
}

uint32_t IndexedSource::live_in(uint32_t unit) const {
  resolve_unit(unit);
  return unit_live_[unit];
}

// The live Function's hooks at the event: the full State's when there is
// one (Note [Graph at a million Functions]), else from the view (O(its
// hooks) the first time).
const analysis::FunctionAt* IndexedSource::function_at(uint32_t slot) const {
  resolve_slot(slot);
  if (!slot_live_[slot]) return nullptr;
  const analysis::FunctionIndex fn = slot_live_[slot] - 1;
  if (state_) {
    if (const analysis::FunctionAt* fa = state_->find(fn)) return fa;
  }
  auto [it, added] = filled_.try_emplace(fn, 0);
  if (added) {
    at_.emplace_back();
    view_->function_at(fn, at_.back());
    it->second = static_cast<uint32_t>(at_.size());
  }
  return &at_[it->second - 1];
}

std::span<const GraphSource::TensorHook> IndexedSource::tensor_hooks(uint32_t slot) const {
  resolve_slot(slot);
  return {ghosts_.data() + slot_ghost_begin_[slot], ghosts_.data() + slot_ghost_end_[slot]};
}

// The LiveIndex's grid cells into a grid of `cols` x `rows` cells of `cell`
// pixels, world point w in cell (w - origin) * scale / cell: each non-empty
// grid cell adds its count over the cells its units' centres span (at least
// 1 each), or sets them to 1 (`mark`).
void IndexedSource::index_cells(Vec2 origin, float scale, float cell, int cols, int rows, bool mark,
                                std::vector<uint32_t>& out) const {
  const LiveIndex& x = *index_;
  for (size_t k = 0; k < cell_counts_.size(); ++k) {
    const uint32_t n = cell_counts_[k];
    if (!n) continue;
    const Vec2 a = x.cell_min(k), b = x.cell_max(k);
    const int x0 = static_cast<int>(std::floor((a.x - origin.x) * scale / cell));
    const int y0 = static_cast<int>(std::floor((a.y - origin.y) * scale / cell));
    const int x1 = static_cast<int>(std::floor((b.x - origin.x) * scale / cell));
    const int y1 = static_cast<int>(std::floor((b.y - origin.y) * scale / cell));
    if (x1 < 0 || y1 < 0 || x0 >= cols || y0 >= rows) continue;
    const uint32_t span = static_cast<uint32_t>(x1 - x0 + 1) * static_cast<uint32_t>(y1 - y0 + 1);
    const uint32_t each = mark ? 1u : std::max(1u, n / span);
    for (int y = std::max(y0, 0); y <= std::min(y1, rows - 1); ++y) {
      for (int c = std::max(x0, 0); c <= std::min(x1, cols - 1); ++c) {
        uint32_t& v = out[static_cast<size_t>(y) * cols + c];
        v = mark ? 1u : std::min<uint32_t>(v + each, 0x7fffffffu);
      }
    }
  }
}

void IndexedSource::count_cells(const ScreenGrid& g, std::vector<uint32_t>& out) const {
  index_cells({g.view_x, g.view_y}, g.zoom, g.cell, g.cols, g.rows, false, out);
}

void IndexedSource::minimap_cells(Vec2 origin, float scale, float cell, int cols, int rows,
                                  std::vector<uint32_t>& out) const {
  index_cells(origin, scale, cell, cols, rows, true, out);
}

// A failing or lost rank's boxes: there is no list of the shown ones, so
// the rank's units the LiveIndex shows at this event, a walk of the units
// (fit asks at an incident only).
void IndexedSource::take_rank_boxes(uint16_t rank, Vec2* lo, Vec2* hi) const {
  const analysis::EventIndex at = event();
  const auto units = static_cast<uint32_t>(std::min(s_.folded->group_of_unit.size(), s_.layout->center.size()));
  for (uint32_t u = 0; u < units; ++u) {
    if (rank_of(u) == rank && index_->shown(u, at)) take_box(u, lo, hi);
  }
}

// Note [Graph at a million Functions]: the LiveIndex lists every event where
// a slot's keep may change; while pending the compact layout waits for the
// full State.
bool IndexedSource::live_set_changed(const std::vector<uint8_t>&, analysis::EventIndex keep_at,
                                     analysis::EventIndex now) const {
  return state_ && index_->keep_changed(keep_at, now);
}

}  // namespace hookscope::render
