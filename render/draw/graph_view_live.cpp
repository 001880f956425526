// Which boxes are live at the event drawn: GraphView::refresh_liveness
// (Note [Frame caches]) and the LiveIndex (Note [Liveness by intervals]).

#include "render/draw/graph_view_live.h"

#include <algorithm>
#include <cmath>

#include "render/draw/graph_source.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

namespace {

constexpr size_t kCells = 16384;    // about; square cells over the layout
constexpr size_t kEdgeWalk = 1024;  // units walked per edge before the cells' bounds stand in

size_t count_until(const analysis::EventIndex* begin, const analysis::EventIndex* end, analysis::EventIndex e) {
  return static_cast<size_t>(std::upper_bound(begin, end, e) - begin);
}

}  // namespace

// Note [Frame caches]
// ~~~~~~~~~~~~~~~~~~~
// A frame's cost must follow the pixels, not the Functions: at a million
// Functions a walk over every live one costs tens of ms. What depends only on
// the state and the layout (which slots and units are live, their bounds,
// the owners destroyed, the ranks' live processes) is computed when the
// event, the scene or the layout changes and reused by every frame until
// then; the density cells and the minimap's are recomputed only when, in
// addition, the view moves. Edges in view come from a grid of tiles over the
// layout (graph_edges.cpp) when the tiles in view list fewer edges than the
// live Functions have, else from a walk over the live Functions, as before.
// The event's own facts (the hook firing, the box running) are per frame.
// What is still O(live Functions), below GraphViewOptions::indexed_functions:
// a new event (the State itself is) and, zoomed out to cells, a moved view;
// above it, Note [Graph at a million Functions]. While the full State is pending (Note
// [Graph while the state is pending]) a new event costs what is in view:
// the liveness of a box is worked out when a frame asks, the counts from
// the LiveIndex. Both are a GraphSource refreshed here (Note [One graph
// drawing path]); what a frame asks, it asks the source.
void GraphView::refresh_liveness(Frame& f, const analysis::State& state, const Pick& pick) {
  f.src = pick.view ? static_cast<const GraphSource*>(indexed_source_.get()) : state_source_.get();
  const Frame::LiveKey key{generation_, &state, pick.view, pick.index, state.index, state.functions.size(),
                          state.tensor_hooks.size()};
  if (f.live_stamp != 0 && key == f.live_key) return;
  f.live_key = key;
  ++f.live_stamp;
  const GraphSource::Scene scene{model_, scene_.get(), folded_.get(), layout_.get(), rank_sources_.size() > 1,
                                 generation_};
  if (pick.view) {
    indexed_source_->refresh(scene, *pick.view, *pick.index, pick.pending ? nullptr : &state);
  } else {
    state_source_->refresh(scene, state);
  }
}

std::unique_ptr<LiveIndex> LiveIndex::build(const analysis::Model& model, const GraphScene& scene,
                                            const FoldedGraph& fg, const Layout& l,
                                            const std::atomic<bool>& cancel) {
  auto index = std::make_unique<LiveIndex>();
  LiveIndex& x = *index;
  x.index_slots(model, scene, fg);
  if (cancel || !x.merge_intervals(model, fg, cancel)) return nullptr;
  std::vector<uint32_t> cell_of;
  x.bin_units(l, fg, cell_of);
  if (cancel || !x.index_alarms(model, fg, cell_of, cancel)) return nullptr;  // Note [Alarms by intervals]
  if (!x.sort_by_edges(cancel)) return nullptr;
  x.index_sources(model);
  if (!x.index_keep_changes(model, cancel)) return nullptr;
  return index;
}

