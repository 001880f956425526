// Readiness panel: the DDP readiness map (analysis/readiness.h, Note
// [Readiness map]). Per rank a grid, parameters down, backward passes
// across, ranks side by side with one cell width for all, so that a
// parameter unused on one rank only stands out in its row. A cell's colour is
// its status (the legend counts them); hovering names the parameter, the
// pass and the status; a click goes to the event that proves it.
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <new>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"
#include "view_colors.h"

namespace hookscope::app {

namespace {

using analysis::kNever;
using analysis::Readiness;
using render::palette;

constexpr float kNameWidth = 170.f;
constexpr float kGap = 18.f;

const char* status_words(Readiness r) {
  switch (r) {
    case Readiness::kNoDdp: return "no Reducer prepared for this pass";
    case Readiness::kOk: return "marked ready once (ok)";
    case Readiness::kUnused: return "never marked ready: reported unused";
    case Readiness::kTwice: return "marked ready twice";
    case Readiness::kStale: return "a destroyed Reducer's hook fired on it (stale)";
    case Readiness::kNotReached: return "not reached: a failure cut the pass short";
  }
  return "?";
}

using Go = std::optional<std::pair<size_t, analysis::FunctionIndex>>;

// Legend, with how many cells of each status. Returns the backward passes of all ranks.
size_t readiness_legend(const std::vector<analysis::ReadinessGrid>& grids) {
  size_t counts[6] = {};
  size_t total_backwards = 0;
  for (const auto& g : grids) {
    for (const auto& c : g.cells) ++counts[static_cast<int>(c.status)];
    total_backwards += g.backwards.size();
  }
  for (int k : {1, 2, 3, 4, 5, 0}) {
    const auto r = static_cast<Readiness>(k);
    const ImVec2 p = ImGui::GetCursorScreenPos();
    const float side = ImGui::GetTextLineHeight() * 0.8f;
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + 2.f), ImVec2(p.x + side, p.y + 2.f + side), readiness_color(r));
    ImGui::Dummy(ImVec2(side + 2.f, side));
    ImGui::SameLine();
    ImGui::Text("%s %zu", std::string(analysis::to_string(r)).c_str(), counts[k]);
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", status_words(r));
    ImGui::SameLine(0.f, 14.f);
  }
  ImGui::NewLine();
  return total_backwards;
}

// Where the grids go in the child window: one cell size for all.
struct GridPlace {
  ImDrawList* dl;
  float line, cw, ch;
  float top;                     // of the title line
  float header_top;              // of the backward passes' numbers
  float grid_top;                // of the first row of cells
  float clip_top, clip_bottom;   // the child's visible band
  float clip_left, clip_right;
};

// One grid's visible cells: the parameter's name, then a cell per backward
// pass, only those in the child's visible band (a wide map has more columns
// than a draw list can index).
void readiness_rows(const analysis::ReadinessGrid& g, float x, float cx0, const GridPlace& at, ViewsDrawStats& s) {
  const size_t nb = g.backwards.size(), np = g.parameters.size();
  const float ch = at.ch, cw = at.cw, line = at.line, grid_top = at.grid_top;
  ImDrawList* dl = at.dl;
  const size_t first = static_cast<size_t>(std::max(0.f, (at.clip_top - grid_top) / ch));
  const size_t last = std::min(np, static_cast<size_t>(std::max(0.f, (at.clip_bottom - grid_top) / ch)) + 1);
  const size_t first_b = static_cast<size_t>(std::max(0.f, (at.clip_left - cx0) / cw));
  const size_t last_b = std::min(nb, static_cast<size_t>(std::max(0.f, (at.clip_right - cx0) / cw)) + 1);
  for (size_t p = first; p < last; ++p) {
    const float y = grid_top + p * ch;
    dl->PushClipRect(ImVec2(x, y), ImVec2(cx0 - 4.f, y + ch), true);
    const std::string& name = g.parameters[p].name;
    dl->AddText(ImVec2(x, y + (ch - line) * 0.5f), palette().text_dim, name.c_str(),
                name.c_str() + drawable_length(name));
    dl->PopClipRect();
    for (size_t b = first_b; b < last_b; ++b) {
      const analysis::ReadinessCell& c = g.cell(p, b);
      const float cx = cx0 + b * cw;
      dl->AddRectFilled(ImVec2(cx, y), ImVec2(cx + std::max(1.f, cw - 1.f), y + ch - 1.f), readiness_color(c.status));
      ++s.cells;
      ++s.cell_status[static_cast<int>(c.status)];
    }
  }
}

