// The graph drawn from a StateView while a far seek's full State is being
// built (Note [Graph while the state is pending]): the liveness of what a
// frame asks for, the counts and bounds from the LiveIndex.

#include <algorithm>
#include <cmath>
#include <tuple>

#include "render/draw/graph_view.h"
#include "render/draw/graph_view_internal.h"
#include "render/draw/graph_view_live.h"

namespace hookscope::render {

// Note [Graph while the state is pending]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// After a far seek on a big trace the full State comes from a worker a few
// hundred ms later (Note [Lazy seeks in the GUI]), and while playing fast it
// may never catch up; meanwhile the view draws the new event from its
// StateView (Note [Lazy state]). A frame costs what it shows, not the
// Functions: a box in view is worked out when first asked for (its slots'
// Functions live or not, O(1) each; its tensor hooks, O(segments); its hooks
// for chips and tooltip, O(its hooks)), once per event. What needs every
// live box comes from the layout's LiveIndex (Note [Liveness by intervals]),
// built off the UI thread when the layout lands: the count and bounds of the
// live boxes (exact), the minimap and the density cells (from its grid of
// about 16k cells: coarser than the full State's, but of this event), the
// ranks with live Functions (banners), the alarm mark of density cells and
// fit's focus on alarm boxes (Note [Alarms by intervals]) and on a failing
// or lost rank's boxes (the rank's units it shows, walked at that event
// only; focus_region). Left out, never taken from another event: the
// owners' legend (a "state pending" tag instead). The compact
// layout waits for the full State (no re-layout while pending). Until the
// layout's LiveIndex is built the canvas stays empty. Below the lazy
// threshold the full State is always there and none of this runs.
// Note [Graph at a million Functions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With the full State the walk over its live Functions (refresh_liveness)
// costs tens of ms at a million, at every new event: while playing, every
// frame. Above GraphViewOptions::indexed_functions (the app: the lazy
// threshold, Note [Lazy seeks in the GUI]) a frame with the full State
// reads the liveness as a pending one does, once the layout's LiveIndex is
// there (it lands with the layout, Note [Landing a layout off the UI
// thread]): a box in view is worked out when asked for, through a StateView
// at the State's event (its tensor hooks), a live Function's hooks from
// State::find; counts, bounds, minimap and density cells from the
// LiveIndex. Unlike pending, the legend is drawn (the State has the
// owners) and the compact view lays out again when the live set may have
// changed: the LiveIndex lists every event where some slot's keep can
// change (keep_changed), and the layout job works the live slots out from
// the model at its event (keep_at), where the walk compared Frame::keep.
// Alarms (density cells, fit's focus) come from the LiveIndex too (Note
// [Alarms by intervals]), and fit's focus on a failing rank's boxes as while
// pending. Below the threshold nothing of this runs.
GraphViewResult GraphView::draw(const analysis::StateView& view, analysis::FunctionIndex selected_function,
                                analysis::OwnerIndex selected_owner) {
  selected_function_ = selected_function;
  selected_owner_ = selected_owner;
  lazy_view_ = view;
  lazy_state_ = analysis::State{};
  lazy_state_.index = view.index();
  lazy_ = true;
  const GraphViewResult r = draw(lazy_state_);
  lazy_ = false;
  return r;
}

void GraphView::stop_live_index() {
  if (live_cancel_) *live_cancel_ = true;
  if (live_job_.valid()) live_job_.wait();
  live_job_ = {};
  live_cancel_.reset();
  live_index_.reset();
}

const LiveIndex* GraphView::live_index(bool wait) {
  if (!live_index_ && live_job_.valid() &&
      (wait || live_job_.wait_for(std::chrono::seconds(0)) == std::future_status::ready)) {
    live_index_ = live_job_.get();
  }
  return live_index_.get();
}

// The liveness that frames reuse, at a new event while pending: the counts
// and bounds from the index; slots and units are resolved when asked.
void GraphView::refresh_pending(Frame& f) {
  const FoldedGraph& fg = *folded_;
  const analysis::Model& model = *model_;
  const size_t slots = scene_->nodes().size(), units = fg.group_of_unit.size();
  const auto e = static_cast<analysis::EventIndex>(f.view->index());
  if (f.slot_stamp.size() != slots || f.unit_stamp.size() != units || ++f.pending_stamp == 0) {
    f.slot_stamp.assign(slots, 0);
    f.unit_stamp.assign(units, 0);
    f.pending_stamp = 1;
  }
  f.slot_live.resize(slots);
  f.slot_ghost_begin.resize(slots);
  f.slot_ghost_end.resize(slots);
  f.unit_live.resize(units);
  f.unit_ghost.resize(units);
  f.lazy_ghosts.clear();
  f.lazy_ghost_store.clear();
  f.lazy_at.clear();
  f.lazy_filled.clear();
  f.live_units.clear();
  f.ghost_hooks.clear();
  f.live_index->count_cells(e, f.cell_counts);
  f.live_count = 0;
  for (uint32_t n : f.cell_counts) f.live_count += n;
  f.live_min = {INFINITY, INFINITY};
  f.live_max = {-INFINITY, -INFINITY};
  f.live_index->shown_bounds(e, f.cell_counts, &f.live_min, &f.live_max);
  f.set_owner_status(model, static_cast<analysis::EventIndex>(e));
  f.live_sources.clear();
  if (rank_sources_.size() > 1) f.live_index->live_sources(e, f.live_sources);
}

void GraphView::Frame::resolve_slot(uint32_t slot) const {
  if (slot_stamp[slot] == pending_stamp) return;
  slot_stamp[slot] = pending_stamp;
  const analysis::Model& model = *view->model();
  const auto e = static_cast<analysis::EventIndex>(view->index());
  uint32_t live = 0;
  for (uint32_t fn : live_index->functions_of_slot(slot)) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    if (info.created_at <= e && e < info.released_at) live = fn + 1;  // the last, as in state->functions
  }
  slot_live[slot] = live;
  slot_ghost_begin[slot] = slot_ghost_end[slot] = static_cast<uint32_t>(lazy_ghosts.size());
  if (live) return;
  // A hook moves to the tensor when its Function is released (on_tensor
  // segments start there): none on a Function not released yet.
  lazy_scratch2.clear();
  for (uint32_t fn : live_index->functions_of_slot(slot)) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    if (info.released_at > e || model.segments_of(fn).empty()) continue;
    view->tensor_hooks_of(fn, lazy_scratch);
    lazy_scratch2.insert(lazy_scratch2.end(), lazy_scratch.begin(), lazy_scratch.end());
  }
  // As State::tensor_hooks: by since, then hook.
  std::stable_sort(lazy_scratch2.begin(), lazy_scratch2.end(), [](const analysis::HookAt& a, const analysis::HookAt& b) {
    return std::tie(a.since, a.hook) < std::tie(b.since, b.hook);
  });
  for (const analysis::HookAt& h : lazy_scratch2) {
    if (h.function >= model.functions().size()) continue;
    lazy_ghost_store.push_back(h);
    lazy_ghosts.push_back({slot, &lazy_ghost_store.back()});
  }
  slot_ghost_end[slot] = static_cast<uint32_t>(lazy_ghosts.size());
}