void LiveIndex::index_slots(const analysis::Model& model, const GraphScene& scene, const FoldedGraph& fg) {
  const size_t slots = scene.nodes().size(), nf = model.functions().size();
  const size_t units = fg.group_of_unit.size();
  // Functions by slot, units' slots: CSR by counting.
  slot_fn_begin_.assign(slots + 1, 0);
  for (size_t fn = 0; fn < nf; ++fn) ++slot_fn_begin_[scene.slot_of(static_cast<uint32_t>(fn)) + 1];
  for (size_t s = 0; s < slots; ++s) slot_fn_begin_[s + 1] += slot_fn_begin_[s];
  slot_fn_.resize(nf);
  {
    std::vector<uint32_t> at(slot_fn_begin_.begin(), slot_fn_begin_.end() - 1);
    for (size_t fn = 0; fn < nf; ++fn) slot_fn_[at[scene.slot_of(static_cast<uint32_t>(fn))]++] = static_cast<uint32_t>(fn);
  }
  unit_slot_begin_.assign(units + 1, 0);
  for (size_t s = 0; s < slots; ++s) {
    if (fg.unit_of_node[s] < units) ++unit_slot_begin_[fg.unit_of_node[s] + 1];
  }
  for (size_t u = 0; u < units; ++u) unit_slot_begin_[u + 1] += unit_slot_begin_[u];
  unit_slot_.resize(unit_slot_begin_[units]);
  {
    std::vector<uint32_t> at(unit_slot_begin_.begin(), unit_slot_begin_.end() - 1);
    for (size_t s = 0; s < slots; ++s) {
      if (fg.unit_of_node[s] < units) unit_slot_[at[fg.unit_of_node[s]]++] = static_cast<uint32_t>(s);
    }
  }
}

// Per unit: its Functions' live intervals and their tensors' hook
// intervals, merged. False when cancelled.
bool LiveIndex::merge_intervals(const analysis::Model& model, const FoldedGraph& fg, const std::atomic<bool>& cancel) {
  const size_t nf = model.functions().size(), units = fg.group_of_unit.size();
  unit_iv_begin_.assign(units + 1, 0);
  iv_.reserve(nf);
  std::vector<std::pair<EventIndex, EventIndex>> scratch;
  for (size_t u = 0; u < units; ++u) {
    if ((u & 0xffff) == 0 && cancel) return false;
    scratch.clear();
    for (uint32_t s : slots_of_unit(static_cast<uint32_t>(u))) {
      for (uint32_t fn : functions_of_slot(s)) {
        const analysis::FunctionInfo& info = model.functions()[fn];
        if (info.created_at < info.released_at) scratch.push_back({info.created_at, info.released_at});
        if (info.released_at == analysis::kNever) continue;
        for (uint32_t seg : model.segments_of(fn)) {
          const analysis::HookSegment& hs = model.segments()[seg];
          const EventIndex from = std::max(hs.from, info.released_at);
          if (hs.on_tensor && from < hs.to) scratch.push_back({from, hs.to});
        }
      }
    }
    std::sort(scratch.begin(), scratch.end());
    for (const auto& iv : scratch) {
      if (iv_.size() > unit_iv_begin_[u] && iv.first <= iv_.back().second) {
        iv_.back().second = std::max(iv_.back().second, iv.second);
      } else {
        iv_.push_back(iv);
      }
    }
    unit_iv_begin_[u + 1] = static_cast<uint32_t>(iv_.size());
  }
  return true;
}