// The current event's pass, outlined.
void readiness_current_pass(const analysis::ReadinessGrid& g, float cx0, const GridPlace& at, size_t now) {
  const size_t nb = g.backwards.size(), np = g.parameters.size();
  for (size_t b = 0; b < nb; ++b) {
    const auto& col = g.backwards[b];
    const size_t from = col.prepared_at != kNever ? col.prepared_at : col.begin;
    if (now >= from && (col.end == kNever || now <= col.end)) {
      const float cx = cx0 + b * at.cw;
      at.dl->AddRect(ImVec2(cx - 1.f, at.grid_top - 1.f), ImVec2(cx + at.cw, at.grid_top + np * at.ch), palette().selected,
                     0.f, 0, 1.5f);
    }
  }
}

// Cell (p, b)'s tooltip: parameter, pass, status; true when clicking it goes somewhere.
bool readiness_cell_tooltip(const analysis::Model& m, const analysis::ReadinessGrid& g, size_t p, size_t b) {
  const analysis::ReadinessCell& c = g.cell(p, b);
  const auto& col = g.backwards[b];
  ImGui::BeginTooltip();
  ImGui::Text("rank %u, %s", static_cast<unsigned>(g.rank), drawable(g.parameters[p].name).c_str());
  ImGui::Text("backward pass %zu (#%u .. %s)%s", b + 1, col.begin,
              col.end == kNever ? "never ended" : fmt::format("#{}", col.end).c_str(), col.completed ? "" : ", cut short");
  if (col.reducer != analysis::kNoIndex) {
    ImGui::Text("prepared by %s", m.owner_name(m.reducers()[col.reducer].owner).c_str());
  }
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(readiness_color(c.status)), "%s: %s",
                     std::string(analysis::to_string(c.status)).c_str(), status_words(c.status));
  ImGui::Text("marks %llu, stale fires %llu, no-op fires %llu", static_cast<unsigned long long>(c.marks),
              static_cast<unsigned long long>(c.stale), static_cast<unsigned long long>(c.noops));
  if (c.event != kNever) ImGui::TextDisabled("click: go to #%u (%s)", c.event, m.describe(c.event).c_str());
  ImGui::EndTooltip();
  return c.event != kNever;
}

// One button over grid `gi`'s cells; the cell under the mouse from its position.
void readiness_hover(const analysis::Model& m, const analysis::ReadinessGrid& g, size_t gi, float cx0,
                     const GridPlace& at, Go& go) {
  const size_t nb = g.backwards.size(), np = g.parameters.size();
  ImGui::SetCursorScreenPos(ImVec2(cx0, at.grid_top));
  ImGui::PushID(static_cast<int>(gi));
  ImGui::InvisibleButton("##cells", ImVec2(std::max(1.f, nb * at.cw), std::max(1.f, np * at.ch)));
  if (ImGui::IsItemHovered() && nb > 0 && np > 0) {
    const ImVec2 mp = ImGui::GetIO().MousePos;
    const size_t b = std::min(nb - 1, static_cast<size_t>(std::max(0.f, (mp.x - cx0) / at.cw)));
    const size_t p = std::min(np - 1, static_cast<size_t>(std::max(0.f, (mp.y - at.grid_top) / at.ch)));
    const bool goes = readiness_cell_tooltip(m, g, p, b);
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left) && goes) {
      go = {{g.cell(p, b).event, g.parameters[p].accumulator}};
    }
  }
  ImGui::PopID();
}

// The columns' header: each visible backward pass's number (1 = the rank's
// first), as many as fit without touching, the current pass's always.
void readiness_header(const analysis::ReadinessGrid& g, float x, float cx0, const GridPlace& at, size_t now,
                      ViewsDrawStats& s) {
  const size_t nb = g.backwards.size();
  at.dl->AddText(ImVec2(x, at.header_top), palette().text_dim, "backward pass");
  float next_x = cx0;  // where the next label may start
  char buf[24];
  // Only the columns in the child's visible band, as readiness_rows.
  const size_t first_b = static_cast<size_t>(std::max(0.f, (at.clip_left - cx0) / at.cw));
  const size_t last_b = std::min(nb, static_cast<size_t>(std::max(0.f, (at.clip_right - cx0) / at.cw)) + 1);
  for (size_t b = first_b; b < last_b; ++b) {
    const auto& col = g.backwards[b];
    const size_t from = col.prepared_at != kNever ? col.prepared_at : col.begin;
    const bool current = now >= from && (col.end == kNever || now <= col.end);
    const int len = std::snprintf(buf, sizeof buf, "%zu", b + 1);
    const float w = ImGui::CalcTextSize(buf, buf + len).x;
    const float cx = cx0 + b * at.cw + (at.cw - w) * 0.5f;  // centred on its column
    if (cx < next_x && !current) continue;
    at.dl->AddText(ImVec2(std::max(cx, cx0), at.header_top), current ? palette().selected : palette().text_dim, buf,
                   buf + len);
    next_x = std::max(cx, cx0) + w + 4.f;
    ++s.readiness_headers;
  }
}

