// The draw report of headless screenshots (Note [Draw report]).
#include <fmt/format.h>

#include <cstdio>

#include "app.h"

namespace hookscope::app {

// Note [Draw report]: what the last frame drew, measured, for tests (the
// screenshot tests read it beside the PNG: HOOKSCOPE_DRAW_REPORT=FILE).
bool App::write_draw_report(const std::string& path) const {
  const render::GraphDrawStats& g = graph_.stats();
  auto rect = [](const render::GraphDrawStats::Rect& r) { return fmt::format("[{},{},{},{}]", r.x0, r.y0, r.x1, r.y1); };
  std::string boxes, columns, captions, banners, tags;
  for (const auto& r : g.box_rects) boxes += (boxes.empty() ? "" : ",") + rect(r);
  for (const auto& r : g.tag_rects) tags += (tags.empty() ? "" : ",") + rect(r);
  for (const auto& [rank, r] : g.rank_columns) {
    columns += fmt::format("{}{{\"rank\":{},\"rect\":{}}}", columns.empty() ? "" : ",", rank, rect(r));
  }
  for (const auto& [rank, r] : g.captions) {  // Note [Banner rows]: every column on screen names its rank
    captions += fmt::format("{}{{\"rank\":{},\"rect\":{}}}", captions.empty() ? "" : ",", rank, rect(r));
  }
  for (size_t i = 0; i < g.banners.size(); ++i) {
    banners += fmt::format("{}{{\"rank\":{},\"failed\":{},\"clipped\":{},\"rect\":{}}}", banners.empty() ? "" : ",",
                           g.banners[i].first, g.banner_failed[i] ? "true" : "false",
                           g.banner_clipped[i] ? "true" : "false", rect(g.banners[i].second));
  }
  // Labels come from the trace: a JSON list of strings, quotes and backslashes escaped, controls as '?'.
  auto quote = [](const std::string& w) {
    std::string quoted = "\"";
    for (char c : w) {
      if (c == '"' || c == '\\') quoted += '\\';
      quoted += static_cast<unsigned char>(c) < 0x20 ? '?' : c;
    }
    return quoted + '"';
  };
  auto strings = [&](const std::vector<std::string>& words) {
    std::string list;
    for (const std::string& w : words) list += (list.empty() ? "" : ",") + quote(w);
    return list;
  };
  // The Diagnostics panel's messages (findings come from the trace: quoted).
  const DiagnosticsDrawn& dd = diagnostics_view_.drawn;
  std::string diag_rows;
  for (const DiagnosticsDrawn::Row& r : dd.rows) {
    diag_rows += fmt::format("{}{{\"kind\":{},\"text\":{},\"rect\":[{},{},{},{}],\"wrapped\":{}}}",
                             diag_rows.empty() ? "" : ",", quote(r.kind), quote(r.text), r.x0, r.y0, r.x1, r.y1,
                             r.wrapped ? "true" : "false");
  }
  const std::string diagnostics = fmt::format("{{\"area\":[{},{},{},{}],\"line_h\":{},\"rows\":[{}]}}", dd.x0,
                                              dd.y0, dd.x1, dd.y1, dd.line_h, diag_rows);
  const std::string reducers = strings(reducer_words_);  // Note [Lingering owners]: the Reducers panel's words
  const render::TimelineDrawStats& t = timeline_.stats();
  std::string gaps;  // Note [Idle gaps]: labels are ours (durations, event kind and collective names)
  for (const render::TimelineGapDraw& d : t.gaps) {
    gaps += fmt::format("{}{{\"x0\":{},\"x1\":{},\"collapsed\":{},\"events\":{},\"label\":\"{}\",\"label_rect\":[{},{},{},{}]}}",
                        gaps.empty() ? "" : ",", d.x0, d.x1, d.collapsed ? "true" : "false", d.events, d.label, d.lx0, d.ly0,
                        d.lx1, d.ly1);
  }
  // Per box: its slot's Function name ("" for a folded group), to find a
  // Node's box (the module hooks' chips: Note [Module hook anchors]).
  std::vector<std::string> box_names;
  const render::FoldedGraph* fg = graph_.folded_graph();
  const render::GraphScene* scene = graph_.scene();
  for (uint32_t u : g.box_units) {
    const uint32_t slot = fg && u < fg->node_of_unit.size() ? fg->node_of_unit[u] : render::kNoSlot;
    box_names.push_back(slot == render::kNoSlot || !scene ? std::string()
                                                          : scene->model().str(scene->nodes()[slot].name));
  }
  std::string chip_kinds;  // per box: a bit per hook kind it shows chips of
  for (uint16_t k : g.box_chip_kinds) chip_kinds += fmt::format("{}{}", chip_kinds.empty() ? "" : ",", k);
  std::string lost_labels;
  for (float x : t.lost_label_x) lost_labels += fmt::format("{}{}", lost_labels.empty() ? "" : ",", x);
  std::string marker_lines;  // each marker's kind and x, its triangle's top
  for (const render::TimelineDrawStats::MarkerDraw& d : t.marker_lines) {
    marker_lines += fmt::format("{}{{\"kind\":\"{}\",\"x\":{},\"top\":{}}}", marker_lines.empty() ? "" : ",", d.kind,
                                d.x, d.top);
  }
  std::string track_rows;  // each track's rows on screen, top and bottom
  for (const auto& [y0, y1] : t.track_y) track_rows += fmt::format("{}[{},{}]", track_rows.empty() ? "" : ",", y0, y1);
  const render::TimelineView::Click& c = timeline_.last_click();
  const std::string click = c.event == SIZE_MAX ? "null"
                                                 : fmt::format("{{\"x\":{},\"y\":{},\"t\":{},\"event\":{}}}", c.x, c.y,
                                                               static_cast<int64_t>(c.t), c.event);
  std::string marker_labels;  // Note [Timeline markers]: each label's x extent
  for (const auto& [x0, x1] : t.marker_label_x) {
    marker_labels += fmt::format("{}[{},{}]", marker_labels.empty() ? "" : ",", x0, x1);
  }
  const std::string json = fmt::format(
      "{{\"event\":{},\"compact\":{},\"zoom\":{},\"min_text_px\":{},\"small_texts\":{},\"texts\":{},"
      "\"boxes\":[{}],\"box_names\":[{}],\"box_chip_kinds\":[{}],\"hidden_chips\":{},\"rank_columns\":[{}],\"captions\":[{}],\"banners\":[{}],\"banner_more\":{},\"minimap_shown\":{},\"minimap\":{},"
      "\"content\":{},\"stale_chips\":{},\"ghost_chips\":{},\"removal_boxes\":{},\"alarms\":{},"
      "\"timeline_markers\":{},\"timeline_marker_labels\":{},\"timeline_marker_label_x\":[{}],\"timeline_marker_lines\":[{}],\"timeline_gaps\":[{}],\"timeline_lost_labels\":[{}],\"timeline_legend\":[{}],\"timeline_plot\":[{},{}],\"timeline_training\":[{},{}],"
      "\"timeline_tracks\":{},\"timeline_track_y\":[{}],\"timeline_click\":{},\"off_canvas\":\"{}\",\"focus_on_canvas\":{},\"current_box\":{},\"live_units\":{},\"layout_units\":{},\"gen_labels\":{},"
      "\"layout\":[{},{}],\"legend\":{{\"entries\":{},\"more\":{},\"lines\":{},\"gens\":{},\"right\":{},"
      "\"panel_right\":{},\"names\":[{}]}},\"lingering\":{{\"boxes\":{},\"tags\":{},\"legend\":{}}},\"tag_rects\":[{}],\"reducers\":[{}],\"reducer_summary_overflow\":{},\"diagnostics\":{}}}\n",
      session_.current(), graph_.compact() ? "true" : "false", graph_.zoom(), g.min_text_px, g.small_texts, g.texts,
      boxes, strings(box_names), chip_kinds, g.hidden_chips, columns, captions, banners, rect(g.banner_more), g.minimap_shown ? "true" : "false", rect(g.minimap), rect(g.content), g.stale_chips,
      g.ghost_chips, g.removal_boxes, g.alarms, t.markers, t.marker_labels, marker_labels, marker_lines, gaps, lost_labels, strings(t.legend), t.plot_x0, t.plot_x1, t.first_backward_x, t.last_event_x,
      t.track_y.size(), track_rows, click, g.off_canvas, g.focus_on_canvas ? "true" : "false",
      g.has_current ? rect(g.current) : std::string("null"), g.live_units, g.layout_units, g.gen_labels,
      g.layout_w, g.layout_h, g.legend_entries, g.legend_more, g.legend_lines, g.legend_gens, g.legend_right,
      g.panel_right, strings(g.legend_names), g.lingering, g.lingering_tags, g.legend_lingering, tags, reducers, reducer_summary_right_, diagnostics);
  std::FILE* out = std::fopen(path.c_str(), "w");
  if (!out) return false;
  const bool ok = std::fwrite(json.data(), 1, json.size(), out) == json.size();
  return std::fclose(out) == 0 && ok;
}

}  // namespace hookscope::app
