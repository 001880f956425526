// What every GraphSource answers alike, and the StateSource: the full
// State walked once per event (Note [One graph drawing path], Note [Frame
// caches]).

#include "render/draw/graph_source.h"

#include <algorithm>
#include <cmath>

#include "analysis/owner_status.h"

namespace hookscope::render {

bool GraphSource::cell_alarm(uint32_t unit) const {
  const FoldedGraph& fg = *s_.folded;
  if (fg.group_of_unit[unit] != kNoGroup) return false;
  const uint32_t slot = fg.node_of_unit[unit];
  if (slot == kNoSlot) return false;
  const analysis::FunctionAt* fa = function_at(slot);
  if (!fa) return false;
  for (const auto& hooks : fa->hooks) {
    for (const analysis::HookAt& h : hooks) {
      if (owner_status(s_.model->hooks()[h.hook].owner)) return true;
    }
  }
  return false;
}

void GraphSource::take_box(uint32_t u, Vec2* lo, Vec2* hi) const {
  const Layout& l = *s_.layout;
  if (u >= l.center.size()) return;  // not in the compact layout
  *lo = {std::min(lo->x, l.center[u].x - l.size[u].x * 0.5f), std::min(lo->y, l.center[u].y - l.size[u].y * 0.5f)};
  *hi = {std::max(hi->x, l.center[u].x + l.size[u].x * 0.5f), std::max(hi->y, l.center[u].y + l.size[u].y * 0.5f)};
}

// Note [Lingering owners]: what analysis says of each owner at e.
void GraphSource::set_owner_status(analysis::EventIndex e) {
  const analysis::Model& model = *s_.model;
  owner_status_.resize(model.owners().size());
  for (size_t o = 0; o < model.owners().size(); ++o) {
    owner_status_[o] = static_cast<uint8_t>(analysis::owner_status(model.owners()[o], e));
  }
}

uint16_t GraphSource::rank_of(uint32_t unit) const {
  const FoldedGraph& fg = *s_.folded;
  const uint32_t g = fg.group_of_unit[unit];
  return g == kNoGroup ? s_.scene->nodes()[fg.node_of_unit[unit]].rank : s_.scene->groups()[g].rank;
}

void StateSource::refresh(const Scene& scene, const analysis::State& state) {
  s_ = scene;
  state_ = &state;
  const FoldedGraph& fg = *s_.folded;
  const analysis::Model& model = *s_.model;
  const size_t slots = s_.scene->nodes().size(), units = fg.group_of_unit.size();
  slot_live_.assign(slots, 0);
  unit_live_.assign(units, 0);
  unit_ghost_.assign(units, 0);
  shown_units_.clear();
  keep_.assign(slots, 0);
  for (size_t i = 0; i < state.functions.size(); ++i) {
    const uint32_t slot = s_.scene->slot_of(state.functions[i].function);
    slot_live_[slot] = static_cast<uint32_t>(i + 1);
    keep_[slot] = 1;
    const uint32_t u = fg.unit_of_node[slot];
    if (u != kNoSlot && unit_live_[u]++ == 0) shown_units_.push_back(u);
  }
  ghost_hooks_.clear();
  for (const analysis::HookAt& h : state.tensor_hooks) {
    if (h.function >= model.functions().size()) continue;
    const uint32_t slot = s_.scene->slot_of(h.function);
    if (slot_live_[slot]) continue;
    ghost_hooks_.push_back({slot, &h});
    keep_[slot] = 1;
    const uint32_t u = fg.unit_of_node[slot];
    if (u != kNoSlot && !unit_live_[u] && !unit_ghost_[u]) {
      unit_ghost_[u] = 1;
      shown_units_.push_back(u);
    }
  }
  std::stable_sort(ghost_hooks_.begin(), ghost_hooks_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  shown_count_ = shown_units_.size();
  set_owner_status(static_cast<analysis::EventIndex>(state.index));
  shown_min_ = {INFINITY, INFINITY};
  shown_max_ = {-INFINITY, -INFINITY};
  for (uint32_t u : shown_units_) take_box(u, &shown_min_, &shown_max_);
  live_sources_.clear();
  if (!s_.ranks) return;
  for (const analysis::FunctionAt& fa : state.functions) {
    const analysis::FunctionInfo& info = model.functions()[fa.function];
    const std::pair<uint16_t, uint32_t> rs{info.rank, info.source};
    if (live_sources_.empty() || live_sources_.back() != rs) live_sources_.push_back(rs);
  }
  std::sort(live_sources_.begin(), live_sources_.end());
  live_sources_.erase(std::unique(live_sources_.begin(), live_sources_.end()), live_sources_.end());
}

std::span<const GraphSource::TensorHook> StateSource::tensor_hooks(uint32_t slot) const {
  const auto lo = std::lower_bound(ghost_hooks_.begin(), ghost_hooks_.end(), slot,
                                   [](const auto& p, uint32_t s) { return p.first < s; });
  auto hi = lo;
  while (hi != ghost_hooks_.end() && hi->first == slot) ++hi;
  return {ghost_hooks_.data() + (lo - ghost_hooks_.begin()), ghost_hooks_.data() + (hi - ghost_hooks_.begin())};
}

// Each shown box's density cell: the cell of its centre on screen.
template <class F>
void StateSource::for_screen_cell(const ScreenGrid& g, F&& f) const {
  const Layout& l = *s_.layout;
  for (uint32_t u : shown_units_) {
    const float px = g.canvas_x + (l.center[u].x - g.view_x) * g.zoom;
    const float py = g.canvas_y + (l.center[u].y - g.view_y) * g.zoom;
    const int x = static_cast<int>((px - g.canvas_x) / g.cell), y = static_cast<int>((py - g.canvas_y) / g.cell);
    if (x < 0 || y < 0 || x >= g.cols || y >= g.rows) continue;
    f(u, static_cast<size_t>(y) * g.cols + x);
  }
}

void StateSource::count_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const {
  for_screen_cell(grid, [&](uint32_t, size_t k) {
    uint32_t& cell = out[k];
    cell = std::min<uint32_t>((cell & 0x7fffffffu) + 1, 0x7fffffffu) | (cell & 0x80000000u);
  });
}

void StateSource::mark_alarm_cells(const ScreenGrid& grid, std::vector<uint32_t>& out) const {
  for_screen_cell(grid, [&](uint32_t u, size_t k) {
    if (!(out[k] & 0x80000000u) && cell_alarm(u)) out[k] |= 0x80000000u;
  });
}

void StateSource::minimap_cells(Vec2 origin, float scale, float cell, int cols, int rows,
                                std::vector<uint32_t>& out) const {
  const Layout& l = *s_.layout;
  for (uint32_t u : shown_units_) {
    const int cx = std::clamp(static_cast<int>((l.center[u].x - origin.x) * scale / cell), 0, cols - 1);
    const int cy = std::clamp(static_cast<int>((l.center[u].y - origin.y) * scale / cell), 0, rows - 1);
    out[static_cast<size_t>(cy) * cols + cx] = 1;
  }
}

void StateSource::take_rank_boxes(uint16_t rank, Vec2* lo, Vec2* hi) const {
  for (uint32_t u : shown_units_) {
    if (rank_of(u) == rank) take_box(u, lo, hi);
  }
}

void StateSource::alarm_boxes(const AlarmRule& is_alarm, Vec2* lo, Vec2* hi) const {
  for (uint32_t u : shown_units_) {
    if (is_alarm(u)) take_box(u, lo, hi);
  }
}

}  // namespace hookscope::render
