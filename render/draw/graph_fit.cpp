// Fitting the graph to the canvas readably (Note [Readable text]), compact
// boxes (Note [Compact boxes]) and the minimap in its own column (Note
// [Graph canvas]).

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "render/layout/colors.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

namespace {

// The box of the function the current event is about (a hook removed from
// it, else running or firing), when it is laid out: what fit keeps on the
// canvas first (Note [Fit shows every rank]) and stepping follows.
bool current_box(const Layout& l, const FoldedGraph& fg, const GraphScene& scene, analysis::FunctionIndex removing,
                 analysis::FunctionIndex running, size_t num_functions, Vec2* lo, Vec2* hi) {
  const analysis::FunctionIndex fn = removing < num_functions ? removing : running;
  if (fn >= num_functions) return false;
  const uint32_t slot = scene.slot_of(fn);
  if (slot >= fg.unit_of_node.size()) return false;
  const uint32_t u = fg.unit_of_node[slot];
  if (u >= l.center.size()) return false;
  *lo = {l.center[u].x - l.size[u].x * 0.5f, l.center[u].y - l.size[u].y * 0.5f};
  *hi = {l.center[u].x + l.size[u].x * 0.5f, l.center[u].y + l.size[u].y * 0.5f};
  return true;
}

// The rank column (of `columns`: min, max) holding the focus, the focus
// widened to it on each axis where it fits the view; nullptr: none holds it.
template <class Columns>
const typename Columns::value_type* widen_to_column(const Columns& columns, float view_w, float view_h, Vec2* flo,
                                                     Vec2* fhi) {
  if (flo->x > fhi->x || flo->y > fhi->y) return nullptr;  // an empty focus
  for (const auto& r : columns) {
    if (flo->x < r.min.x - 0.5f || fhi->x > r.max.x + 0.5f || flo->y < r.min.y - 0.5f || fhi->y > r.max.y + 0.5f) {
      continue;
    }
    if (r.max.y - r.min.y <= view_h) flo->y = r.min.y, fhi->y = r.max.y;
    if (r.max.x - r.min.x > view_w) return nullptr;
    flo->x = r.min.x, fhi->x = r.max.x;
    return &r;
  }
  return nullptr;
}

// The view's x centre `cx` (the view `half` wide each side), moved so that no
// column is partly on the canvas (its boxes cut by the edge): `focus`
// left-aligned (`pad` from the edge), or right-aligned, whichever leaves
// every column wholly in or out; else `cx`.
template <class Columns>
float clear_of_columns(const Columns& columns, const typename Columns::value_type& focus, float cx, float half,
                       float pad) {
  auto cut = [&](float c) {
    return std::any_of(columns.begin(), columns.end(), [&](const auto& r) {
      return r.max.x > c - half && r.min.x < c + half && (r.min.x < c - half || r.max.x > c + half);
    });
  };
  if (!cut(cx)) return cx;
  for (const float c : {focus.min.x - pad + half, focus.max.x + pad - half}) {
    if (!cut(c)) return c;
  }
  return cx;
}

}  // namespace

// Note [Compact boxes]
// ~~~~~~~~~~~~~~~~~~~~~
// When fit cannot show every live box with its text at min_text_px or more
// (Note [Readable text]), the view switches to the compact view (the
// toolbar's "Compact" too): one line per box (a leaf's parameter, else the
// Function's name, then its chips, chip text as large as the title), and
// only the Functions live at the current event are laid out: released ones
// do not keep their slots (GraphScene::fold's `keep`), so the live ones are
// not scattered over a canvas sized for every step. Each time the live set
// changes, the view lays it out again (one job at a time; the frames in
// between draw the last layout's live boxes), packs it to the canvas's shape
// (Note [Packed ranks]), and fits again unless the user panned or zoomed.
// What stays too big to fit readably (a 2,000-Function graph) is shown at
// the readable zoom around what matters (focus_region), with the minimap.
//
// Its sizes (compact_metrics, compact_layout_options) are as small as stays
// legible at that zoom (10 px text): 3 units of pad in a box and a chip, 2
// between chips, 4 between the title and the chips, 8 between boxes (a
// stacked column's edge lane runs 4 from it), 16 between ranks (their
// captions say where one ends), a 6 px margin at fit; post hooks' chips
// untagged (Note [Untagged post hooks]). With them and the columns pulled
// narrow (Note [Narrow columns]) recovery-none after two rebuilds (44 live
// boxes, rank 1 holding three copies of each parameter) is 1044 units wide,
// 696 px at 10 px text, where the 1280x800 window's graph panel has 789 px
// (tests/app/test_fit.cpp); it was 1458 units, then 1147, before.
void GraphView::set_compact(bool compact) {
  auto_compact_ = false;
  switch_metrics(compact);
}