// The grid over the layout's units, square cells: each laid-out unit's cell into cell_of.
void LiveIndex::bin_units(const Layout& l, const FoldedGraph& fg, std::vector<uint32_t>& cell_of) {
  const size_t units = fg.group_of_unit.size();
  const size_t laid = std::min(units, l.center.size());
  const float w = std::max(l.max.x - l.min.x, 1.f), h = std::max(l.max.y - l.min.y, 1.f);
  const float side = std::sqrt(w * h / static_cast<float>(kCells));
  cols_ = std::clamp(static_cast<int>(std::ceil(w / side)), 1, 4096);
  rows_ = std::clamp(static_cast<int>(std::ceil(h / side)), 1, 4096);
  const size_t cells = static_cast<size_t>(cols_) * static_cast<size_t>(rows_);
  cell_of.assign(laid, 0);
  box_min_.resize(laid);
  box_max_.resize(laid);
  cell_min_.assign(cells, {INFINITY, INFINITY});
  cell_max_.assign(cells, {-INFINITY, -INFINITY});
  cell_box_min_.assign(cells, {INFINITY, INFINITY});
  cell_box_max_.assign(cells, {-INFINITY, -INFINITY});
  std::vector<uint32_t> per_cell(cells + 1, 0);
  for (size_t u = 0; u < laid; ++u) {
    const Vec2 c = l.center[u], s = l.size[u];
    const int cx = std::clamp(static_cast<int>((c.x - l.min.x) / w * static_cast<float>(cols_)), 0, cols_ - 1);
    const int cy = std::clamp(static_cast<int>((c.y - l.min.y) / h * static_cast<float>(rows_)), 0, rows_ - 1);
    const size_t k = static_cast<size_t>(cy) * cols_ + cx;
    cell_of[u] = static_cast<uint32_t>(k);
    box_min_[u] = {c.x - s.x * 0.5f, c.y - s.y * 0.5f};
    box_max_[u] = {c.x + s.x * 0.5f, c.y + s.y * 0.5f};
    cell_min_[k] = {std::min(cell_min_[k].x, c.x), std::min(cell_min_[k].y, c.y)};
    cell_max_[k] = {std::max(cell_max_[k].x, c.x), std::max(cell_max_[k].y, c.y)};
    cell_box_min_[k] = {std::min(cell_box_min_[k].x, box_min_[u].x), std::min(cell_box_min_[k].y, box_min_[u].y)};
    cell_box_max_[k] = {std::max(cell_box_max_[k].x, box_max_[u].x), std::max(cell_box_max_[k].y, box_max_[u].y)};
    per_cell[k + 1] += unit_iv_begin_[u + 1] - unit_iv_begin_[u];
  }
  for (size_t k = 0; k < cells; ++k) per_cell[k + 1] += per_cell[k];
  cell_begin_ = per_cell;
  cell_starts_.resize(per_cell[cells]);
  cell_ends_.resize(per_cell[cells]);
  for (size_t u = 0; u < laid; ++u) {
    for (uint32_t i = unit_iv_begin_[u]; i < unit_iv_begin_[u + 1]; ++i) {
      const uint32_t at = per_cell[cell_of[u]]++;
      cell_starts_[at] = iv_[i].first;
      cell_ends_[at] = iv_[i].second;
    }
  }
  for (size_t k = 0; k < cells; ++k) {
    std::sort(cell_starts_.begin() + cell_begin_[k], cell_starts_.begin() + cell_begin_[k + 1]);
    std::sort(cell_ends_.begin() + cell_begin_[k], cell_ends_.begin() + cell_begin_[k + 1]);
  }
}

// Units by each edge of their box, outermost first. False when cancelled.
bool LiveIndex::sort_by_edges(const std::atomic<bool>& cancel) {
  const size_t laid = box_min_.size();
  for (int side_k = 0; side_k < 4; ++side_k) {
    std::vector<uint32_t>& order = by_edge_[side_k];
    order.resize(laid);
    for (size_t u = 0; u < laid; ++u) order[u] = static_cast<uint32_t>(u);
    auto key = [&](uint32_t u) {
      switch (side_k) {
        case 0: return box_min_[u].x;
        case 1: return -box_max_[u].x;
        case 2: return box_min_[u].y;
        default: return -box_max_[u].y;
      }
    };
    std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return key(a) < key(b); });
    if (cancel) return false;
  }
  return true;
}

// Live Functions per (rank, source), for the ranks' banners.
void LiveIndex::index_sources(const analysis::Model& model) {
  const size_t nf = model.functions().size();
  for (size_t fn = 0; fn < nf; ++fn) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    const std::pair<uint16_t, uint32_t> rs{info.rank, info.source};
    auto it = std::lower_bound(sources_.begin(), sources_.end(), rs);
    const size_t k = static_cast<size_t>(it - sources_.begin());
    if (it == sources_.end() || *it != rs) {
      sources_.insert(it, rs);
      source_starts_.insert(source_starts_.begin() + static_cast<long>(k), std::vector<EventIndex>());
      source_ends_.insert(source_ends_.begin() + static_cast<long>(k), std::vector<EventIndex>());
    }
    if (info.created_at < info.released_at) {
      source_starts_[k].push_back(info.created_at);
      source_ends_[k].push_back(info.released_at);
    }
  }
  for (auto& v : source_starts_) std::sort(v.begin(), v.end());
  for (auto& v : source_ends_) std::sort(v.begin(), v.end());
}

