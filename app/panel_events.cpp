// Events panel: every event (or those a filter expression keeps, Note
// [Filter expressions]) in a table; a click jumps there, Enter in the filter
// box jumps to the next match after the current event.
#include <fmt/format.h>

#include <algorithm>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"
#include "render/layout/story.h"

namespace hookscope::app {

namespace {

// One table row's cells after the "#" column: time, rank, kind (in its
// severity's colour), and what happened (cut rows read whole on hover).
void event_cells(const analysis::Model& m, size_t i, render::Severity sev, render::CollectiveNames& names) {
  const trace::Event e = m.event(i);
  ImGui::TableNextColumn();
  ImGui::Text("%.3f", ms_since_first(m, i));
  ImGui::TableNextColumn();
  ImGui::Text("%u", static_cast<unsigned>(e.rank));
  ImGui::TableNextColumn();
  const auto kind = trace::to_string(e.kind);
  if (sev == render::Severity::kNone || sev == render::Severity::kLifecycle) {
    ImGui::TextUnformatted(kind.data(), kind.data() + kind.size());
  } else {  // the kind in the severity's colour, and what it means
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(severity_color(sev)), "%.*s", static_cast<int>(kind.size()),
                       kind.data());
  }
  ImGui::TableNextColumn();
  // describe() starts with "#i rN kind": the row already shows those.
  if (names.model() != &m) names = render::CollectiveNames(m);
  const std::string text = names.describe(i);
  size_t skip = 0;
  for (int spaces = 0; skip < text.size() && spaces < 3; ++skip) spaces += text[skip] == ' ';
  if (sev == render::Severity::kStaleFire) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(severity_color(sev)), "STALE FIRE (owner destroyed):");
    ImGui::SameLine();
  }
  ImGui::TextUnformatted(text.c_str() + skip);
  if (ImGui::IsItemHovered() && ImGui::CalcTextSize(text.c_str() + skip).x > ImGui::GetContentRegionAvail().x) {
    ImGui::SetTooltip("%s", text.c_str());  // a cut row reads whole on hover
  }
}

}  // namespace

void App::draw_events_panel() {
  const bool open = ImGui::Begin("Events");
  const analysis::Model* m = session_.model();
  if (!open || !m || m->num_events() == 0) {
    if (open) ImGui::TextDisabled("No events.");
    ImGui::End();
    return;
  }
  const bool enter = events_filter_box();
  const size_t shown = rows_.all ? m->num_events() : rows_.rows.size();
  auto event_of_row = [&](size_t r) -> size_t { return rows_.all ? r : rows_.rows[r]; };
  // The row of the current event, or of the first shown after it.
  const size_t cur = session_.current();
  size_t cur_row = rows_.all ? cur
                             : static_cast<size_t>(std::lower_bound(rows_.rows.begin(), rows_.rows.end(), cur) -
                                                   rows_.rows.begin());
  if (enter && shown > 0) {
    // Next match strictly after the current event, wrapping around.
    size_t r = (cur_row < shown && event_of_row(cur_row) == cur) ? cur_row + 1 : cur_row;
    if (r >= shown) r = 0;
    jump_to(event_of_row(r), session_.function_of_event(event_of_row(r)));
    cur_row = r;
  }
  events_table(shown, cur_row);
  scroll_events_ = false;
  ImGui::End();
}

// The filter box with the count beside it and the parse error below. True
// when Enter was pressed in it (jump to the next match).
bool App::events_filter_box() {
  if (focus_filter_) {
    ImGui::SetKeyboardFocusHere();
    focus_filter_ = false;
  }
  const size_t total = session_.model()->num_events();
  const size_t shown = rows_.all ? total : rows_.rows.size();
  const std::string count = rows_.pending.valid() ? std::string("filtering...")
                            : rows_.all           ? fmt::format("{} events", total)
                                                  : fmt::format("{} of {}", shown, total);
  ImGui::SetNextItemWidth(-ImGui::CalcTextSize(count.c_str()).x - 16.f);
  char buf[sizeof(filter_text_)];
  std::snprintf(buf, sizeof(buf), "%s", filter_text_);
  if (ImGui::InputTextWithHint("##filter", "filter (Ctrl+F): kind:hook_fire owner:\"Reducer 2\" fn:AccumulateGrad rank:1 text",
                               buf, sizeof(buf))) {
    set_filter(buf);
  }
  const bool enter = ImGui::IsItemFocused() && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter));
  if (ImGui::IsItemHovered() && !rows_.error.message.empty()) ImGui::SetTooltip("%s", rows_.error.message.c_str());
  ImGui::SameLine();
  ImGui::TextDisabled("%s", count.c_str());
  if (!rows_.error.message.empty()) {
    ImGui::TextColored(ImVec4(1.f, 0.45f, 0.4f, 1.f), "at %zu: %s", rows_.error.position,
                       rows_.error.message.c_str());
  }
  return enter;
}

// The table of the `shown` rows, scrolled to `cur_row` when the current
// event moved out of view; rows tinted by severity; a click jumps there.
void App::events_table(size_t shown, size_t cur_row) {
  const analysis::Model* m = session_.model();
  const size_t cur = session_.current();
  if (!ImGui::BeginTable("events", 5,
                         ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_Resizable | ImGuiTableFlags_SizingFixedFit)) {
    return;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("00000000").x);
  ImGui::TableSetupColumn("t (ms)", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("000000.000").x);
  ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("rank").x);
  ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("process_group_destroyed").x);
  ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  if (scroll_events_ && shown > 0) {
    const float row_h = ImGui::GetTextLineHeight() + 2.f * ImGui::GetStyle().CellPadding.y;
    const float visible = ImGui::GetWindowHeight();
    const float y = static_cast<float>(std::min(cur_row, shown - 1)) * row_h;
    // Only when the row is out of view: stepping inside the view keeps it still.
    if (y < ImGui::GetScrollY() || y > ImGui::GetScrollY() + visible - 2.f * row_h) {
      ImGui::SetScrollY(std::max(0.f, y - visible * 0.4f));
    }
  }
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(shown));
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const size_t i = rows_.all ? static_cast<size_t>(r) : rows_.rows[static_cast<size_t>(r)];
      const render::Severity sev = render::event_severity(*m, i);
      ImGui::TableNextRow();
      if (sev != render::Severity::kNone && i != cur) {
        const uint32_t alpha = sev == render::Severity::kLifecycle ? 40 : 80;
        ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, render::with_alpha(severity_color(sev), alpha));
      }
      ImGui::TableNextColumn();
      char id[24];
      std::snprintf(id, sizeof(id), "%zu", i);
      if (ImGui::Selectable(id, i == cur, ImGuiSelectableFlags_SpanAllColumns)) {
        jump_to(i, session_.function_of_event(i));
      }
      event_cells(*m, i, sev, collective_names_);
    }
  }
  ImGui::EndTable();
}

}  // namespace hookscope::app