void GraphView::switch_metrics(bool compact) {
  if (metrics_.compact == compact) return;
  metrics_ = compact ? compact_metrics(options_.metrics) : options_.metrics;
  if (compact && !keep_from_index_) {  // the live slots of the last frame walked (all before one)
    layout_keep_ = *state_source_->keep();
    layout_keep_at_ = layout_keep_.empty() ? analysis::kNever : drawn_at_;
  }
  // Positions of the other box shape mean nothing for this one: from scratch, then fit.
  std::fill(node_layer_.begin(), node_layer_.end(), -1);
  std::fill(group_layer_.begin(), group_layer_.end(), -1);
  layer_height_.clear();
  fit_on_layout_ = true;
  start_layout(false);
}

void GraphView::chip_row(uint32_t unit, float* left, float* right, float* top) const {
  const Layout& l = *layout_;
  const BoxMetrics& m = metrics_;
  const Vec2 c = l.center[unit], s = l.size[unit];
  *left = c.x - s.x * 0.5f + m.pad;
  *right = c.x + s.x * 0.5f - m.pad;
  *top = c.y + s.y * 0.5f - m.pad - m.chip_height;
  if (m.compact) {  // after the title, on its line
    const Frame& f = *frame_;
    const uint32_t slot = folded_->node_of_unit[unit];
    const analysis::FunctionAt* fa = f.src && slot < scene_->nodes().size() ? f.src->function_at(slot) : nullptr;
    const std::string title = scene_->unit_compact_title(*folded_, unit, fa && f.state ? fa->function : analysis::kNoIndex,
                                                         f.state ? f.state->index : analysis::kNever);
    *left += text_width(m.line_height, title.c_str()) + m.kind_gap;
    *top = c.y - m.chip_height * 0.5f;
  }
}
void GraphView::focus(analysis::FunctionIndex function) { focus_pending_ = function; }
void GraphView::select_function(analysis::FunctionIndex function) { selected_function_ = function; }
void GraphView::select_owner(analysis::OwnerIndex owner) { selected_owner_ = owner; }


