// The graph's edges: a grid of tiles over the layout so that a frame finds
// the edges in view without walking the live Functions (Note [Frame caches]),
// and their drawing.

#include <algorithm>
#include <cmath>

#include "render/layout/colors.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

namespace {

// An edge whose bounds touch more tiles than this is checked every frame
// rather than listed in each.
constexpr int kMaxTilesPerEdge = 64;
// Live Functions with at most this many next edges are walked, no grid needed.
constexpr size_t kWalkAlways = 4096;

}  // namespace

void GraphView::index_edges() {
  Landed x;
  x.edge_min = std::move(edge_min_);
  x.edge_max = std::move(edge_max_);
  Landed::index_edges(*model_, *scene_, *folded_, *layout_, x);
  take_edge_tables(x);
}

void GraphView::take_edge_tables(Landed& x) {
  edge_min_ = std::move(x.edge_min);
  edge_max_ = std::move(x.edge_max);
  edge_model_begin_ = std::move(x.edge_model_begin);
  edge_model_ = std::move(x.edge_model);
  edge_cols_ = x.edge_cols;
  edge_rows_ = x.edge_rows;
  edge_tile_ = x.edge_tile;
  tile_edge_begin_ = std::move(x.tile_edge_begin);
  tile_edges_ = std::move(x.tile_edges);
  long_edges_ = std::move(x.long_edges);
}

// Any thread: reads t.edge_min / edge_max, fills the rest of the edge tables.
void GraphView::Landed::index_edges(const analysis::Model& model, const GraphScene& scene, const FoldedGraph& fg,
                                    const Layout& l, Landed& t) {
  const size_t m = l.route_begin.size() - 1;
  // The model edges of each layout edge, ascending (edges are sorted by
  // their source Function, so this is the order the live Functions give).
  t.edge_model_begin.assign(m + 1, 0);
  t.edge_model.clear();
  const size_t nf = model.functions().size();
  auto layout_edge = [&](uint32_t e) -> uint32_t {
    const analysis::EdgeInfo& info = model.edges()[e];
    if (info.from >= nf || info.to >= nf) return kNoSlot;
    const uint32_t se = scene.edge_of(e);
    return se == kNoSlot ? kNoSlot : fg.edge_of_scene_edge[se];
  };
  const auto num_model_edges = static_cast<uint32_t>(model.edges().size());
  for (uint32_t e = 0; e < num_model_edges; ++e) {
    const uint32_t le = layout_edge(e);
    if (le < m) ++t.edge_model_begin[le + 1];
  }
  for (size_t i = 0; i < m; ++i) t.edge_model_begin[i + 1] += t.edge_model_begin[i];
  t.edge_model.resize(t.edge_model_begin[m]);
  {
    std::vector<uint32_t> fill(t.edge_model_begin.begin(), t.edge_model_begin.end() - 1);
    for (uint32_t e = 0; e < num_model_edges; ++e) {
      const uint32_t le = layout_edge(e);
      if (le < m) t.edge_model[fill[le]++] = e;
    }
  }
  // Tiles: about four edges each, at most 256 a side.
  const int side = std::clamp(static_cast<int>(std::sqrt(static_cast<double>(m) / 4.0)), 1, 256);
  t.edge_cols = t.edge_rows = side;
  t.edge_tile = {std::max((l.max.x - l.min.x) / static_cast<float>(side), 1e-3f),
                std::max((l.max.y - l.min.y) / static_cast<float>(side), 1e-3f)};
  auto tiles = [&](size_t e, int* x0, int* y0, int* x1, int* y1) {
    auto cx = [&](float x) { return std::clamp(static_cast<int>((x - l.min.x) / t.edge_tile.x), 0, t.edge_cols - 1); };
    auto cy = [&](float y) { return std::clamp(static_cast<int>((y - l.min.y) / t.edge_tile.y), 0, t.edge_rows - 1); };
    *x0 = cx(t.edge_min[e].x), *x1 = cx(t.edge_max[e].x), *y0 = cy(t.edge_min[e].y), *y1 = cy(t.edge_max[e].y);
    return (*x1 - *x0 + 1) * (*y1 - *y0 + 1);
  };
  const size_t num_tiles = static_cast<size_t>(t.edge_cols) * static_cast<size_t>(t.edge_rows);
  t.tile_edge_begin.assign(num_tiles + 1, 0);
  t.long_edges.clear();
  int x0, y0, x1, y1;
  for (size_t e = 0; e < m; ++e) {
    if (l.route_begin[e + 1] - l.route_begin[e] < 4) continue;  // not drawn
    if (tiles(e, &x0, &y0, &x1, &y1) > kMaxTilesPerEdge) {
      t.long_edges.push_back(static_cast<uint32_t>(e));
      continue;
    }
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) ++t.tile_edge_begin[static_cast<size_t>(y) * t.edge_cols + x + 1];
    }
  }
  for (size_t k = 0; k < num_tiles; ++k) t.tile_edge_begin[k + 1] += t.tile_edge_begin[k];
  t.tile_edges.resize(t.tile_edge_begin[num_tiles]);
  std::vector<uint32_t> fill(t.tile_edge_begin.begin(), t.tile_edge_begin.end() - 1);
  for (size_t e = 0; e < m; ++e) {
    if (l.route_begin[e + 1] - l.route_begin[e] < 4) continue;
    if (tiles(e, &x0, &y0, &x1, &y1) > kMaxTilesPerEdge) continue;
    for (int y = y0; y <= y1; ++y) {
      for (int x = x0; x <= x1; ++x) t.tile_edges[fill[static_cast<size_t>(y) * t.edge_cols + x]++] = static_cast<uint32_t>(e);
    }
  }
}

