// Lanes panel: one bar per hook from its add to its end (analysis/lanes.h,
// Note [Hook lanes]), grouped by Function or by owner (folding), in the
// owner's colour, red from the owner's death on (a bar that goes on red is a
// leak), fire ticks on it (stale ones in the stale colour), the current
// event as a line. Above, the counter track: live hooks in total and per
// owner. A click on a bar or tick goes to that event and selects the
// Function. Drawing is bounded by pixels (Note [Lanes level of detail]).
#include <fmt/format.h>

#include <algorithm>

#include "analysis/owner_status.h"
#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"
#include "analysis/stats.h"
#include "render/layout/graph_scene.h"

namespace hookscope::app {

namespace {

using analysis::EventIndex;
using analysis::HookLane;
using analysis::kNever;
using analysis::kNoIndex;
using render::palette;

constexpr float kLabelWidth = 250.f;
constexpr float kCounterHeight = 54.f;
constexpr int kCounterOwners = 6;  // owners drawn as lines on the counter track
constexpr size_t kSeriesSamples = 2048;  // the selected Function's series

ViewsDrawStats::Rect rect_of(ImVec2 a, ImVec2 b) { return {a.x, a.y, b.x, b.y}; }

std::string event_range(const HookLane& l) {
  return l.ended_at == kNever ? fmt::format("#{} .. end", l.added_at) : fmt::format("#{} .. #{}", l.added_at, l.ended_at);
}

using Go = std::optional<std::pair<size_t, analysis::FunctionIndex>>;

// A new model: its lanes and counters; a new trace is fitted, a grown one
// (live) stays fitted if it was, else keeps the view.
void lanes_refresh(ViewPanels& v, const analysis::Model* m, size_t n) {
  v.lanes = analysis::hook_lanes(*m);
  // Several ranks: every group says whose it is ("Reducer 1" and
  // "AccumulateGrad" exist on each).
  v.lanes_ranks = std::any_of(v.lanes.begin(), v.lanes.end(), [&](const analysis::HookLane& l) {
    return m->hooks()[l.hook].rank != m->hooks()[v.lanes.front().hook].rank;
  });
  v.counter.build(v.lanes, m->owners().size());
  v.lanes_model = m;
  v.rows_dirty = true;
  const bool was_fit = v.axis.begin <= 0.0 && v.axis.end >= static_cast<double>(v.lanes_events);
  v.lanes_events = n;
  if (!v.axis_set || was_fit || v.axis.end > static_cast<double>(n)) {
    v.axis.begin = 0.0;
    v.axis.end = static_cast<double>(n);
    v.axis_set = true;
  }
}

// The toolbar: grouping, fold / unfold all, fit, and how many hooks outlive their owner.
void lanes_toolbar(ViewPanels& v, size_t n) {
  int grouping = static_cast<int>(v.grouping);
  ImGui::TextDisabled("group by");
  ImGui::SameLine();
  bool regroup = ImGui::RadioButton("Function", &grouping, 0);
  ImGui::SameLine();
  regroup |= ImGui::RadioButton("owner / module", &grouping, 1);
  if (regroup) {
    v.grouping = static_cast<LaneGrouping>(grouping);
    v.folded.clear();
    v.rows_dirty = true;
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("fold all")) {
    v.folded.clear();
    for (const LaneGroup& g : v.rows.groups) v.folded.push_back(g.key);
    std::sort(v.folded.begin(), v.folded.end());
    v.rows_dirty = true;
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("unfold all")) {
    v.folded.clear();
    v.rows_dirty = true;
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("fit")) v.axis.begin = 0.0, v.axis.end = static_cast<double>(n);
  ImGui::SameLine();
  if (v.rows_dirty) {
    v.rows = build_lane_rows(v.lanes, v.grouping, v.folded, n);
    v.rows_dirty = false;
  }
  size_t outliving = 0, unused = 0;
  for (const LaneGroup& g : v.rows.groups) outliving += g.outliving, unused += g.unused;
  // Note [Lingering owners]: hooks of a replaced, still alive Reducer outlive their use.
  std::string& said = v.stats.lanes_summary;
  said.clear();
  if (outliving > 0) {
    said = fmt::format("{} of {} hooks outlive their owner", outliving, v.lanes.size());
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().alarm), "%s", said.c_str());
  } else if (unused == 0) {
    said = fmt::format("{} hooks, none outlives its owner or its use", v.lanes.size());
    ImGui::TextDisabled("%s", said.c_str());
  }
  if (unused > 0) {
    const std::string more = fmt::format("{} of {} hooks outlive their use (owner replaced, still alive)", unused,
                                         v.lanes.size());
    if (outliving > 0) ImGui::SameLine();
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().lingering), "%s", more.c_str());
    said += (said.empty() ? "" : "; ") + more;
  }
  if (v.rows_dirty) {
    v.rows = build_lane_rows(v.lanes, v.grouping, v.folded, n);
    v.rows_dirty = false;
  }
}