// Note [Graph at a million Functions]: every event where a slot's keep may change.
bool LiveIndex::index_keep_changes(const analysis::Model& model, const std::atomic<bool>& cancel) {
  const size_t nf = model.functions().size();
  for (size_t fn = 0; fn < nf; ++fn) {
    const analysis::FunctionInfo& info = model.functions()[fn];
    keep_changes_.push_back(info.created_at);
    if (info.released_at != analysis::kNever) keep_changes_.push_back(info.released_at);
    for (uint32_t seg : model.segments_of(static_cast<uint32_t>(fn))) {
      const analysis::HookSegment& hs = model.segments()[seg];
      if (!hs.on_tensor) continue;
      keep_changes_.push_back(hs.from);
      if (hs.to != analysis::kNever) keep_changes_.push_back(hs.to);
    }
  }
  if (cancel) return false;
  std::sort(keep_changes_.begin(), keep_changes_.end());
  keep_changes_.erase(std::unique(keep_changes_.begin(), keep_changes_.end()), keep_changes_.end());
  keep_changes_.shrink_to_fit();
  return true;
}

namespace {

template <class T>
size_t bytes_of(const std::vector<T>& v) {
  return v.capacity() * sizeof(T);
}

}  // namespace

size_t LiveIndex::alarm_memory_bytes() const {
  return bytes_of(alarm_cells_) + bytes_of(alarm_cell_iv_) + bytes_of(alarm_cell_unit_) + bytes_of(alarm_starts_) +
         bytes_of(alarm_ends_) + bytes_of(alarm_unit_) + bytes_of(alarm_unit_iv_) + bytes_of(alarm_iv_) +
         bytes_of(alarm_cell_bounds_) + bytes_of(alarm_changes_);
}

size_t LiveIndex::memory_bytes() const {
  size_t n = sizeof(LiveIndex) + bytes_of(slot_fn_begin_) + bytes_of(slot_fn_) + bytes_of(unit_slot_begin_) +
             bytes_of(unit_slot_) + bytes_of(unit_iv_begin_) + bytes_of(iv_) + bytes_of(cell_begin_) +
             bytes_of(cell_starts_) + bytes_of(cell_ends_) + bytes_of(cell_min_) + bytes_of(cell_max_) +
             bytes_of(box_min_) + bytes_of(box_max_) + bytes_of(cell_box_min_) + bytes_of(cell_box_max_) +
             bytes_of(sources_) + bytes_of(keep_changes_) + bytes_of(source_starts_) + bytes_of(source_ends_);
  for (const auto& v : by_edge_) n += bytes_of(v);
  for (const auto& v : source_starts_) n += bytes_of(v);
  for (const auto& v : source_ends_) n += bytes_of(v);
  return n + alarm_memory_bytes();
}

bool LiveIndex::keep_changed(EventIndex a, EventIndex b) const {
  if (a == analysis::kNever || b == analysis::kNever) return a != b;
  if (a > b) std::swap(a, b);
  // A change at event c shows right after c: one in (a, b].
  const auto it = std::upper_bound(keep_changes_.begin(), keep_changes_.end(), a);
  return it != keep_changes_.end() && *it <= b;
}

std::vector<uint8_t> keep_at(const analysis::Model& model, const GraphScene& scene, analysis::EventIndex e) {
  std::vector<uint8_t> keep(scene.nodes().size(), 0);
  const size_t nf = model.functions().size();
  for (size_t fn = 0; fn < nf; ++fn) {
    const auto f = static_cast<analysis::FunctionIndex>(fn);
    const analysis::FunctionInfo& info = model.functions()[fn];
    if (info.created_at <= e && e < info.released_at) keep[scene.slot_of(f)] = 1;
    for (uint32_t seg : model.segments_of(f)) {  // as State::tensor_hooks: by the hook's function
      const analysis::HookSegment& hs = model.segments()[seg];
      if (hs.on_tensor && hs.from <= e && e < hs.to && hs.function < nf) keep[scene.slot_of(hs.function)] = 1;
    }
  }
  return keep;
}