// An edge is drawn while one of its model edges joins two live Functions;
// edges are drawn in the order of their first such model edge, as a walk over
// the live Functions and their next edges would meet them (overlaps look as
// they always did).
void GraphView::draw_edges(Frame& f) {
  const FoldedGraph& fg = *folded_;
  const analysis::Model& model = *model_;
  if (++f.stamp == 0) {
    std::fill(f.edge_stamp.begin(), f.edge_stamp.end(), 0u);
    f.stamp = 1;
  }
  f.edge_order.clear();
  // The edges listed in the tiles in view, or the live Functions' next edges
  // when those are fewer (a view of most of a graph that is mostly not live).
  // Few live edges (a graph growing from nothing, live recording) are walked
  // without building the grid: it costs the whole model's edges per layout.
  // A source that does not list its live Functions (Note [One graph drawing
  // path]) has only the tiles.
  bool walk = f.src->listed() && live_next_edges(f, kWalkAlways) <= kWalkAlways;
  int x0 = 0, x1 = -1, y0 = 0, y1 = -1;
  if (!walk) {
    if (!edges_indexed_) {
      index_edges();
      edges_indexed_ = true;
    }
    const size_t listed = tiles_in_view(f, &x0, &x1, &y0, &y1);
    walk = f.src->listed() && live_next_edges(f, listed) <= listed;
  }
  if (walk) {
    list_walked_edges(f);
  } else {
    list_tiled_edges(f, x0, x1, y0, y1);
  }
  const uint32_t selected_unit =
      selected_function_ < model.functions().size() ? fg.unit_of_node[scene_->slot_of(selected_function_)] : kNone;
  const float thick = std::clamp(1.4f * f.zoom, 1.f, 2.f);
  // Thin plain lines need no anti-aliasing fringe: half the vertices.
  const ImDrawListFlags flags = f.dl->Flags;
  if (f.detail != GraphDetail::kFull) f.dl->Flags &= ~ImDrawListFlags_AntiAliasedLines;
  const float arrow = std::clamp(7.f * f.zoom, 3.f, 9.f);
  for (const auto& [first, le] : f.edge_order) {
    const bool hot = selected_unit != kNone && (static_cast<uint32_t>(fg.graph.edges[le].first) == selected_unit ||
                                                static_cast<uint32_t>(fg.graph.edges[le].second) == selected_unit);
    ++stats_.edges;
    draw_edge(f, le, hot ? palette().edge_selected : palette().edge, hot ? thick * 1.6f : thick, arrow);
  }
  f.dl->Flags = flags;
}

// The live Functions' next edges, counted until more than `cap`.
size_t GraphView::live_next_edges(const Frame& f, size_t cap) const {
  size_t walked = 0;
  for (const analysis::FunctionAt& fa : f.state->functions) {
    const analysis::FunctionInfo& info = model_->functions()[fa.function];
    walked += info.edges_end - info.edges_begin;
    if (walked > cap) break;
  }
  return walked;
}

// The tiles in view (x0..x1, y0..y1) and the edges they and the long edges list.
size_t GraphView::tiles_in_view(const Frame& f, int* x0, int* x1, int* y0, int* y1) const {
  const Layout& l = *layout_;
  size_t listed = long_edges_.size();
  if (edge_cols_ <= 0) return listed;
  auto cx = [&](float x) { return std::clamp(static_cast<int>((x - l.min.x) / edge_tile_.x), 0, edge_cols_ - 1); };
  auto cy = [&](float y) { return std::clamp(static_cast<int>((y - l.min.y) / edge_tile_.y), 0, edge_rows_ - 1); };
  *x0 = cx(f.view_min.x), *x1 = cx(f.view_max.x), *y0 = cy(f.view_min.y), *y1 = cy(f.view_max.y);
  for (int y = *y0; y <= *y1; ++y) {
    const size_t row = static_cast<size_t>(y) * edge_cols_;
    listed += tile_edge_begin_[row + *x1 + 1] - tile_edge_begin_[row + *x0];
  }
  return listed;
}

