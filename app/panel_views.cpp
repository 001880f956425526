// The views panels (Lanes, Readiness, "Why did this fire?"): where they go,
// their View menu entries, `--panel NAME` (the named panel shown and brought
// to the front, for headless screenshots) and what they drew, for tests
// (HOOKSCOPE_VIEWS_REPORT=FILE: written every frame while set).
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>

#include "app.h"

namespace hookscope::app {

namespace {

// --panel names of the app's other windows, and their titles.
struct NamedWindow {
  const char* name;
  const char* title;
};
constexpr NamedWindow kWindows[] = {
    {"graph", "Graph"},         {"function", "Function"}, {"reducers", "Reducers"},
    {"timeline", "Timeline"},   {"events", "Events"},     {"diagnostics", "Diagnostics"},
    {"compare", "Compare"},     {"lanes", "Lanes"},       {"readiness", "Readiness"},
    {"explain", "Why did this fire?"},
};

const char* title_of(const std::string& name) {
  for (const NamedWindow& w : kWindows) {
    if (name == w.name) return w.title;
  }
  return nullptr;
}

// A JSON string's inside: names in these texts come from the trace.
std::string quoted(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
  }
  return out;
}

void write_report(const ViewsDrawStats& s, const char* path) {
  auto rect = [](const ViewsDrawStats::Rect& r) { return fmt::format("[{},{},{},{}]", r.x0, r.y0, r.x1, r.y1); };
  const std::string json = fmt::format(
      "{{\"lanes\":{},\"counter\":{},\"readiness\":{},\"lane_rows\":{},\"bars\":{},\"dead_segments\":{},"
      "\"ticks\":{},\"stale_ticks\":{},\"cells\":{},\"cell_status\":[{},{},{},{},{},{}],"
      "\"readiness_refused\":{},\"explain_verdict\":\"{}\",\"explain_steps\":{},\"explain_links\":{},"
      "\"readiness_headers\":{},\"lane_headers\":{},\"ranked_lane_headers\":{},\"lingering_segments\":{},"
      "\"lanes_summary\":\"{}\",\"explain_summary\":\"{}\"}}\n",
      rect(s.lanes), rect(s.counter), rect(s.readiness), s.lane_rows, s.bars, s.dead_segments, s.ticks, s.stale_ticks,
      s.cells, s.cell_status[0], s.cell_status[1], s.cell_status[2], s.cell_status[3], s.cell_status[4],
      s.cell_status[5], !s.readiness_error.empty(), s.explain_verdict, s.explain_steps, s.explain_links,
      s.readiness_headers, s.headers, s.ranked_headers, s.lingering_segments, quoted(s.lanes_summary),
      quoted(s.explain_summary));
  if (std::FILE* out = std::fopen(path, "w")) {
    std::fwrite(json.data(), 1, json.size(), out);
    std::fclose(out);
  }
}

}  // namespace

void App::draw_view_panels() {
  ViewPanels& v = views_;
  if (!v.panel_applied) {
    v.panel_applied = true;
    if (!args_.panel.empty()) {
      v.show_lanes |= args_.panel == "lanes";
      v.show_readiness |= args_.panel == "readiness";
      v.show_explain |= args_.panel == "explain";
      show_compare_ |= args_.panel == "compare";
      v.focus_frames = 8;
    }
  }
  const char* front = v.focus_frames > 0 ? title_of(args_.panel) : nullptr;
  auto focus_if = [&](const char* title) {
    if (front && std::string_view(front) == title) ImGui::SetNextWindowFocus();
  };
  // Over the graph, the right column and the timeline, all of them: the
  // lanes and the map need the width, and no other panel shows a fragment.
  constexpr float kViewsH = kLayoutTop + kLayoutTimeline;  // Note [Default layout]
  if (v.show_lanes) {
    place(0.f, 0.f, 1.f, kViewsH);
    focus_if("Lanes");
    ImGui::SetNextWindowBgAlpha(1.f);  // over other panels: nothing shows through
    draw_lanes_panel();
  }
  if (v.show_readiness) {
    place(0.f, 0.f, 1.f, kViewsH);
    focus_if("Readiness");
    ImGui::SetNextWindowBgAlpha(1.f);  // over other panels: nothing shows through
    draw_readiness_panel();
  }
  // Over the Function and Reducers panels (the right column): the chain needs the height.
  if (v.show_explain) {
    place(kLayoutLeft, 0.f, 1.f - kLayoutLeft, kLayoutTop);
    focus_if("Why did this fire?");
    ImGui::SetNextWindowBgAlpha(1.f);  // over other panels: nothing shows through
    draw_explain_panel();
  }
  if (front && std::string_view(front) != "Lanes" && std::string_view(front) != "Readiness" &&
      std::string_view(front) != "Why did this fire?") {
    ImGui::SetWindowFocus(front);
  }
  // Counted down once what was asked for is on screen.
  if (v.focus_frames > 0 && settled()) --v.focus_frames;
  if (const char* path = std::getenv("HOOKSCOPE_VIEWS_REPORT"); path && *path) write_report(v.stats, path);
}

void App::show_every_panel() {
  views_.show_lanes = views_.show_readiness = views_.show_explain = true;
  show_compare_ = true;
}

void App::draw_view_menu_items() {
  ImGui::MenuItem("Lanes (hook lifetimes)", nullptr, &views_.show_lanes);
  ImGui::MenuItem("Readiness (DDP map)", nullptr, &views_.show_readiness);
  ImGui::MenuItem("Why did this fire?", nullptr, &views_.show_explain);
}

}  // namespace hookscope::app