bool LiveIndex::shown(uint32_t unit, EventIndex e) const {
  const auto* begin = iv_.data() + unit_iv_begin_[unit];
  const auto* end = iv_.data() + unit_iv_begin_[unit + 1];
  // The last interval starting at or before e.
  const auto* it = std::upper_bound(begin, end, e, [](EventIndex v, const auto& iv) { return v < iv.first; });
  return it != begin && e < (it - 1)->second;
}

void LiveIndex::count_cells(EventIndex e, std::vector<uint32_t>& out) const {
  const size_t cells = cell_begin_.size() - 1;
  out.resize(cells);
  for (size_t k = 0; k < cells; ++k) {
    const uint32_t b = cell_begin_[k], n = cell_begin_[k + 1];
    if (b == n) {
      out[k] = 0;
      continue;
    }
    const EventIndex* starts = cell_starts_.data();
    const EventIndex* ends = cell_ends_.data();
    if (e < starts[b] || e >= ends[n - 1]) {  // before every interval, after every one
      out[k] = 0;
    } else if (e >= starts[n - 1] && e < ends[b]) {  // inside every one (a graph built, kept)
      out[k] = n - b;
    } else {
      out[k] = static_cast<uint32_t>(count_until(starts + b, starts + n, e) - count_until(ends + b, ends + n, e));
    }
  }
}

bool LiveIndex::shown_bounds(EventIndex e, const std::vector<uint32_t>& counts, Vec2* lo, Vec2* hi) const {
  if (std::none_of(counts.begin(), counts.end(), [](uint32_t n) { return n > 0; })) return false;
  float edge[4] = {NAN, NAN, NAN, NAN};  // left, right, top, bottom; NAN: not found within the cap
  for (int side = 0; side < 4; ++side) {
    const std::vector<uint32_t>& order = by_edge_[side];
    for (size_t i = 0; i < order.size() && i < kEdgeWalk; ++i) {
      const uint32_t u = order[i];
      if (!shown(u, e)) continue;
      edge[side] = side == 0 ? box_min_[u].x : side == 1 ? box_max_[u].x : side == 2 ? box_min_[u].y : box_max_[u].y;
      break;
    }
  }
  if (std::isnan(edge[0]) || std::isnan(edge[1]) || std::isnan(edge[2]) || std::isnan(edge[3])) {
    // Past the cap: the non-empty cells' bounds stand in (a little larger).
    Vec2 clo{INFINITY, INFINITY}, chi{-INFINITY, -INFINITY};
    for (size_t k = 0; k < counts.size(); ++k) {
      if (!counts[k]) continue;
      clo = {std::min(clo.x, cell_box_min_[k].x), std::min(clo.y, cell_box_min_[k].y)};
      chi = {std::max(chi.x, cell_box_max_[k].x), std::max(chi.y, cell_box_max_[k].y)};
    }
    const float coarse[4] = {clo.x, chi.x, clo.y, chi.y};
    for (int side = 0; side < 4; ++side) {
      if (std::isnan(edge[side])) edge[side] = coarse[side];
    }
  }
  *lo = {edge[0], edge[2]};
  *hi = {edge[1], edge[3]};
  return true;
}

void LiveIndex::live_sources(EventIndex e, std::vector<std::pair<uint16_t, uint32_t>>& out) const {
  out.clear();
  for (size_t k = 0; k < sources_.size(); ++k) {
    const auto& s = source_starts_[k];
    const auto& t = source_ends_[k];
    if (count_until(s.data(), s.data() + s.size(), e) > count_until(t.data(), t.data() + t.size(), e)) {
      out.push_back(sources_[k]);
    }
  }
}

}  // namespace hookscope::render
