// The Compare panel's synchronised half (Note [Synchronised comparison]):
// B follows A's current event to the matching point; both graphs side by
// side with the boxes whose hooks differ outlined (hooks only in A in one
// colour, only in B in another) and listed below; the hook-order diff up to
// the point. HOOKSCOPE_COMPARE_REPORT=FILE writes what the last frame drew.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <vector>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"

namespace hookscope::app {

namespace {

using analysis::kNoIndex;
using render::palette;

// Hooks one side has beyond the other, summed over kinds.
uint32_t extra(const std::array<uint32_t, trace::kNumHookKinds>& mine,
               const std::array<uint32_t, trace::kNumHookKinds>& theirs) {
  uint32_t n = 0;
  for (size_t k = 0; k < mine.size(); ++k) n += mine[k] > theirs[k] ? mine[k] - theirs[k] : 0;
  return n;
}

std::string rect_json(const render::GraphDrawStats::Rect& r) {
  return fmt::format("[{},{},{},{}]", r.x0, r.y0, r.x1, r.y1);
}

std::string rects_json(const std::vector<render::GraphDrawStats::Rect>& rects) {
  std::string out;
  for (const auto& r : rects) out += (out.empty() ? "" : ",") + rect_json(r);
  return "[" + out + "]";
}

std::string banners_json(const render::GraphView* view) {
  std::vector<render::GraphDrawStats::Rect> rects;
  if (view) {
    for (const auto& [rank, r] : view->stats().banners) rects.push_back(r);
  }
  return rects_json(rects);
}

// Whether each banner's text is cut by its rect (the same order as banners_json).
std::string banners_clipped_json(const render::GraphView* view) {
  std::string out;
  if (view) {
    for (const bool c : view->stats().banner_clipped) out += fmt::format("{}{}", out.empty() ? "" : ",", c);
  }
  return "[" + out + "]";
}

using Rect = render::GraphDrawStats::Rect;
bool overlap(const Rect& a, const Rect& b) { return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1; }

// Note [Compare tags]
// ~~~~~~~~~~~~~~~~~~~
// A box whose hooks differ is outlined and tagged "+N only in A" (or "+N"
// where the whole tag finds no place). The tag goes where it covers nothing: above the box's right end, above its left
// end, below it, right or left of it; a place must lie inside the canvas
// (not in the header strip with the banners, not in the minimap's column)
// and touch no box drawn, no banner and no tag already placed. A box with no
// such place keeps its outline; the list under the graphs names it and the
// line above the list counts them ("2 outlined boxes without a tag"). The
// report (HOOKSCOPE_COMPARE_REPORT) gives every tag's rectangle.
std::optional<Rect> place_tag(const render::GraphView& view, Rect box, float w, float h, const std::vector<Rect>& taken) {
  const render::GraphDrawStats& st = view.stats();
  const Rect c = st.content;
  const float g = 4.f;  // clear of the outline (3 px) drawn around the box
  const Rect tries[] = {
      {box.x1 - w, box.y0 - g - h, box.x1, box.y0 - g}, {box.x0, box.y0 - g - h, box.x0 + w, box.y0 - g},
      {box.x1 - w, box.y1 + g, box.x1, box.y1 + g + h}, {box.x0, box.y1 + g, box.x0 + w, box.y1 + g + h},
      {box.x1 + g, box.y0, box.x1 + g + w, box.y0 + h}, {box.x0 - g - w, box.y0, box.x0 - g, box.y0 + h},
  };
  for (const Rect& r : tries) {
    if (r.x0 < c.x0 || r.y0 < c.y0 || r.x1 > c.x1 || r.y1 > c.y1) continue;
    auto hit = [&](const Rect& o) { return overlap(r, o); };
    if (std::any_of(st.box_rects.begin(), st.box_rects.end(), hit)) continue;
    if (std::any_of(taken.begin(), taken.end(), hit)) continue;
    if (std::any_of(st.banners.begin(), st.banners.end(), [&](const auto& b) { return overlap(r, b.second); })) continue;
    return r;
  }
  return std::nullopt;
}

void write_report(const CompareGraphs& g, const char* path) {
  const CompareDrawStats& s = g.stats;
  std::string label = s.label, first = s.order_first;
  std::replace(label.begin(), label.end(), '"', '\'');
  std::replace(first.begin(), first.end(), '"', '\'');
  std::replace(first.begin(), first.end(), '\\', '/');
  const std::string json = fmt::format(
      "{{\"label\":\"{}\",\"a\":{},\"b\":{},\"found\":{},\"differing\":{},\"only_a\":{},\"only_b\":{},"
      "\"marked_a\":{},\"marked_b\":{},\"order_rows\":{},\"order_rows_drawn\":{},\"boxes_a\":{},\"boxes_b\":{},\"graph_a\":{},\"graph_b\":{},"
      "\"tags_a\":{},\"tags_b\":{},\"untagged_a\":{},\"untagged_b\":{},\"box_rects_a\":{},\"box_rects_b\":{},"
      "\"banners_a\":{},\"banners_b\":{},\"banners_clipped_a\":{},\"banners_clipped_b\":{},\"tab\":\"{}\",\"order_first\":\"{}\",\"window\":{}}}\n",
      label, s.a, s.b, s.found, s.differing, s.only_a, s.only_b, s.marked_a, s.marked_b, s.order_rows, s.order_rows_drawn, s.boxes_a,
      s.boxes_b, g.view_a ? rect_json(g.view_a->stats().content) : "[0,0,0,0]",
      g.view_b ? rect_json(g.view_b->stats().content) : "[0,0,0,0]", rects_json(s.tags_a), rects_json(s.tags_b),
      s.untagged_a, s.untagged_b, rects_json(g.view_a ? g.view_a->stats().box_rects : std::vector<Rect>{}),
      rects_json(g.view_b ? g.view_b->stats().box_rects : std::vector<Rect>{}), banners_json(g.view_a.get()),
      banners_json(g.view_b.get()), banners_clipped_json(g.view_a.get()), banners_clipped_json(g.view_b.get()), kCompareTabs[std::clamp(g.tab, 0, 3)], first, rect_json(s.window));
  if (std::FILE* out = std::fopen(path, "w")) {
    std::fwrite(json.data(), 1, json.size(), out);
    std::fclose(out);
  }
}

std::string step_text(const analysis::OrderStep& s) { return (s.fire ? "fire " : "add ") + s.hook; }

}  // namespace

// B to the point matching A's current event; the differences there.
void App::compare_sync() {
  CompareGraphs& g = compare_graphs_;
  const analysis::Model* a = session_.model();
  const analysis::Model* b = compare_.model.get();
  if (live() && g.model_b == b && g.model_a && g.model_a != a) {  // A grew (a live run): B stays
    g.model_a = a;
    g.sync = std::make_unique<analysis::CompareSync>(*a, *b);
    g.view_a->update_model(a);
    g.synced_for = SIZE_MAX;
    g.diffs = std::make_unique<analysis::PointDiffs>(session_.shared_model(), compare_.findings_a, compare_.model,
                                                     g.findings_b);
  }
  bool fresh = false;
  if (g.model_a != a || g.model_b != b) {
    const analysis::SyncBy by = g.by;
    const bool follow = g.follow;
    g = CompareGraphs{};
    g.by = by, g.follow = follow;
    g.model_a = a, g.model_b = b;
    g.sync = std::make_unique<analysis::CompareSync>(*a, *b);
    g.findings_b = compare_.findings.get();  // compare_.diff exists: they are in
    g.cursor_b = std::make_unique<analysis::Cursor>(*b);
    // Half a window each: a minimap column would take a third of the width
    // a rank's column needs to be whole at readable text (at 1280x800 it cut
    // A's columns mid-box); what is off the canvas the toolbar names.
    render::GraphViewOptions half;
    half.minimap = false;
    g.view_a = std::make_unique<render::GraphView>(half);
    g.view_b = std::make_unique<render::GraphView>(half);
    fresh = true;  // their models once B's event is known (below)
    g.diffs = std::make_unique<analysis::PointDiffs>(session_.shared_model(), compare_.findings_a, compare_.model,
                                                     g.findings_b);
  }
  if (g.follow && (g.synced_for != session_.current() || g.synced_by != g.by)) {
    g.point = g.sync->match(session_.current(), g.by);
    g.synced_for = session_.current();
    g.synced_by = g.by;
    if (b->num_events() > 0) g.cursor_b->seek(g.point.b);
  }
  if (fresh) {  // Note [One layout at open]: each side's one layout, of the event it shows first
    g.view_a->set_model(a, nullptr, nullptr, static_cast<analysis::EventIndex>(session_.current()));
    g.view_b->set_model(b, nullptr, nullptr, static_cast<analysis::EventIndex>(g.cursor_b->index()));
  }
  // Note [Differences off the UI thread]: a frame never waits for them but a
  // headless one that draws a picture or a report (--bench-frames measures the interactive way).
  const size_t at_a = session_.current(), at_b = g.cursor_b->index();
  const bool wait = args_.headless_frames() && args_.bench_frames <= 0;
  std::shared_ptr<const analysis::PointDiff> landed = wait ? g.diffs->wait(at_a, at_b) : g.diffs->get(at_a, at_b);
  g.pending = !landed;
  CompareDrawStats& s = g.stats;
  s.label = g.point.label;
  s.a = at_a, s.b = at_b, s.found = g.point.found;
  if (landed && landed != g.shown) {
    g.shown = std::move(landed);
    s.differing = static_cast<uint32_t>(g.at_point().num_differing());
    s.only_a = s.only_b = 0;
    for (const analysis::FunctionCounts& fc : g.at_point().functions) {
      s.only_a += extra(fc.hooks_a, fc.hooks_b);
      s.only_b += extra(fc.hooks_b, fc.hooks_a);
    }
    s.order_rows = static_cast<uint32_t>(g.order().size());
  }
  if (const char* path = std::getenv("HOOKSCOPE_COMPARE_REPORT"); path && *path) write_report(g, path);
}

const analysis::ModelDiff& CompareGraphs::at_point() const {
  static const analysis::ModelDiff kNone;
  return shown ? shown->diff : kNone;
}

const std::vector<analysis::OrderDiff>& CompareGraphs::order() const {
  static const std::vector<analysis::OrderDiff> kNone;
  return shown ? shown->order : kNone;
}

bool App::compare_settled() const {
  if (args_.compare.empty()) return true;
  if (compare_.loader.busy()) return false;
  if (!compare_.model || !show_compare_ || !session_.model()) return true;
  const CompareGraphs& g = compare_graphs_;
  if (!compare_.diff || !g.view_a || g.pending) return false;
  if (compare_tab_asked() >= 0 && !compare_tab_shown_) return false;  // --compare-tab: not on screen yet
  if (g.tab != 0) return true;  // the graphs are not on screen
  return g.view_a->layout_ready() && !g.view_a->layout_pending() && g.view_b->layout_ready() &&
         !g.view_b->layout_pending();
}

// The sync controls, both graphs, the differences at the point.
void App::compare_graphs() {
  CompareGraphs& g = compare_graphs_;
  ImGui::TextUnformatted("B follows A:");
  ImGui::SameLine();
  int mode = !g.follow ? 2 : g.by == analysis::SyncBy::kStory ? 0 : 1;
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 16.f);
  if (ImGui::Combo("##sync", &mode, "at the same story step\0at the same event-kind ordinal\0no (B stays)\0")) {
    g.follow = mode != 2;
    if (mode != 2) g.by = mode == 0 ? analysis::SyncBy::kStory : analysis::SyncBy::kKindOrdinal;
  }
  ImGui::SameLine();
  // A's previous / next story point: where stepping by point goes.
  const auto& pts = g.sync->points_a();
  const size_t now = session_.current();
  const auto next = std::upper_bound(pts.begin(), pts.end(), now,
                                     [](size_t at, const analysis::StoryPoint& p) { return at < p.index; });
  const auto prev = std::lower_bound(pts.begin(), pts.end(), now,
                                     [](const analysis::StoryPoint& p, size_t at) { return p.index < at; });
  if (ImGui::ArrowButton("prev point", ImGuiDir_Left) && prev != pts.begin()) jump_to((prev - 1)->index);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A to its previous story point");
  ImGui::SameLine();
  if (ImGui::ArrowButton("next point", ImGuiDir_Right) && next != pts.end()) jump_to(next->index);
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("A to its next story point");
  ImGui::SameLine();
  const CompareDrawStats& s = g.stats;
  ImGui::Text("%s:  A #%zu  ->  B #%zu", g.point.label.empty() ? "-" : g.point.label.c_str(), s.a, s.b);
  if (!g.point.found) {
    ImGui::SameLine();
    ImGui::TextColored(col(palette().warning), "%s", g.point.why.c_str());
  }
  const float list_h = std::min(ImGui::GetContentRegionAvail().y * 0.25f, ImGui::GetTextLineHeightWithSpacing() * 7.f);
  const float width = (ImGui::GetContentRegionAvail().x - ImGui::GetStyle().ItemSpacing.x) * 0.5f;
  const float graph_h = ImGui::GetContentRegionAvail().y - list_h;
  ImGui::BeginChild("graph A", ImVec2(width, graph_h), true);
  compare_graph_side(false, width);
  ImGui::EndChild();
  ImGui::SameLine();
  ImGui::BeginChild("graph B", ImVec2(width, graph_h), true);
  compare_graph_side(true, width);
  ImGui::EndChild();
  compare_differences();
}