// The counter track's pixel columns, from x0 at the track's bottom, scaled to its peak.
struct Track {
  ImDrawList* dl;
  const EventAxis& ax;
  size_t n;
  float x0;
  int cols;
  float bottom;
  float scale = 0.f;
};

// Live hooks in total, as an area; returns the peak in view.
uint32_t counter_total(const ViewPanels& v, Track& t) {
  std::vector<uint32_t> total(static_cast<size_t>(t.cols));
  uint32_t peak = 1;
  for (int c = 0; c < t.cols; ++c) {
    const double e = t.ax.event_at(t.x0 + c + 0.5f);
    total[c] = e < 0 || e >= static_cast<double>(t.n) ? 0 : v.counter.total_at(static_cast<size_t>(e));
    peak = std::max(peak, total[c]);
  }
  t.scale = (kCounterHeight - 4.f) / static_cast<float>(peak);
  for (int c = 0; c < t.cols; ++c) {
    if (total[c] == 0) continue;
    t.dl->AddRectFilled(ImVec2(t.x0 + c, t.bottom - total[c] * t.scale), ImVec2(t.x0 + c + 1.f, t.bottom),
                        render::with_alpha(palette().text_dim, 110));
  }
  return peak;
}

// The selected Function's hooks at event `e`, as `hookscope-cli stats` samples them.
uint32_t selected_hooks_at(const ViewPanels& v, analysis::FunctionIndex sel, size_t n, double e) {
  if (sel == kNoIndex || v.series.empty() || e < 0 || e >= static_cast<double>(n)) return 0;
  // Samples are evenly spaced over the trace: the last one at or before e.
  const size_t k = n <= 1 ? 0 : static_cast<size_t>(e * static_cast<double>(v.series.size() - 1) / static_cast<double>(n - 1));
  return v.series[std::min(k, v.series.size() - 1)].hooks;
}

// The selected Function's hooks (its leaf's, across AccumulateGrads): a
// dashed line in the selection colour.
void counter_selected(const ViewPanels& v, analysis::FunctionIndex sel, const Track& t) {
  if (sel == kNoIndex || v.series.empty()) return;
  for (int c = 0; c + 2 < t.cols; c += 4) {
    const double e0 = t.ax.event_at(t.x0 + c + 0.5f), e1 = t.ax.event_at(t.x0 + c + 2.5f);
    t.dl->AddLine(ImVec2(t.x0 + c, t.bottom - 1.f - selected_hooks_at(v, sel, t.n, e0) * t.scale),
                  ImVec2(t.x0 + c + 2.f, t.bottom - 1.f - selected_hooks_at(v, sel, t.n, e1) * t.scale), palette().selected,
                  2.f);
  }
}

