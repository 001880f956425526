// The graph view's frame: the toolbar and canvas, pan / zoom / fit input,
// hit testing, the fold menu. Layout jobs are in graph_view_layout.cpp, the
// liveness of units in graph_view_live.cpp, the frame drawn while the state
// is pending in graph_view_pending.cpp, drawing in graph_draw.cpp.

#include "render/draw/graph_view.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <tuple>

#include "render/layout/colors.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

using analysis::kNoIndex;

GraphView::GraphView(GraphViewOptions options)
    : options_(options),
      metrics_(options.metrics),
      frame_(std::make_unique<Frame>()),
      state_source_(std::make_unique<StateSource>()),
      indexed_source_(std::make_unique<IndexedSource>()) {}

GraphView::~GraphView() {
  stop_live_index();
  wait_for_box_sizes();
}

bool GraphView::box_on_screen(analysis::FunctionIndex function, Vec2* min, Vec2* max) const {
  if (!layout_ || !model_ || function >= model_->functions().size()) return false;
  const Frame& f = *frame_;
  if (f.zoom <= 0.f) return false;
  const uint32_t u = folded_->unit_of_node[scene_->slot_of(function)];
  if (u == kNoSlot) return false;  // not in the compact layout
  const Vec2 c = layout_->center[u], s = layout_->size[u];
  const ImVec2 a = f.to_screen({c.x - s.x * 0.5f, c.y - s.y * 0.5f});
  const ImVec2 b = f.to_screen({c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  *min = {a.x, a.y};
  *max = {b.x, b.y};
  return b.x >= f.canvas_min.x && a.x <= f.canvas_max.x && b.y >= f.canvas_min.y && a.y <= f.canvas_max.y;
}

void GraphView::visible_rect(Vec2* min, Vec2* max) const {
  *min = frame_->view_min;
  *max = frame_->view_max;
}

void GraphView::fit() { fit_pending_ = true; }

void GraphView::set_view(Vec2 center, float zoom) {
  center_ = center;
  zoom_ = zoom;
  fit_pending_ = false;
  at_fit_ = false;
  view_set_ = true;  // Note [The view follows the current event]
}


// Note [Graph canvas]
// ~~~~~~~~~~~~~~~~~~~
// The canvas is cut into parts that never overlap: a header strip on top
// (rank captions, and the banner of a rank that failed, was lost or was
// rebuilt), the content where boxes are drawn, and a column on the right for
// the minimap, reserved only while the view does not show everything (and
// the user has not closed it). Nothing is drawn over a box but the tags of
// the current event ("stale fire", "hook removed"), in the gap above it.
GraphViewResult GraphView::draw(const analysis::State& state, analysis::FunctionIndex selected_function,
                                analysis::OwnerIndex selected_owner) {
  selected_function_ = selected_function;
  selected_owner_ = selected_owner;
  return draw(state);
}

GraphViewResult GraphView::draw(const analysis::State& state) { return draw_frame(state, nullptr); }

GraphViewResult GraphView::draw_frame(const analysis::State& state, const analysis::StateView* pending) {
  poll_layout();
  Frame& f = *frame_;
  const Pick pick = pick_source(state, pending);
  begin_frame(f, state);
  stats_.state_pending = pick.pending;
  stats_.indexed = pick.view != nullptr;
  draw_toolbar(state, pick.pending);
  const bool minimap = place_canvas(f);
  // Note [Graph while the state is pending]: nothing until the layout's
  // LiveIndex is built.
  if (!layout_ || !model_ || (pick.view && !pick.index)) {
    f.result.selected_function = selected_function_;
    f.result.selected_owner = selected_owner_;
    return f.result;
  }
  refresh_liveness(f, state, pick);
  note_event(f);
  follow_commands(f);
  const Vec2 was = center_;
  const float was_zoom = zoom_;
  handle_input(f);
  const bool dragging = ImGui::IsItemActive() && (ImGui::IsMouseDragging(ImGuiMouseButton_Left) ||
                                                  ImGui::IsMouseDragging(ImGuiMouseButton_Middle));
  follow_current(f, dragging || was.x != center_.x || was.y != center_.y || was_zoom != zoom_);
  const Layout& l = *layout_;
  stats_.live_units = static_cast<uint32_t>(f.src->shown_count());
  stats_.layout_units = static_cast<uint32_t>(l.center.size());
  stats_.layout_w = l.max.x - l.min.x;
  stats_.layout_h = l.max.y - l.min.y;
  f.zoom = zoom_;
  const float w = f.canvas_max.x - f.canvas_min.x, h = f.canvas_max.y - f.canvas_min.y;
  f.view_min = {center_.x - w * 0.5f / zoom_, center_.y - h * 0.5f / zoom_};
  f.view_max = {center_.x + w * 0.5f / zoom_, center_.y + h * 0.5f / zoom_};
  draw_content(f, minimap);
  note_off_canvas(f);
  hover_and_click(f);
  context_menu(f);
  f.result.selected_function = selected_function_;
  f.result.selected_owner = selected_owner_;
  return f.result;
}

// The one place that knows a frame may read its event two ways (Note [One
// graph drawing path]): pending, the StateView; above indexed_functions
// (Note [Graph at a million Functions]) the full State through the
// LiveIndex, once it is built; else the full State walked.
GraphView::Pick GraphView::pick_source(const analysis::State& state, const analysis::StateView* pending) {
  Pick p;
  keep_from_index_ = false;
  if (pending) {
    lazy_view_ = *pending;
    return {&lazy_view_, live_index(), true};
  }
  if (model_ && layout_ && model_->functions().size() > options_.indexed_functions &&
      state.index < model_->num_events()) {
    if (const LiveIndex* x = live_index()) {
      indexed_view_ = analysis::StateView(*model_, state.index);
      p = {&indexed_view_, x, false};
      keep_from_index_ = true;
    }
  }
  return p;
}

void GraphView::begin_frame(Frame& f, const analysis::State& state) {
  f.result = {};
  f.state = &state;
  f.time = ImGui::GetTime();
  if (drawn_at_ != state.index || event_since_ == 0.0) event_since_ = f.time;
  f.since_event = f.time - event_since_;
  drawn_at_ = static_cast<analysis::EventIndex>(state.index);
  f.dl = ImGui::GetWindowDrawList();
  stats_ = {};
  f.tagged_owners.clear();
}

// Above the canvas: commands, then the owners' legend.
void GraphView::draw_toolbar(const analysis::State& state, bool pending) {
  if (ImGui::SmallButton("Fit")) fit_pending_ = true;
  ImGui::SameLine();
  if (ImGui::SmallButton("Re-layout")) relayout();
  ImGui::SameLine();
  if (options_.minimap) {  // a view without one (the Compare view's halves) offers none
    ImGui::Checkbox("Minimap", &minimap_open_);
    ImGui::SameLine();
  }
  bool compact = metrics_.compact;
  if (ImGui::Checkbox("Compact", &compact)) set_compact(compact);
  ImGui::SameLine();
  if (!model_) {
    ImGui::TextDisabled("no trace");
  } else if (!layout_) {
    ImGui::TextDisabled("laying out %zu Functions...", scene_->nodes().size());
  } else if (pending) {
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ImGui::Text("state pending at #%zu: no legend yet", state.index);
    ImGui::PopStyleColor();
    // As tall as the legend was: the canvas (and a fit) does not move by a
    // line each time the state goes pending and comes back.
    for (uint32_t i = 1; i < legend_lines_; ++i) ImGui::Dummy({1.f, ImGui::GetTextLineHeight()});
  } else {
    draw_legend(state);
    draw_off_canvas_note(off_canvas_, options_.minimap && minimap_open_);  // Note [Fit shows every rank]
  }
}

// Note [Graph canvas]: the header strip, the content, the minimap's column.
bool GraphView::place_canvas(Frame& f) {
  f.panel_min = ImGui::GetCursorScreenPos();
  const ImVec2 avail = ImGui::GetContentRegionAvail();
  f.panel_max = {f.panel_min.x + std::max(avail.x, 50.f), f.panel_min.y + std::max(avail.y, 50.f)};
  ImGui::InvisibleButton("graph_canvas", {f.panel_max.x - f.panel_min.x, f.panel_max.y - f.panel_min.y},
                         ImGuiButtonFlags_MouseButtonLeft | ImGuiButtonFlags_MouseButtonRight |
                             ImGuiButtonFlags_MouseButtonMiddle);
  f.dl->AddRectFilled(f.panel_min, f.panel_max, palette().background);
  const float line = ImGui::GetFontSize();
  const bool captions = rank_bounds_.size() >= 2 || !story_.incidents().empty();
  // One line, a rank's banner beside its caption; more where banners may
  // meet (Note [Banner rows]).
  const float banner_step = std::round(line * 1.45f) + 2.f;
  f.header_h = captions ? std::round(line * 1.6f) + static_cast<float>(banner_rows() - 1) * banner_step : 0.f;
  const bool minimap = options_.minimap && minimap_open_ && minimap_needed_ &&
                       f.panel_max.x - f.panel_min.x > 3.f * options_.minimap_width;
  f.canvas_min = {f.panel_min.x, f.panel_min.y + f.header_h};
  f.canvas_max = {f.panel_max.x - (minimap ? minimap_column(f) + 16.f : 0.f), f.panel_max.y};
  if (f.canvas_max.y < f.canvas_min.y + 20.f) f.canvas_min.y = f.canvas_max.y - 20.f;
  stats_.content = {f.canvas_min.x, f.canvas_min.y, f.canvas_max.x, f.canvas_max.y};
  stats_.minimap_shown = minimap;
  return minimap;
}

void GraphView::note_event(Frame& f) {
  const analysis::Model& model = *model_;
  const size_t at = f.state->index;
  f.firing_hook = kNoIndex;
  f.running = kNoIndex;
  f.firing_stale = false;
  f.removing = kNoIndex;
  if (at >= model.num_events()) return;
  const trace::Event e = model.event(at);
  const uint32_t source = model.source(at);
  if (e.kind == trace::EventKind::kHookFired) {
    f.firing_hook = model.find_hook(source, e.key);
    f.firing_stale = is_stale_fire(model, at);
  }
  if (e.kind == trace::EventKind::kHookRemoved && e.node != 0) f.removing = model.find_function(source, e.node);
  if (e.kind == trace::EventKind::kApplyBegin || e.kind == trace::EventKind::kApplyEnd ||
      e.kind == trace::EventKind::kHookFired) {
    f.running = model.find_function(source, e.node);
  }
}

void GraphView::follow_commands(Frame& f) {
  // Note [Compact boxes]: the live set changed, lay it out again (one job at
  // a time: the frames in between draw the last layout's live boxes). Note
  // [Graph at a million Functions]: read through the LiveIndex, the job
  // works the live slots out.
  if (metrics_.compact && !job_ && f.src->live_set_changed(layout_keep_, layout_keep_at_, drawn_at_)) {
    if (const std::vector<uint8_t>* keep = f.src->keep()) {
      layout_keep_ = *keep;
      layout_keep_at_ = drawn_at_;
    }
    fit_on_layout_ = fit_on_layout_ || at_fit_;
    start_layout(false);
  }
  if (fit_pending_) {
    f.zoom = zoom_;
    fit_now(f);
    fit_pending_ = false;
    stats_.fit = true;
  }
  // A focus waits for the pending layout (and the fit that comes with it).
  if (focus_pending_ < model_->functions().size() && !job_) focus_now(f);
}

void GraphView::focus_now(Frame& f) {
  const Layout& l = *layout_;
  const uint32_t u = folded_->unit_of_node[scene_->slot_of(focus_pending_)];
  focus_pending_ = kNoIndex;
  if (u == kNoSlot) return;
  // Zoom in only as far as text is readable, and move only when the box is not in view
  // (a fit that shows it stays).
  const float readable = options_.min_text_px / chip_font(metrics_);
  if (zoom_ < readable) zoom_ = readable;
  const Vec2 c = l.center[u], s = l.size[u];
  const float half_w = (f.canvas_max.x - f.canvas_min.x) * 0.5f / zoom_;
  const float half_h = (f.canvas_max.y - f.canvas_min.y) * 0.5f / zoom_;
  if (std::abs(c.x - center_.x) + s.x * 0.5f > half_w || std::abs(c.y - center_.y) + s.y * 0.5f > half_h) {
    center_ = c;
    at_fit_ = false;
  }
}

// Note [Graph level of detail]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Text while its smallest line (chip tags) is at least min_text_px tall
// (Note [Readable text]). Below that, plain boxes:
// quads with no outline to tessellate, badges as owner-coloured squares,
// edges as straight thin lines through their joints, while the narrowest
// box is still 11 px wide. Below that every live box is a cell of a 3 px
// grid whose brightness counts the boxes in it: vertices are bounded by
// the canvas area, not by the graph.
void GraphView::draw_content(Frame& f, bool minimap) {
  const BoxMetrics& m = metrics_;
  if (chip_font(m) * zoom_ >= options_.min_text_px) {
    f.detail = GraphDetail::kFull;
  } else if (m.min_width * zoom_ >= 11.f) {
    f.detail = GraphDetail::kBoxes;
  } else {
    f.detail = GraphDetail::kCells;
  }
  stats_.detail = f.detail;
  f.dl->PushClipRect(f.canvas_min, f.canvas_max, true);
  if (f.detail == GraphDetail::kCells) {
    draw_cells(f);
  } else {
    draw_edges(f);
    draw_boxes(f);
  }
  f.dl->PopClipRect();
  f.dl->PushClipRect(f.panel_min, f.panel_max, true);
  draw_rank_captions(f);
  draw_banners(f);
  // The minimap's column is needed while some live box is out of view
  // (every live box inside the view iff their bounds are), judged on the
  // canvas without the column: judged on the canvas as drawn, both answers
  // confirm themselves (shown, the narrower canvas leaves a box out; hidden,
  // all fit), and which one a view got depended on the frames before it.
  const float full_half_w = std::max(f.panel_max.x - f.panel_min.x, 1.f) * 0.5f / zoom_;
  const Vec2 lo = f.src->shown_min(), hi = f.src->shown_max();
  minimap_needed_ = f.src->shown_count() > 0 &&
                    !(lo.x >= center_.x - full_half_w && hi.x <= center_.x + full_half_w && lo.y >= f.view_min.y &&
                      hi.y <= f.view_max.y);
  if (minimap) draw_minimap(f);
  f.dl->PopClipRect();
}

void GraphView::handle_input(Frame& f) {
  ImGuiIO& io = ImGui::GetIO();
  const bool hovered = ImGui::IsItemHovered();
  const bool active = ImGui::IsItemActive();
  f.zoom = zoom_;
  const float w = f.canvas_max.x - f.canvas_min.x, h = f.canvas_max.y - f.canvas_min.y;
  f.view_min = {center_.x - w * 0.5f / zoom_, center_.y - h * 0.5f / zoom_};
  f.view_max = {center_.x + w * 0.5f / zoom_, center_.y + h * 0.5f / zoom_};
  f.hovered_unit = kNone;
  f.clicked = f.double_clicked = false;
  if (!hovered && !active) return;

  // The minimap takes the mouse inside its rectangle: press or drag to move there.
  const Layout& l = *layout_;
  const ImVec2 mouse = io.MousePos;
  float mx0, my0, mx1, my1, scale;
  if (minimap_rect(f, &mx0, &my0, &mx1, &my1, &scale) && mouse.x >= mx0 && mouse.y >= my0 && mouse.x <= mx1 &&
      mouse.y <= my1) {
    if (ImGui::IsMouseDown(ImGuiMouseButton_Left)) {
      center_ = {l.min.x + (mouse.x - mx0) / scale, l.min.y + (mouse.y - my0) / scale};
      at_fit_ = false;
    }
    return;
  }
  if (!active && (mouse.y < f.canvas_min.y || mouse.x > f.canvas_max.x)) return;  // header strip, minimap column
  if (active && (ImGui::IsMouseDragging(ImGuiMouseButton_Left) ||
                 ImGui::IsMouseDragging(ImGuiMouseButton_Middle))) {
    center_.x -= io.MouseDelta.x / zoom_;
    center_.y -= io.MouseDelta.y / zoom_;
    at_fit_ = false;
  }
  if (hovered && io.MouseWheel != 0.f) {
    // Zoom at the cursor: the world point under it stays under it.
    const Vec2 before = f.to_world(mouse);
    zoom_ = std::clamp(zoom_ * std::pow(1.2f, io.MouseWheel), 1e-6f, 8.f);
    at_fit_ = false;
    const float mx = mouse.x - (f.canvas_min.x + w * 0.5f), my = mouse.y - (f.canvas_min.y + h * 0.5f);
    center_ = {before.x - mx / zoom_, before.y - my / zoom_};
  }
  f.zoom = zoom_;
  f.view_min = {center_.x - w * 0.5f / zoom_, center_.y - h * 0.5f / zoom_};
  f.view_max = {center_.x + w * 0.5f / zoom_, center_.y + h * 0.5f / zoom_};
  if (!hovered) return;

  // Hit test: the layer band under the mouse, then its boxes by x.
  const Vec2 p = f.to_world(mouse);
  const auto lt = std::upper_bound(l.layer_top.begin(), l.layer_top.end(), p.y);
  if (lt != l.layer_top.begin()) {
    const int k = static_cast<int>(lt - l.layer_top.begin()) - 1;
    if (p.y < l.layer_top[k] + l.layer_height[k]) {
      const float reach = layer_max_width_[k] * 0.5f;
      auto first = l.layer_nodes.begin() + l.layer_begin[k], last = l.layer_nodes.begin() + l.layer_begin[k + 1];
      auto it = std::lower_bound(first, last, p.x - reach,
                                 [&](int u, float x) { return l.center[u].x < x; });
      for (; it != last && l.center[*it].x <= p.x + reach; ++it) {
        const int u = *it;
        if (std::abs(p.x - l.center[u].x) <= l.size[u].x * 0.5f &&
            std::abs(p.y - l.center[u].y) <= l.size[u].y * 0.5f && f.src->shown(static_cast<uint32_t>(u))) {
          f.hovered_unit = static_cast<uint32_t>(u);
          break;
        }
      }
    }
  }
  // A click is a press and release without a drag; hover_and_click()
  // decides what it selects once the badges are placed.
  f.clicked = ImGui::IsMouseReleased(ImGuiMouseButton_Left) &&
              ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 4.f).x == 0.f &&
              ImGui::GetMouseDragDelta(ImGuiMouseButton_Left, 4.f).y == 0.f;
  f.double_clicked = ImGui::IsMouseDoubleClicked(ImGuiMouseButton_Left);
  if (f.double_clicked && f.hovered_unit == kNone) fit_pending_ = true;
  if (ImGui::IsMouseReleased(ImGuiMouseButton_Right) && f.hovered_unit != kNone) {
    menu_unit_ = f.hovered_unit;
    ImGui::OpenPopup("graph_fold_menu");
  }
}

void GraphView::context_menu(Frame& f) {
  if (!ImGui::BeginPopup("graph_fold_menu")) return;
  const FoldedGraph& fg = *folded_;
  if (menu_unit_ < fg.group_of_unit.size()) {
    const uint32_t g = fg.group_of_unit[menu_unit_];
    if (g != kNoGroup) {
      if (ImGui::MenuItem(("Expand " + scene_->groups()[g].name).c_str())) set_folded(g, false);
    } else {
      const SceneNode& node = scene_->nodes()[fg.node_of_unit[menu_unit_]];
      bool any = false;
      for (uint32_t m = node.module; m != kNoGroup; m = scene_->groups()[m].parent) {
        const SceneGroup& group = scene_->groups()[m];
        const std::string item = "Fold module " + group.name + " (" + std::to_string(group.nodes.size()) + ")";
        if (ImGui::MenuItem(item.c_str())) set_folded(m, true);
        any = true;
      }
      if (node.chain != kNoGroup) {
        const SceneGroup& group = scene_->groups()[node.chain];
        const std::string item = "Fold chain of " + std::to_string(group.nodes.size());
        if (ImGui::MenuItem(item.c_str())) set_folded(node.chain, true);
        any = true;
      }
      if (!any) ImGui::TextDisabled("in no module or chain");
    }
  }
  ImGui::EndPopup();
}

}  // namespace hookscope::render