// Note [Readable text]: fit shows every live box when that keeps the
// smallest text (chip tags) at min_text_px or more; otherwise it zooms to
// that size and centres on what matters (focus_region): the view scrolls,
// the minimap shows where it is.
void GraphView::fit_now(const Frame& f) {
  const Layout& l = *layout_;
  // The live boxes' bounds (the source's, whichever it is).
  Vec2 lo = f.src->shown_min(), hi = f.src->shown_max();
  if (f.src->shown_count() == 0) {
    lo = l.min;
    hi = l.max;
  }
  // The content's width without the minimap column (everything fits), and with it.
  const float full_w = std::max(f.panel_max.x - f.panel_min.x, 1.f);
  const bool can_map = options_.minimap && minimap_open_ && full_w > 3.f * options_.minimap_width;
  float w = full_w;
  const float h = std::max(f.canvas_max.y - f.canvas_min.y, 1.f);
  const float margin = metrics_.compact ? 6.f : 16.f;
  minimap_needed_ = false;
  minimap_cap_ = INFINITY;
  at_fit_ = true;
  zoom_ = std::min((w - 2 * margin) / std::max(hi.x - lo.x, 1.f),
                   (h - 2 * margin) / std::max(hi.y - lo.y, 1.f));
  zoom_ = std::clamp(zoom_, 1e-6f, 1.5f);
  center_ = {(lo.x + hi.x) * 0.5f, (lo.y + hi.y) * 0.5f};
  const float readable = options_.min_text_px / chip_font(metrics_);
  if (zoom_ >= readable || f.src->shown_count() == 0) return;
  if (!metrics_.compact && auto_compact_) {  // Note [Compact boxes]: one-line boxes, then fit again
    switch_metrics(true);
    return;
  }
  zoom_ = readable;
  if (can_map) {
    // Too tall to fit (Note [Fit shows every rank]): the ranks' columns side
    // by side first, the minimap as narrow as that needs.
    minimap_cap_ = full_w - 16.f - ((hi.x - lo.x) * zoom_ + 2.f * margin);
    w = full_w - minimap_column(f) - 16.f;
    minimap_needed_ = true;
  }
  Vec2 flo, fhi;
  stats_.fit_on_alarms = focus_region(f, &flo, &fhi);
  // Alarm boxes all over a graph that does not fit: the current event's box
  // first (Note [Fit shows every rank]); the toolbar names what is off.
  const float view_w = (w - 2.f * margin) / zoom_, view_h = (h - 2.f * margin) / zoom_;
  const size_t nf = model_->functions().size();
  if (fhi.x - flo.x > view_w || fhi.y - flo.y > view_h) {
    Vec2 clo, chi;
    if (current_box(l, *folded_, *scene_, f.removing, f.running, nf, &clo, &chi)) {
      flo = clo;
      fhi = chi;
      stats_.fit_on_alarms = false;
    }
  }
  // The focus's rank column whole where it fits, not sliced at the canvas's
  // edge (a half pane of the Compare view cut its columns mid-box): the
  // others are named off the canvas as ever.
  const auto* whole = widen_to_column(rank_bounds_, view_w, view_h, &flo, &fhi);
  stats_.fit_focus = {flo.x, flo.y, fhi.x, fhi.y};
  // Per axis: all of it when it fits, else the focus, kept inside the live bounds.
  auto axis = [&](float a, float b, float fa, float fb, float extent) {
    const float view = extent / zoom_ - 2.f * margin / zoom_;
    if (b - a <= view) return (a + b) * 0.5f;
    // An empty focus (its box is not in the compact layout) is +inf..-inf,
    // whose middle is NaN: a NaN centre crashed ImGui's AddRect (the fuzzer).
    const float c = fa <= fb ? (fa + fb) * 0.5f : (a + b) * 0.5f;
    return std::clamp(c, a + view * 0.5f, b - view * 0.5f);
  };
  center_ = {axis(lo.x, hi.x, flo.x, fhi.x, w), axis(lo.y, hi.y, flo.y, fhi.y, h)};
  if (whole) center_.x = clear_of_columns(rank_bounds_, *whole, center_.x, w * 0.5f / zoom_, margin / zoom_);
}

// Note [The view follows the current event]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Stepping (keys, the timeline, Play) or a new layout landing, when the
// current event's box (the Function running, firing or losing a hook) is
// not wholly in view, the view scrolls just enough to bring it in, a
// margin from the edge, zoom unchanged: as RenderDoc and Tracy scroll to
// the selected item. An event about no box (a collective, a Reducer built)
// moves nothing. Never in a frame where the user drags or zooms the view:
// that frame's event counts as seen, so releasing the mouse does not jump;
// nor after set_view() (the caller chose the view: an export, a sync); nor
// in a frame that fits (open, Fit, a new compact layout): fit chose what
// to show (Note [Fit shows every rank]), the current box when nothing else
// matters, and every way of drawing an event fits alike.
// A user who panned away on purpose and then steps is followed: stepping
// asks "show me this event"; Fit goes back to the whole. The scroll
// is no pan by hand: a view at fit stays at fit (a new compact layout fits
// again, Note [Compact boxes]).
void GraphView::follow_current(Frame& f, bool by_hand) {
  // While a layout is pending the last one is drawn: the box is followed
  // there, and again where the new one puts it once it lands.
  const bool view_set = std::exchange(view_set_, false);
  if (followed_at_ == drawn_at_ && followed_generation_ == generation_) return;
  followed_at_ = drawn_at_;
  followed_generation_ = generation_;
  const size_t nf = model_->functions().size();
  Vec2 lo, hi;
  if (by_hand || view_set || stats_.fit || !current_box(*layout_, *folded_, *scene_, f.removing, f.running, nf, &lo, &hi)) {
    return;
  }
  const float pad = (metrics_.compact ? 6.f : 16.f) / zoom_;
  const float half_w = (f.canvas_max.x - f.canvas_min.x) * 0.5f / zoom_;
  const float half_h = (f.canvas_max.y - f.canvas_min.y) * 0.5f / zoom_;
  // Per axis, the least move that puts [a, b] inside the view (its start
  // first when it is larger than the view).
  auto least = [pad](float c, float half, float a, float b) {
    if (b - a > 2.f * (half - pad)) return a - pad + half;
    if (a < c - half + pad) return a - pad + half;
    if (b > c + half - pad) return b + pad - half;
    return c;
  };
  center_ = {least(center_.x, half_w, lo.x, hi.x), least(center_.y, half_h, lo.y, hi.y)};
}