// The biggest owners' live hooks, a line each in the owner's colour.
void counter_owners(const analysis::Model& m, const ViewPanels& v, const Track& t) {
  const auto& owners = v.counter.owners_by_size();
  for (size_t k = 0; k < owners.size() && k < kCounterOwners; ++k) {
    const uint32_t color = render::owner_color(m, owners[k]);
    ImVec2 prev;
    for (int c = 0; c < t.cols; ++c) {
      const double e = t.ax.event_at(t.x0 + c + 0.5f);
      const uint32_t live = e < 0 || e >= static_cast<double>(t.n) ? 0 : v.counter.owner_at(owners[k], static_cast<size_t>(e));
      const ImVec2 p(t.x0 + c, t.bottom - 1.f - live * t.scale);
      if (c > 0) t.dl->AddLine(prev, p, color, 1.5f);
      prev = p;
    }
  }
}

// The counter track's tooltip at event `e`.
void counter_tooltip(const analysis::Model& m, const ViewPanels& v, analysis::FunctionIndex sel, size_t n, double e) {
  const auto& owners = v.counter.owners_by_size();
  ImGui::BeginTooltip();
  ImGui::Text("#%zu: %u hooks attached", static_cast<size_t>(e), v.counter.total_at(static_cast<size_t>(e)));
  for (size_t k = 0; k < owners.size() && k < kCounterOwners; ++k) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(render::owner_color(m, owners[k])), "%s: %u",
                       m.owner_name(owners[k]).c_str(), v.counter.owner_at(owners[k], static_cast<size_t>(e)));
  }
  if (sel != kNoIndex) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().selected), "%s: %u (sampled)",
                       m.function_name(sel).c_str(), selected_hooks_at(v, sel, n, e));
  }
  ImGui::TextDisabled("click: go to this event");
  ImGui::EndTooltip();
}

// Where a row's bars go: its band [y0, y1] and the pixels worth drawing.
struct BarPlace {
  ImDrawList* dl;
  const EventAxis& ax;
  size_t n;
  float y0, y1;
  double x_lo, x_hi;
  ViewsDrawStats& s;
};

// A bar from `from` to `to` (kNever: the end), in the lingering colour from
// `replaced` on (Note [Lingering owners]), red from `died` on.
void lane_bar(const BarPlace& at, EventIndex from, EventIndex to, EventIndex died, uint32_t color, float inset,
              EventIndex replaced = kNever) {
  const EventAxis& ax = at.ax;
  const double end = to == kNever ? static_cast<double>(at.n) : static_cast<double>(to);
  float xa = ax.x(from), xb = ax.x(end);
  if (xb < at.x_lo || xa > at.x_hi) return;
  xa = static_cast<float>(std::max<double>(xa, at.x_lo));
  xb = static_cast<float>(std::min<double>(std::max(xb, xa + 1.f), at.x_hi));  // at least a pixel
  at.dl->AddRectFilled(ImVec2(xa, at.y0 + inset), ImVec2(xb, at.y1 - inset), color);
  ++at.s.bars;
  if (replaced != kNever && replaced < end && replaced < died) {
    const float xr = std::max(xa, ax.x(replaced));
    const float xe = died == kNever ? xb : std::min(xb, std::max(xr, ax.x(died)));
    if (xr < xe) {
      at.dl->AddRectFilled(ImVec2(xr, at.y0 + inset), ImVec2(xe, at.y1 - inset), palette().lingering);
      ++at.s.lingering_segments;
    }
  }
  if (died != kNever && died < end) {
    const float xd = std::max(xa, ax.x(died));
    if (xd < xb) {
      at.dl->AddRectFilled(ImVec2(xd, at.y0 + inset), ImVec2(xb, at.y1 - inset), palette().alarm);
      ++at.s.dead_segments;
    }
  }
}