// The live Functions' next edges to live slots, in view, in the walk's order.
void GraphView::list_walked_edges(Frame& f) {
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  const analysis::Model& model = *model_;
  for (const analysis::FunctionAt& fa : f.state->functions) {
    const analysis::FunctionInfo& info = model.functions()[fa.function];
    for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
      const analysis::FunctionIndex to = model.edges()[e].to;
      if (to >= model.functions().size() || !f.src->function_at(scene_->slot_of(to))) continue;
      const uint32_t se = scene_->edge_of(e);
      const uint32_t le = se == kNoSlot ? kNoSlot : fg.edge_of_scene_edge[se];
      if (le == kNoSlot || f.edge_stamp[le] == f.stamp) continue;
      f.edge_stamp[le] = f.stamp;
      if (l.route_begin[le + 1] - l.route_begin[le] >= 4 && f.visible(edge_min_[le], edge_max_[le])) {
        f.edge_order.push_back({e, le});  // in order already
      }
    }
  }
}

// The edges the tiles in view list and the long ones, each with its first
// model edge between live Functions, sorted by it.
void GraphView::list_tiled_edges(Frame& f, int x0, int x1, int y0, int y1) {
  const analysis::Model& model = *model_;
  const auto now = static_cast<analysis::EventIndex>(f.state->index);
  auto consider = [&](uint32_t le) {
    if (f.edge_stamp[le] == f.stamp) return;
    f.edge_stamp[le] = f.stamp;
    if (!f.visible(edge_min_[le], edge_max_[le])) return;
    for (uint32_t i = edge_model_begin_[le]; i < edge_model_begin_[le + 1]; ++i) {
      const analysis::EdgeInfo& e = model.edges()[edge_model_[i]];
      // Its source live itself (a slot may hold several Functions), its target's slot live.
      const analysis::FunctionInfo& from = model.functions()[e.from];
      if (from.created_at <= now && now < from.released_at && f.src->function_at(scene_->slot_of(e.to))) {
        f.edge_order.push_back({edge_model_[i], le});
        return;
      }
    }
  };
  for (int y = y0; y <= y1; ++y) {
    for (int x = x0; x <= x1; ++x) {
      const size_t t = static_cast<size_t>(y) * edge_cols_ + x;
      for (uint32_t i = tile_edge_begin_[t]; i < tile_edge_begin_[t + 1]; ++i) consider(tile_edges_[i]);
    }
  }
  for (uint32_t le : long_edges_) consider(le);
  std::sort(f.edge_order.begin(), f.edge_order.end());
}

void GraphView::draw_edge(Frame& f, uint32_t le, uint32_t color, float thick, float arrow) {
  const Layout& l = *layout_;
  const uint32_t b = l.route_begin[le], end = l.route_begin[le + 1];
  if (f.detail != GraphDetail::kFull) {  // Note [Graph level of detail]: the joints only
    for (uint32_t i = b; i < end; i += 3) f.dl->PathLineTo(f.to_screen(l.route[i]));
    f.dl->PathStroke(color, 0, 1.f);
    return;
  }
  ImVec2 prev = f.to_screen(l.route[b]);
  f.dl->PathLineTo(prev);
  for (uint32_t i = b + 1; i + 2 < end; i += 3) {
    const ImVec2 c1 = f.to_screen(l.route[i]), c2 = f.to_screen(l.route[i + 1]);
    const ImVec2 p = f.to_screen(l.route[i + 2]);
    const float len = std::abs(p.x - prev.x) + std::abs(p.y - prev.y);
    // Straight pieces (a dummy's band) and tiny ones need no tessellation.
    if (std::abs(p.x - prev.x) < 0.5f || len < 8.f) {
      f.dl->PathLineTo(p);
    } else {
      f.dl->PathBezierCubicCurveTo(c1, c2, p, std::clamp(static_cast<int>(len / 14.f), 3, 14));
    }
    prev = p;
  }
  f.dl->PathStroke(color, 0, thick);
  // Arrowhead at the target, along the last tangent.
  const ImVec2 tip = f.to_screen(l.route[end - 1]), from = f.to_screen(l.route[end - 2]);
  float dx = tip.x - from.x, dy = tip.y - from.y;
  const float n = std::sqrt(dx * dx + dy * dy);
  if (n < 1e-3f) {
    dx = 0.f;
    dy = 1.f;
  } else {
    dx /= n;
    dy /= n;
  }
  f.dl->AddTriangleFilled(tip, {tip.x - dx * arrow - dy * arrow * 0.5f, tip.y - dy * arrow + dx * arrow * 0.5f},
                          {tip.x - dx * arrow + dy * arrow * 0.5f, tip.y - dy * arrow - dx * arrow * 0.5f}, color);
}

}  // namespace hookscope::render