// One side's graph at its event, boxes whose hooks differ outlined with
// "+N only in A|B" (the Compare view's highlight, drawn over the view).
void App::compare_graph_side(bool side_b, float /*width*/) {
  CompareGraphs& g = compare_graphs_;
  render::GraphView& view = side_b ? *g.view_b : *g.view_a;
  const analysis::State* full = side_b ? &g.cursor_b->state() : full_state_or_pending(session_);
  if (!full) return;
  const analysis::State& state = *full;
  const uint32_t color = side_b ? compare_only_b() : compare_only_a();
  ImGui::TextColored(col(color), "%s", side_b ? "B" : "A");
  ImGui::SameLine();
  ImGui::TextDisabled("after event #%zu  (outlined: hooks only in %s)", state.index, side_b ? "B" : "A");
  if (side_b) {
    const render::GraphViewResult r = view.draw(state, g.selected_b, kNoIndex);
    if (r.selection_changed) g.selected_b = r.selected_function;
  } else {
    const render::GraphViewResult r = view.draw(state, session_.selected_function(), session_.selected_owner());
    if (r.selection_changed) {
      session_.select_function(r.selected_function);
      session_.select_owner(r.selected_owner);
    }
  }
  ImDrawList* dl = ImGui::GetWindowDrawList();
  uint32_t marked = 0;
  std::vector<Rect>& tags = side_b ? g.stats.tags_b : g.stats.tags_a;
  uint32_t& untagged = side_b ? g.stats.untagged_b : g.stats.untagged_a;
  tags.clear();
  untagged = 0;
  const Rect c = view.stats().content;  // outlines stay out of the header strip and the minimap's column
  dl->PushClipRect({c.x0, c.y0}, {c.x1, c.y1}, true);
  for (const analysis::FunctionCounts& fc : g.at_point().functions) {
    const uint32_t n = side_b ? extra(fc.hooks_b, fc.hooks_a) : extra(fc.hooks_a, fc.hooks_b);
    const analysis::FunctionIndex f = side_b ? fc.b : fc.a;
    render::Vec2 lo, hi;
    if (n == 0 || f == kNoIndex || !view.box_on_screen(f, &lo, &hi)) continue;
    ++marked;
    dl->AddRect({lo.x - 3.f, lo.y - 3.f}, {hi.x + 3.f, hi.y + 3.f}, color, 4.f, 0, 3.f);
    // Note [Compare tags]: the whole tag where it fits, else "+N" (the header says "only in A").
    std::optional<Rect> at;
    std::string tag;
    for (const std::string& text : {fmt::format("+{} only in {}", n, side_b ? "B" : "A"), fmt::format("+{}", n)}) {
      const ImVec2 ts = ImGui::CalcTextSize(text.c_str());
      at = place_tag(view, {lo.x, lo.y, hi.x, hi.y}, ts.x + 8.f, ts.y + 2.f, tags);
      tag = text;
      if (at) break;
    }
    if (!at) {
      ++untagged;
      continue;
    }
    tags.push_back(*at);
    dl->AddRectFilled({at->x0, at->y0}, {at->x1, at->y1}, color, 3.f);
    dl->AddText({at->x0 + 4.f, at->y0 + 1.f}, render::ink_on(color), tag.c_str());
  }
  dl->PopClipRect();
  (side_b ? g.stats.marked_b : g.stats.marked_a) = marked;
  (side_b ? g.stats.boxes_b : g.stats.boxes_a) = view.stats().boxes;
}