// A group's header: its whole span, red when some lane in it outlives its owner.
void lanes_group_bar(const BarPlace& at, const LaneGroup& g, float canvas_x0, float canvas_w, bool clicked, Go& go) {
  const EventAxis& ax = at.ax;
  lane_bar(at, g.begin, g.end, kNever, render::with_alpha(palette().text_dim, 90), 3.f);
  if (g.outliving || g.unused) {
    const float xa = std::max(ax.x(g.begin), canvas_x0), xb = std::min(ax.x(g.end), canvas_x0 + canvas_w);
    if (xb > xa) at.dl->AddRectFilled(ImVec2(xa, at.y1 - 3.f), ImVec2(xb, at.y1), g.outliving ? palette().alarm : palette().lingering);
  }
  if (clicked) {
    const double e = std::clamp(ax.event_at(ImGui::GetIO().MousePos.x), 0.0, static_cast<double>(at.n - 1));
    go = {{static_cast<size_t>(e), kNoIndex}};
  }
}

// Where a lane's hook sits: its Function, or for a hook on no Function
// (a module's forward hooks, a DDP comm hook: node 0 in the trace) what it
// is attached to instead, never a bare "?".
std::string lane_place(const analysis::Model& m, const HookLane& l) {
  if (l.function < m.functions().size()) return m.function_name(l.function);
  const trace::HookKind kind = m.hooks()[l.hook].kind;
  if (kind == trace::HookKind::kCommHook) return "the Reducer's buckets (no Function)";
  if (trace::is_module_hook(kind)) return "the module (no Function)";
  return "no Function";
}

// A hook lane's tooltip; a click goes to event `near`.
void lane_tooltip(const analysis::Model& m, const HookLane& l, EventIndex near) {
  const analysis::HookInfo& h = m.hooks()[l.hook];
  ImGui::BeginTooltip();
  ImGui::Text("%s hook %s of %s", std::string(trace::to_string(h.kind)).c_str(), trace::format_hook_key(h.key).c_str(),
              m.owner_name(l.owner).c_str());
  ImGui::Text("on %s", lane_place(m, l).c_str());
  ImGui::Text("attached %s", event_range(l).c_str());
  if (l.owner_died_at != kNever) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(l.outlives_owner() ? palette().alarm : palette().text_dim),
                       "owner destroyed at #%u%s", l.owner_died_at,
                       l.outlives_owner() ? " while the hook was still attached" : "");
  }
  if (l.owner_replaced_at != kNever) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().lingering), "%s%s",
                       analysis::replaced_text(m, l.owner).c_str(),
                       l.outlives_use() ? ": the hook outlives its use" : "");
    ImGui::Text("%u fires while its owner lingered (they did nothing)", l.fires_lingering);
  }
  ImGui::Text("fires: %u before the owner's death, %u after (stale)", l.fires_before, l.fires_after);
  if (l.fires_after_removal) ImGui::Text("%u fires after its removal", l.fires_after_removal);
  ImGui::TextDisabled("click: go to #%u (%s)", near, m.describe(near).c_str());
  ImGui::EndTooltip();
}

// A hook's lane: its bar in the owner's colour, its fires as ticks (stale
// ones in the stale colour); hovered, a tooltip; clicked, go to the nearest event.
void lanes_hook_bar(const analysis::Model& m, ViewPanels& v, const BarPlace& at, const HookLane& l, bool hovered,
                    bool clicked, Go& go) {
  const uint32_t color = l.owner < m.owners().size() ? render::owner_color(m, l.owner) : palette().ghost;
  lane_bar(at, l.added_at, l.ended_at, l.owner_died_at, render::with_alpha(color, 215), 0.f, l.owner_replaced_at);
  const auto fires = m.fires(l.hook);
  tick_columns(fires, at.ax, l.owner_died_at, v.ticks);
  for (const TickColumn& t : v.ticks) {
    const uint32_t tc = t.stale ? palette().stale : palette().text;
    // Stale ticks stand out of the bar (it is red there): taller and wider.
    const float out = t.stale ? 3.f : 1.f, w = t.stale || t.fires > 1 ? 2.f : 1.f;
    at.dl->AddRectFilled(ImVec2(t.x, at.y0 - out), ImVec2(t.x + w, at.y1 + out), tc);
    ++at.s.ticks;
    at.s.stale_ticks += t.stale;
  }
  if (hovered || clicked) {
    const double e = at.ax.event_at(ImGui::GetIO().MousePos.x);
    const EventIndex near = nearest_lane_event(l, fires, e);
    if (hovered) lane_tooltip(m, l, near);
    if (clicked) go = {{near, l.function}};
  }
}

}  // namespace