// Note [Fit shows every rank]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// At open and on Fit every rank's live boxes are on the canvas, text at
// min_text_px or more (Note [Readable text], Note [Compact boxes]). When
// they cannot all be at that size, fit shows what matters (focus_region) and
// the toolbar names what is off the canvas, per rank and which way to
// scroll for it, rather than shrinking text: "off canvas: 12 of rank 0's 38
// boxes (5 above, 7 below)". The note is measured after the boxes are
// drawn, so it is true of the picture, panned or not.
//
// A graph too tall for the canvas at that size (a transformer's backward,
// 120 boxes deep per rank) is fitted by width: the ranks' columns side by
// side inside the canvas (the minimap's column made as narrow as that
// needs, down to 48 px), the vertical position on what matters, the
// current event's box when nothing else does (focus_region).
void GraphView::note_off_canvas(const Frame& f) {
  off_canvas_.clear();
  stats_.off_canvas.clear();
  stats_.focus_on_canvas = true;
  // Counted by the LiveIndex (pending, indexed): no list of the live boxes to measure.
  if (!layout_ || !f.src->listed() || f.src->shown_count() == 0) return;
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  auto inside = [&](Vec2 lo, Vec2 hi) {
    const ImVec2 a = f.to_screen(lo), b = f.to_screen(hi);
    return a.x >= f.canvas_min.x - 0.5f && a.y >= f.canvas_min.y - 0.5f && b.x <= f.canvas_max.x + 0.5f &&
           b.y <= f.canvas_max.y + 0.5f;
  };
  struct Off {
    uint16_t rank;
    uint32_t live = 0, above = 0, below = 0, beside = 0;
  };
  std::vector<Off> ranks;
  for (uint32_t u : f.src->shown_units()) {
    if (u >= l.center.size()) continue;
    const uint32_t g = fg.group_of_unit[u];
    const uint16_t rank = g == kNoGroup ? scene_->nodes()[fg.node_of_unit[u]].rank : scene_->groups()[g].rank;
    auto it = std::find_if(ranks.begin(), ranks.end(), [&](const Off& r) { return r.rank == rank; });
    if (it == ranks.end()) it = ranks.insert(ranks.end(), Off{rank});
    ++it->live;
    const Vec2 c = l.center[u], s = l.size[u];
    const Vec2 lo{c.x - s.x * 0.5f, c.y - s.y * 0.5f}, hi{c.x + s.x * 0.5f, c.y + s.y * 0.5f};
    if (inside(lo, hi)) continue;
    // Which way to scroll for it: up, down, else sideways.
    const float top = f.to_screen(lo).y, bottom = f.to_screen(hi).y;
    if (top < f.canvas_min.y - 0.5f) {
      ++it->above;
    } else if (bottom > f.canvas_max.y + 0.5f) {
      ++it->below;
    } else {
      ++it->beside;
    }
  }
  std::sort(ranks.begin(), ranks.end(), [](const Off& a, const Off& b) { return a.rank < b.rank; });
  uint32_t off = 0;
  for (const Off& r : ranks) {
    const uint32_t n = r.above + r.below + r.beside;
    if (n == 0) continue;
    off += n;
    std::string where;
    for (const auto& [count, side] : {std::pair(r.above, "above"), std::pair(r.below, "below"), std::pair(r.beside, "beside")}) {
      if (count) where += fmt::format("{}{} {}", where.empty() ? "" : ", ", count, side);
    }
    off_canvas_ += off_canvas_.empty() ? "off canvas: " : "; ";
    off_canvas_ += n == r.live ? fmt::format("rank {} ({} box{}: {})", r.rank, n, n == 1 ? "" : "es", where)
                               : fmt::format("{} of rank {}'s {} boxes ({})", n, r.rank, r.live, where);
  }
  stats_.off_canvas = off_canvas_;
  // The short form for a narrow toolbar, after a newline (draw_off_canvas_note).
  if (off > 0) off_canvas_ += fmt::format("\n{} box{} off canvas", off, off == 1 ? "" : "es");
  // What matters: the current event's box, else the middle of fit's focus.
  Vec2 lo, hi;
  const size_t nf = model_->functions().size();
  if (current_box(l, fg, *scene_, f.removing, f.running, nf, &lo, &hi)) {
    stats_.focus_on_canvas = inside(lo, hi);
    const ImVec2 a = f.to_screen(lo), b = f.to_screen(hi);
    stats_.has_current = true;
    stats_.current = {a.x, a.y, b.x, b.y};
  } else {
    focus_region(f, &lo, &hi);
    const Vec2 mid{(lo.x + hi.x) * 0.5f, (lo.y + hi.y) * 0.5f};
    if (std::isfinite(mid.x)) stats_.focus_on_canvas = inside(mid, mid);
  }
}