// The Functions whose hooks differ at the point: kind by kind, A | B.
void App::compare_differences() {
  CompareGraphs& g = compare_graphs_;
  const analysis::ModelDiff& d = g.at_point();
  const size_t differing = g.stats.differing;  // d.num_differing(), counted when it landed
  if (g.shown && !g.shown->error.empty()) {
    ImGui::TextColored(col(palette().alarm), "could not compare here: %s", g.shown->error.c_str());
    return;
  }
  if (g.pending) {
    ImGui::TextDisabled("comparing A #%zu with B #%zu ... (showing A #%zu, B #%zu)", g.stats.a, g.stats.b,
                        g.shown ? g.shown->at_a : 0, g.shown ? g.shown->at_b : 0);
    if (!g.shown) return;
    ImGui::SameLine();
  }
  if (differing == 0) {
    ImGui::TextColored(col(render::rgba(110, 200, 120)), "Same hooks on every Function at this point.");
    return;
  }
  ImGui::Text("%zu Functions differ here: %u hooks only in A, %u only in B", differing, g.stats.only_a,
              g.stats.only_b);
  // Note [Compare tags]: outlined boxes whose tag found no free place, counted here.
  const uint32_t untagged = g.stats.untagged_a + g.stats.untagged_b;
  if (untagged > 0) {
    ImGui::SameLine();
    ImGui::TextDisabled("(%u outlined box%s without a tag: %u in A, %u in B; all listed below)", untagged,
                        untagged == 1 ? "" : "es", g.stats.untagged_a, g.stats.untagged_b);
  }
  if (!ImGui::BeginTable("differences", 4, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg |
                                                ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingFixedFit)) {
    return;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("only in A");
  ImGui::TableSetupColumn("only in B");
  ImGui::TableSetupColumn("hooks by kind, A | B", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;  // differing first: rows [0, differing)
  clipper.Begin(static_cast<int>(differing));
  while (clipper.Step()) {
  for (size_t i = static_cast<size_t>(clipper.DisplayStart); i < static_cast<size_t>(clipper.DisplayEnd); ++i) {
    const analysis::FunctionCounts& fc = d.functions[i];
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(i));
    if (ImGui::Selectable(fc.function.c_str(), fc.a != kNoIndex && fc.a == session_.selected_function(),
                          ImGuiSelectableFlags_SpanAllColumns)) {
      if (fc.a != kNoIndex) select_function(fc.a), g.view_a->focus(fc.a);
      if (fc.b != kNoIndex) g.selected_b = fc.b, g.view_b->focus(fc.b);
    }
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::TextColored(col(compare_only_a()), "%u", extra(fc.hooks_a, fc.hooks_b));
    ImGui::TableNextColumn();
    ImGui::TextColored(col(compare_only_b()), "%u", extra(fc.hooks_b, fc.hooks_a));
    ImGui::TableNextColumn();
    std::string kinds;
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      const uint32_t a = fc.hooks_a[static_cast<size_t>(k)], b = fc.hooks_b[static_cast<size_t>(k)];
      if (a || b) kinds += fmt::format("{}{} {} | {}", kinds.empty() ? "" : ",  ", trace::to_string(static_cast<trace::HookKind>(k)), a, b);
    }
    ImGui::TextUnformatted(kinds.c_str());
  }
  }
  ImGui::EndTable();
}