// What every section of one Lanes frame shares.
struct App::LanesFrame {
  const analysis::Model& m;
  size_t n;          // events
  size_t now;        // the current event
  float row_h;
  ImVec2 origin;     // of the counter track's labels
  float canvas_x0, canvas_w;
};

// The counter track: live hooks, in total (area), for the selected Function
// (dashed) and for the biggest owners (lines); a click goes to that event.
void App::lanes_counters(const LanesFrame& f) {
  ViewPanels& v = views_;
  const analysis::Model* m = &f.m;
  const size_t n = f.n, now = f.now;
  const float canvas_x0 = f.canvas_x0, canvas_w = f.canvas_w;
  const EventAxis& ax = v.axis;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 a(canvas_x0, f.origin.y), b(canvas_x0 + canvas_w, f.origin.y + kCounterHeight);
  dl->AddRectFilled(a, b, palette().background);
  Track t{dl, ax, n, canvas_x0, static_cast<int>(canvas_w), b.y};
  const uint32_t peak = counter_total(v, t);
  const analysis::FunctionIndex sel = session_.selected_function();
  if (sel != kNoIndex && (v.series_model != m || v.series_function != sel)) {
    v.series = analysis::hook_count_series(*m, sel, kSeriesSamples);
    v.series_model = m;
    v.series_function = sel;
  }
  counter_selected(v, sel, t);
  counter_owners(*m, v, t);
  const float xn = ax.x(static_cast<double>(now));
  if (xn >= a.x && xn <= b.x) dl->AddLine(ImVec2(xn, a.y), ImVec2(xn, b.y), palette().selected);
  v.stats.counter = rect_of(a, b);
  ImGui::SetCursorScreenPos(ImVec2(f.origin.x, f.origin.y));
  ImGui::TextDisabled("live hooks");
  ImGui::Text("%u at #%zu", v.counter.total_at(now), now);
  ImGui::TextDisabled("peak in view %u", peak);
  ImGui::SetCursorScreenPos(ImVec2(canvas_x0, f.origin.y));
  ImGui::InvisibleButton("##counter", ImVec2(canvas_w, kCounterHeight));
  if (ImGui::IsItemHovered()) {
    const double e = std::clamp(ax.event_at(ImGui::GetIO().MousePos.x), 0.0, static_cast<double>(n - 1));
    counter_tooltip(*m, v, sel, n, e);
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) jump_to(static_cast<size_t>(e));
  }
}