// The note goes after the legend's last entry, in the room left on that
// line, in full or short ("16 boxes off canvas", the full one in its
// tooltip), or not at all: it never adds a toolbar line, which would move
// the canvas under a fit made for it.
void draw_off_canvas_note(const std::string& note, bool minimap) {
  if (note.empty()) return;
  const size_t cut = note.find('\n');
  const std::string full = note.substr(0, cut), brief = cut == std::string::npos ? full : note.substr(cut + 1);
  constexpr float kGap = 14.f;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float room = right - ImGui::GetItemRectMax().x - kGap;
  const std::string& text = ImGui::CalcTextSize(full.c_str()).x <= room ? full : brief;
  if (ImGui::CalcTextSize(text.c_str()).x > room) return;
  ImGui::SameLine(0.f, kGap);
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().text_dim), "%s", text.c_str());
  if (ImGui::IsItemHovered()) {
    // (A view with no minimap, such as a Compare half, is only dragged.)
    ImGui::SetTooltip("%s\nNot every live box fits on the canvas with text of 10 px or more: drag to pan%s.",
                      full.c_str(), minimap ? ", or click the minimap" : "");
  }
}

// The minimap's column: as wide as the layout's shape needs at the panel's
// height, up to minimap_width, and no wider than leaves the ranks' columns
// room at fit (minimap_cap_). A deep, narrow graph (a million Functions in
// layers) gets a narrow column, not a wide empty one beside a sliver.
float GraphView::minimap_column(const Frame& f) const {
  constexpr float kNarrowest = 48.f;
  const float widest = options_.minimap_width;
  if (!layout_) return widest;
  const Layout& l = *layout_;
  const float h = std::max(f.panel_max.y - f.panel_min.y - f.header_h - 16.f, 1.f);
  const float need = std::max(l.max.x - l.min.x, 1.f) * h / std::max(l.max.y - l.min.y, 1.f);
  // The cap is fit's: once the view is panned or zoomed, the picture depends
  // on the view alone, not on the fit before it.
  return std::clamp(std::min(need, at_fit_ ? minimap_cap_ : INFINITY), std::min(kNarrowest, widest), widest);
}