void GraphView::Frame::resolve_unit(uint32_t unit) const {
  if (unit_stamp[unit] == pending_stamp) return;
  unit_stamp[unit] = pending_stamp;
  const analysis::Model& model = *view->model();
  const auto e = static_cast<analysis::EventIndex>(view->index());
  uint32_t live = 0;
  bool ghost = false;
  for (uint32_t slot : live_index->slots_of_unit(unit)) {
    resolve_slot(slot);
    if (!slot_live[slot]) {
      ghost = ghost || slot_ghost_end[slot] > slot_ghost_begin[slot];
      continue;
    }
    for (uint32_t fn : live_index->functions_of_slot(slot)) {
      const analysis::FunctionInfo& info = model.functions()[fn];
      live += info.created_at <= e && e < info.released_at;
    }
  }
  unit_live[unit] = live;
  unit_ghost[unit] = !live && ghost;
}

const analysis::FunctionAt& GraphView::Frame::function_at(uint32_t handle) const {
  if (!view) return state->functions[handle];
  if (full) {  // Note [Graph at a million Functions]
    if (const analysis::FunctionAt* fa = state->find(handle)) return *fa;
  }
  auto [it, added] = lazy_filled.try_emplace(handle, 0);
  if (added) {
    lazy_at.emplace_back();
    view->function_at(handle, lazy_at.back());
    it->second = static_cast<uint32_t>(lazy_at.size());
  }
  return lazy_at[it->second - 1];
}

std::span<const std::pair<uint32_t, const analysis::HookAt*>> GraphView::Frame::ghosts_of(uint32_t slot) const {
  if (view) {
    resolve_slot(slot);
    return {lazy_ghosts.data() + slot_ghost_begin[slot], lazy_ghosts.data() + slot_ghost_end[slot]};
  }
  const auto lo = std::lower_bound(ghost_hooks.begin(), ghost_hooks.end(), slot,
                                   [](const auto& p, uint32_t s) { return p.first < s; });
  auto hi = lo;
  while (hi != ghost_hooks.end() && hi->first == slot) ++hi;
  return {ghost_hooks.data() + (lo - ghost_hooks.begin()), ghost_hooks.data() + (hi - ghost_hooks.begin())};
}

// The LiveIndex's grid cells into a grid of `cols` x `rows` cells of `cell`
// pixels, world point w in cell (w - origin) * scale / cell: each non-empty
// grid cell adds its count over the cells its units' centres span (at least
// 1 each), or sets them to 1 (`mark`).
void pending_cells(const GraphView::Frame& f, Vec2 origin, float scale, float cell, int cols, int rows,
                   bool mark, std::vector<uint32_t>& out) {
  const LiveIndex& x = *f.live_index;
  for (size_t k = 0; k < f.cell_counts.size(); ++k) {
    const uint32_t n = f.cell_counts[k];
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

}  // namespace hookscope::render