// Row `r`'s label: a group's name (a click folds it) or a hook (a click
// selects its Function), marked when it is the selected Function's or owner's.
void App::lanes_row_label(const LanesFrame& f, int r, ImDrawList* dl) {
  ViewPanels& v = views_;
  const analysis::Model* m = &f.m;
  const float row_h = f.row_h;
  const LaneRow& row = v.rows.rows[static_cast<size_t>(r)];
  LaneGroup& g = v.rows.groups[row.group];
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImGui::InvisibleButton("##label", ImVec2(kLabelWidth - 6.f, row_h));
  const bool label_hovered = ImGui::IsItemHovered();
  const bool label_clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
  std::string label;
  uint32_t label_color = palette().text;
  if (row.lane == kNoIndex) {
    std::string name = v.grouping == LaneGrouping::kFunction
                           ? (g.key < m->functions().size() ? m->function_name(g.key) : "no Function")
                           : (g.key < m->owners().size() ? m->owner_name(g.key) : "no owner");
    const bool known = v.grouping == LaneGrouping::kFunction ? g.key < m->functions().size() : g.key < m->owners().size();
    if (v.lanes_ranks && known) {
      const uint16_t rank = v.grouping == LaneGrouping::kFunction ? m->functions()[g.key].rank : m->owners()[g.key].rank;
      name = fmt::format("rank {} · {}", rank, name);
      ++v.stats.ranked_headers;
    }
    ++v.stats.headers;
    label = fmt::format("{} {} ({})", g.folded ? "+" : "-", name, g.count);
    if (g.outliving || g.unused) label_color = g.outliving ? palette().alarm : palette().lingering;
    if (label_clicked) {
      auto it = std::lower_bound(v.folded.begin(), v.folded.end(), g.key);
      if (it != v.folded.end() && *it == g.key) v.folded.erase(it); else v.folded.insert(it, g.key);
      v.rows_dirty = true;
    }
    if (label_hovered) {
      ImGui::SetTooltip("%s\n%u hooks, %u outlive their owner, %u outlive their use, %u stale fires\nclick: %s",
                        name.c_str(), g.count, g.outliving, g.unused, g.stale_fires, g.folded ? "unfold" : "fold");
    }
  } else {
    const HookLane& l = v.lanes[row.lane];
    const analysis::HookInfo& h = m->hooks()[l.hook];
    label = v.grouping == LaneGrouping::kFunction
                ? fmt::format("   {} {} · {}", trace::to_string(h.kind), trace::format_hook_key(h.key), m->owner_name(l.owner))
                : fmt::format("   {} {} · {}", trace::to_string(h.kind), trace::format_hook_key(h.key),
                              lane_place(*m, l));
    if (label_clicked && l.function != kNoIndex) select_function(l.function);
    if (label_hovered) ImGui::SetTooltip("click: select its Function");
  }
  const float ty = p.y + (row_h - ImGui::GetTextLineHeight()) * 0.5f;
  dl->PushClipRect(p, ImVec2(p.x + kLabelWidth - 6.f, p.y + row_h), true);
  if (row.lane == kNoIndex) dl->AddRectFilled(p, ImVec2(p.x + kLabelWidth - 6.f, p.y + row_h), palette().track);
  // The selected Function's (or owner's) rows, marked as in the graph.
  const uint32_t function = row.lane == kNoIndex ? (v.grouping == LaneGrouping::kFunction ? g.key : kNoIndex)
                                                 : v.lanes[row.lane].function;
  const uint32_t owner = row.lane == kNoIndex ? (v.grouping == LaneGrouping::kOwner ? g.key : kNoIndex)
                                              : v.lanes[row.lane].owner;
  if ((function != kNoIndex && function == session_.selected_function()) ||
      (owner != kNoIndex && owner == session_.selected_owner())) {
    dl->AddRectFilled(p, ImVec2(p.x + 3.f, p.y + row_h), palette().selected);
  }
  dl->AddText(ImVec2(p.x + 2.f, ty), label_color, label.c_str());
  dl->PopClipRect();
}