bool GraphView::minimap_rect(const Frame& f, float* x0, float* y0, float* x1, float* y1, float* scale) const {
  if (!layout_ || f.canvas_max.x >= f.panel_max.x - 1.f) return false;
  const Layout& l = *layout_;
  const float w = minimap_column(f), h = f.panel_max.y - f.canvas_min.y - 16.f;
  *scale = std::min(w / std::max(l.max.x - l.min.x, 1.f), h / std::max(l.max.y - l.min.y, 1.f));
  *x1 = f.panel_max.x - 8.f;
  *y0 = f.canvas_min.y + 8.f;
  *x0 = *x1 - (l.max.x - l.min.x) * *scale;
  *y1 = *y0 + (l.max.y - l.min.y) * *scale;
  return true;
}

void GraphView::draw_minimap(Frame& f) {
  const Layout& l = *layout_;
  float x0, y0, x1, y1, scale;
  if (!minimap_rect(f, &x0, &y0, &x1, &y1, &scale)) return;
  const ImVec2 mm_min{x0, y0}, mm_max{x1, y1};
  stats_.minimap = {x0 - 4.f, y0 - 4.f, x1 + 4.f, y1 + 4.f};
  // The minimap's column is not canvas (boxes are clipped at its edge, so the
  // minimap never hides one): shade it and draw its edge, so a box cut there
  // reads as "continues to the right", not as a drawing fault.
  const ImU32 shade = (palette().minimap & ~IM_COL32_A_MASK) | (IM_COL32(0, 0, 0, 140) & IM_COL32_A_MASK);
  f.dl->AddRectFilled({f.canvas_max.x, f.canvas_min.y}, f.panel_max, shade);
  f.dl->AddLine({f.canvas_max.x, f.canvas_min.y}, {f.canvas_max.x, f.panel_max.y}, palette().box_border, 1.f);
  f.dl->AddRectFilled({mm_min.x - 4, mm_min.y - 4}, {mm_max.x + 4, mm_max.y + 4}, palette().minimap, 3.f);
  f.dl->AddRect({mm_min.x - 4, mm_min.y - 4}, {mm_max.x + 4, mm_max.y + 4}, palette().box_border, 3.f);
  // Live boxes as 2 px cells: the vertex count is bounded by the minimap's area.
  constexpr float kCell = 2.f;
  const int cols = std::max(1, static_cast<int>((mm_max.x - mm_min.x) / kCell) + 1);
  const int rows = std::max(1, static_cast<int>((mm_max.y - mm_min.y) / kCell) + 1);
  std::vector<uint32_t>& cells = f.minimap_cells;
  // Note [Frame caches]: the cells change with the live boxes and the minimap's place.
  const Frame::CellsKey key{f.live_stamp, x0, y0, x1, y1, scale, 0.f, 0.f};
  if (!(key == f.minimap_key) || cells.size() != static_cast<size_t>(cols) * static_cast<size_t>(rows)) {
    f.minimap_key = key;
    cells.assign(static_cast<size_t>(cols) * static_cast<size_t>(rows), 0);
    f.src->minimap_cells(l.min, scale, kCell, cols, rows, cells);
  }
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < cols; ++x) {
      if (!cells[static_cast<size_t>(y) * cols + x]) continue;
      const ImVec2 a{mm_min.x + x * kCell, mm_min.y + y * kCell};
      f.dl->AddRectFilled(a, {a.x + kCell, a.y + kCell}, palette().text_dim);
    }
  }
  const ImVec2 va{mm_min.x + (f.view_min.x - l.min.x) * scale, mm_min.y + (f.view_min.y - l.min.y) * scale};
  const ImVec2 vb{mm_min.x + (f.view_max.x - l.min.x) * scale, mm_min.y + (f.view_max.y - l.min.y) * scale};
  f.dl->PushClipRect({mm_min.x - 4, mm_min.y - 4}, {mm_max.x + 4, mm_max.y + 4}, true);
  f.dl->AddRect(va, vb, palette().selected, 0.f, 0, 1.5f);
  f.dl->PopClipRect();
}

}  // namespace hookscope::render