// The order hooks were added and fired on each Function up to the point, A
// vs B, from the first step where they differ.
void App::compare_order_table() {
  CompareGraphs& g = compare_graphs_;
  ImGui::PushTextWrapPos(0.f);  // wrapped, never cut at the panel's edge
  ImGui::TextDisabled("Up to A #%zu and B #%zu (%s): the add/fire sequence of each Function, from the first "
                      "step that differs. Hooks are named by kind and registration order, owners by kind and "
                      "order on their rank (keys differ between runs).",
                      g.shown ? g.shown->at_a : g.stats.a, g.shown ? g.shown->at_b : g.stats.b, g.point.label.c_str());
  ImGui::PopTextWrapPos();
  if (g.order().empty()) {
    ImGui::TextColored(col(render::rgba(110, 200, 120)), "Every Function's hooks were added and fired in the same order.");
    return;
  }
  constexpr size_t kShown = 8;  // steps from the first difference
  if (!ImGui::BeginTable("order", 4, ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                                         ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_Resizable)) {
    return;
  }
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("Function");
  ImGui::TableSetupColumn("step");
  ImGui::TableSetupColumn("A", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("B", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  auto steps = [&](const std::vector<analysis::OrderStep>& mine, const std::vector<analysis::OrderStep>& theirs,
                   size_t from, uint32_t color) {
    ImGui::TableNextColumn();
    if (from >= mine.size()) ImGui::TextDisabled("(ends after %zu steps)", mine.size());
    for (size_t i = from; i < mine.size() && i < from + kShown; ++i) {
      const bool same = i < theirs.size() && theirs[i] == mine[i];
      const std::string t = step_text(mine[i]);
      if (same) ImGui::TextDisabled("%zu  %s", i + 1, t.c_str());
      else ImGui::TextColored(col(color), "%zu  %s", i + 1, t.c_str());
    }
    if (mine.size() > from + kShown) ImGui::TextDisabled("... %zu more", mine.size() - from - kShown);
  };
  // Rows differ in height (1 to kShown + 1 lines): a clipper of our own over
  // their heights draws only the rows in view, with one spacer row per side.
  const auto& order = g.order();
  const ImGuiStyle& style = ImGui::GetStyle();
  const float line = ImGui::GetTextLineHeight();
  auto lines = [&](const std::vector<analysis::OrderStep>& mine, size_t from) {
    if (from >= mine.size()) return size_t{1};
    return std::min(mine.size() - from, kShown) + (mine.size() > from + kShown ? 1 : 0);
  };
  auto row_height = [&](const analysis::OrderDiff& d) {
    const auto n = static_cast<float>(std::max(lines(d.steps_a, d.position), lines(d.steps_b, d.position)));
    return n * line + (n - 1.f) * style.ItemSpacing.y + 2.f * style.CellPadding.y;
  };
  const float view_top = ImGui::GetScrollY(), view_bottom = view_top + ImGui::GetWindowHeight();
  float y = ImGui::GetTextLineHeightWithSpacing();  // under the header row
  size_t r = 0;
  float skipped = 0.f;
  for (; r < order.size() && y + row_height(order[r]) < view_top; ++r) {
    skipped += row_height(order[r]);
    y += row_height(order[r]);
  }
  if (skipped > 0.f) ImGui::TableNextRow(ImGuiTableRowFlags_None, skipped);
  compare_graphs_.stats.order_rows_drawn = 0;
  compare_graphs_.stats.order_first = r < order.size() ? order[r].function : std::string();
  for (; r < order.size() && y <= view_bottom; ++r) {
    const analysis::OrderDiff& d = order[r];
    y += row_height(d);
    ++compare_graphs_.stats.order_rows_drawn;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::PushID(static_cast<int>(r));
    if (ImGui::Selectable(d.function.c_str(), d.a != kNoIndex && d.a == session_.selected_function()) && d.a != kNoIndex) {
      select_function(d.a);
    }
    ImGui::PopID();
    ImGui::TableNextColumn();
    ImGui::Text("%zu", d.position + 1);
    steps(d.steps_a, d.steps_b, d.position, compare_only_a());
    steps(d.steps_b, d.steps_a, d.position, compare_only_b());
  }
  float rest = 0.f;
  for (; r < order.size(); ++r) rest += row_height(order[r]);
  if (rest > 0.f) ImGui::TableNextRow(ImGuiTableRowFlags_None, rest);
  ImGui::EndTable();
}

}  // namespace hookscope::app