// The lanes, one row each (only the visible ones drawn), in a child that
// Ctrl+wheel zooms, Shift+wheel and right-drag pan; the current event as a line.
void App::lanes_rows(const LanesFrame& f, Go& go) {
  ViewPanels& v = views_;
  const size_t n = f.n;
  const float row_h = f.row_h, canvas_x0 = f.canvas_x0, canvas_w = f.canvas_w;
  ImGuiIO& io = ImGui::GetIO();
  // Ctrl+wheel zooms the axis: then the rows must not scroll too.
  ImGui::BeginChild("##lanes_rows", ImVec2(0.f, 0.f), false, io.KeyCtrl ? ImGuiWindowFlags_NoScrollWithMouse : 0);
  const bool hovered_child = ImGui::IsWindowHovered();
  if (hovered_child && io.KeyCtrl && io.MouseWheel != 0.f) {
    v.axis.zoom(io.MouseWheel > 0 ? 0.8 : 1.25, io.MousePos.x, static_cast<double>(n));
  }
  if (hovered_child && (io.KeyShift ? io.MouseWheel != 0.f : false)) v.axis.pan(io.MouseWheel * 60.f, static_cast<double>(n));
  if (hovered_child && ImGui::IsMouseDragging(ImGuiMouseButton_Right)) {
    v.axis.pan(io.MouseDelta.x, static_cast<double>(n));
  }
  const EventAxis& ax = v.axis;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const float top = ImGui::GetCursorScreenPos().y;
  const ImVec2 clip_min = ImGui::GetWindowPos();
  const ImVec2 clip_max(clip_min.x + ImGui::GetWindowSize().x, clip_min.y + ImGui::GetWindowSize().y);
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(v.rows.rows.size()), row_h);
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const LaneRow& row = v.rows.rows[static_cast<size_t>(r)];
      const LaneGroup& g = v.rows.groups[row.group];
      const ImVec2 p = ImGui::GetCursorScreenPos();
      ImGui::PushID(r);
      lanes_row_label(f, r, dl);
      // Bar area.
      ImGui::SameLine(0.f, 6.f);
      ImGui::InvisibleButton("##bar", ImVec2(canvas_w, row_h));
      const bool bar_hovered = ImGui::IsItemHovered();
      const bool bar_clicked = ImGui::IsItemClicked(ImGuiMouseButton_Left);
      dl->PushClipRect(ImVec2(canvas_x0, p.y), ImVec2(canvas_x0 + canvas_w, p.y + row_h), true);
      ++v.stats.lane_rows;
      const BarPlace at{dl, ax, n, p.y + 2.f, p.y + row_h - 2.f, canvas_x0 - 2.0, canvas_x0 + canvas_w + 2.0, v.stats};
      if (row.lane == kNoIndex) {
        lanes_group_bar(at, g, canvas_x0, canvas_w, bar_clicked, go);
      } else {
        lanes_hook_bar(f.m, v, at, v.lanes[row.lane], bar_hovered, bar_clicked, go);
      }
      dl->PopClipRect();
      ImGui::PopID();
    }
  }
  clipper.End();
  // The current event, over every visible row.
  const float xn = ax.x(static_cast<double>(f.now));
  if (xn >= canvas_x0 && xn <= canvas_x0 + canvas_w) {
    dl->AddLine(ImVec2(xn, std::max(top, clip_min.y)), ImVec2(xn, clip_max.y), palette().selected, 1.5f);
  }
  v.stats.lanes = rect_of(ImVec2(canvas_x0, clip_min.y), ImVec2(canvas_x0 + canvas_w, clip_max.y));
  if (v.rows.rows.empty()) ImGui::TextDisabled("No hooks in this trace.");
  ImGui::EndChild();
}

void App::draw_lanes_panel() {
  ViewPanels& v = views_;
  const analysis::Model* m = session_.model();
  if (!begin_trace_panel("Lanes", &v.show_lanes, m)) return;
  const size_t n = m->num_events();
  if (v.lanes_model != m) lanes_refresh(v, m, n);
  ViewsDrawStats& s = v.stats;
  s.lane_rows = s.bars = s.lingering_segments = s.dead_segments = s.ticks = s.stale_ticks = s.headers = s.ranked_headers = 0;
  lanes_toolbar(v, n);

  const float row_h = ImGui::GetTextLineHeightWithSpacing();
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  const float avail_w = ImGui::GetContentRegionAvail().x;
  const float canvas_x0 = origin.x + kLabelWidth;
  const float canvas_w = std::max(40.f, avail_w - kLabelWidth - ImGui::GetStyle().ScrollbarSize);
  v.axis.x0 = canvas_x0;
  v.axis.width = canvas_w;
  const LanesFrame f{*m, n, session_.current(), row_h, origin, canvas_x0, canvas_w};
  lanes_counters(f);
  Go go;
  lanes_rows(f, go);
  ImGui::End();
  if (go) jump_to(go->first, go->second);
}

}  // namespace hookscope::app