// Grid `gi` at `x`: title, rows, the current pass and the hover button. Returns its width.
float readiness_grid(const analysis::Model& m, const analysis::ReadinessGrid& g, size_t gi, float x,
                     const GridPlace& at, size_t now, ViewsDrawStats& s, Go& go) {
  const size_t nb = g.backwards.size(), np = g.parameters.size();
  const std::string title = fmt::format("rank {}: {} parameters x {} backward passes", g.rank, np, nb);
  at.dl->AddText(ImVec2(x, at.top), palette().text, title.c_str());
  const float cx0 = x + kNameWidth;
  readiness_header(g, x, cx0, at, now, s);
  readiness_rows(g, x, cx0, at, s);  // only the visible rows are drawn
  readiness_current_pass(g, cx0, at, now);
  readiness_hover(m, g, gi, cx0, at, go);
  return std::max(kNameWidth + nb * at.cw, ImGui::CalcTextSize(title.c_str()).x);
}

}  // namespace

void App::draw_readiness_panel() {
  ViewPanels& v = views_;
  const analysis::Model* m = session_.model();
  if (!begin_trace_panel("Readiness", &v.show_readiness, m)) return;
  if (v.readiness_model != m) {
    v.grids.clear();
    v.readiness_error.clear();
    v.readiness_model = m;
    // a hostile trace's map may not fit (Note [Readiness map size]): say so here, never abort
    try {
      v.grids = analysis::readiness_grids(*m);
    } catch (const analysis::ReadinessTooLarge& e) {
      v.readiness_error = e.what();
    } catch (const std::bad_alloc&) {
      v.readiness_error = "out of memory while building the readiness map; close other traces or give "
                          "hookscope more memory";
    }
  }
  ViewsDrawStats& s = v.stats;
  s.cells = 0;
  s.readiness_headers = 0;
  std::fill(std::begin(s.cell_status), std::end(s.cell_status), 0u);
  s.readiness_error = v.readiness_error;
  if (!v.readiness_error.empty()) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().alarm), "No readiness map:");
    ImGui::TextWrapped("%s", v.readiness_error.c_str());
    ImGui::End();
    return;
  }
  if (v.grids.empty()) {
    ImGui::TextDisabled("No DDP Reducer in this trace: nothing to map.");
    ImGui::End();
    return;
  }
  const size_t total_backwards = readiness_legend(v.grids);

  ImGui::BeginChild("##readiness_grids", ImVec2(0.f, 0.f), false, ImGuiWindowFlags_HorizontalScrollbar);
  const float line = ImGui::GetTextLineHeight();
  const float avail = ImGui::GetContentRegionAvail().x;
  const size_t ranks = v.grids.size();
  // One cell width for every grid: the map fits the panel when it can.
  const float cw = std::clamp((avail - ranks * (kNameWidth + kGap)) / std::max<float>(1.f, total_backwards), 3.f, 22.f);
  const float ch = std::clamp(line, 6.f, 18.f);
  const ImVec2 origin = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 clip_min = ImGui::GetWindowPos();
  const float clip_bottom = clip_min.y + ImGui::GetWindowSize().y;
  const float clip_right = clip_min.x + ImGui::GetWindowSize().x;
  Go go;
  float x = origin.x;
  float right = origin.x, bottom = origin.y;
  const float header_top = origin.y + line + 4.f;
  const float grid_top = header_top + line + 2.f;
  const GridPlace at{dl, line, cw, ch, origin.y, header_top, grid_top, clip_min.y, clip_bottom,
                     clip_min.x, clip_right};
  const size_t now = session_.current();
  for (size_t gi = 0; gi < ranks; ++gi) {
    const analysis::ReadinessGrid& g = v.grids[gi];
    const float w = readiness_grid(*m, g, gi, x, at, now, s, go);
    right = std::max(right, x + w);
    bottom = std::max(bottom, grid_top + g.parameters.size() * ch);
    x += w + kGap;
  }
  s.readiness = {origin.x, grid_top, right, std::min(bottom, clip_bottom)};
  // Tell the child how big the map is (scrollbars).
  ImGui::SetCursorScreenPos(origin);
  ImGui::Dummy(ImVec2(right - origin.x, bottom - origin.y + 4.f));
  ImGui::EndChild();
  ImGui::End();
  if (go) jump_to(go->first, go->second);
}

}  // namespace hookscope::app
