// The main menu: File (open, compare, recent, quit), View (panels, layout,
// theme), Go (the stepping keys as menu items), Help.
#include <fmt/format.h>

#include <cstdio>

#include "app.h"

namespace hookscope::app {

void App::draw_menu() {
  if (!ImGui::BeginMainMenuBar()) return;
  if (ImGui::BeginMenu("File")) {
    if (ImGui::MenuItem("Open...", "Ctrl+O")) {
      show_browser_ = true;
      browser_for_compare_ = false;
    }
    if (ImGui::MenuItem("Compare with...", "Ctrl+Shift+O", false, session_.model() != nullptr)) {
      show_browser_ = true;
      browser_for_compare_ = true;
    }
    if (ImGui::BeginMenu("Open recent", !recent_.entries().empty())) {
      for (const auto& entry : recent_.entries()) {
        const std::string label =
            entry.size() == 1 ? entry[0] : fmt::format("{} (+{} more)", entry[0], entry.size() - 1);
        if (ImGui::MenuItem(label.c_str())) open_files(entry);
      }
      ImGui::Separator();
      if (ImGui::MenuItem("Clear list")) recent_.clear();
      ImGui::EndMenu();
    }
    ImGui::Separator();
    draw_export_menu_items();
    ImGui::Separator();
    if (ImGui::MenuItem("Quit", "Ctrl+Q")) request_quit(0);
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("View")) {
    ImGui::MenuItem("Compare", nullptr, &show_compare_);
    draw_view_menu_items();
    if (ImGui::MenuItem("Reset layout")) reset_layout_ = true;
    if (ImGui::MenuItem("Fit graph")) graph_.fit();
    if (ImGui::MenuItem("Fit timeline")) timeline_.fit();
    ImGui::Separator();
    if (ImGui::MenuItem("Dark theme", nullptr, !args_.light)) {
      args_.light = false;
      ImGui::StyleColorsDark();
    }
    if (ImGui::MenuItem("Light theme", nullptr, args_.light)) {
      args_.light = true;
      ImGui::StyleColorsLight();
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Go", !session_.empty())) {
    if (ImGui::MenuItem("Next event", "Right")) session_.step(+1);
    if (ImGui::MenuItem("Previous event", "Left")) session_.step(-1);
    if (ImGui::MenuItem("Next of this kind", "Ctrl+Right")) session_.step_kind(+1);
    if (ImGui::MenuItem("Previous of this kind", "Ctrl+Left")) session_.step_kind(-1);
    if (ImGui::MenuItem("Next Reducer lifecycle event", "PgDn")) session_.step_lifecycle(+1);
    if (ImGui::MenuItem("Previous Reducer lifecycle event", "PgUp")) session_.step_lifecycle(-1);
    if (ImGui::MenuItem("First event", "Home")) session_.go_first();
    if (ImGui::MenuItem("Last event", "End")) session_.go_last();
    if (ImGui::MenuItem("Go to event...", "Ctrl+G")) {
      show_goto_ = true;
      goto_text_[0] = 0;
    }
    ImGui::Separator();
    if (ImGui::MenuItem("Toggle bookmark", "Ctrl+B")) {
      session_.toggle_bookmark();
    }
    const auto& marks = session_.bookmarks();
    for (size_t i = 0; i < marks.size(); ++i) {
      const std::string label = fmt::format("Bookmark {}: event {}", i + 1, marks[i]);
      const std::string keys = fmt::format("Ctrl+{}", i + 1);
      if (ImGui::MenuItem(label.c_str(), keys.c_str())) jump_to(marks[i]);
    }
    ImGui::Separator();
    if (ImGui::MenuItem(session_.playing() ? "Pause" : "Play", "Space")) {
      session_.set_playing(!session_.playing());
    }
    ImGui::EndMenu();
  }
  if (ImGui::BeginMenu("Help")) {
    if (ImGui::MenuItem("Keys and panels", "F1")) show_help_ = true;
    ImGui::EndMenu();
  }
  ImGui::EndMainMenuBar();
}

// File > Export ...: each entry asks for a path (app_export.cpp writes it).
void App::draw_export_menu_items() {
  const bool graph = session_.model() != nullptr && graph_.layout_ready();
  struct Entry {
    const char* label;
    ExportJob job;
    bool whole;
    const char* file;
  };
  static constexpr Entry kEntries[] = {
      {"Export graph as SVG (current view)...", ExportJob::kGraphSvg, false, "graph-view.svg"},
      {"Export graph as SVG (whole graph)...", ExportJob::kGraphSvg, true, "graph.svg"},
      {"Export graph as PNG (current view)...", ExportJob::kGraphPng, false, "graph-view.png"},
      {"Export graph as PNG (whole graph)...", ExportJob::kGraphPng, true, "graph.png"},
      {"Export lanes as PNG...", ExportJob::kLanesPng, false, "lanes.png"},
  };
  for (const Entry& e : kEntries) {
    if (!ImGui::MenuItem(e.label, nullptr, false, graph)) continue;
    export_.dialog = true;
    export_.pending = {e.job, "", e.whole};
    std::snprintf(export_.path, sizeof export_.path, "%s", e.file);
  }
}

void App::draw_export_dialog() {
  if (export_.dialog) {
    ImGui::OpenPopup("Export");
    export_.dialog = false;
  }
  if (!ImGui::BeginPopupModal("Export", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  ImGui::TextUnformatted("Write to (.svg or .png as the entry says):");
  ImGui::SetNextItemWidth(ImGui::GetFontSize() * 30.f);
  const bool enter = ImGui::InputText("##path", export_.path, sizeof export_.path, ImGuiInputTextFlags_EnterReturnsTrue);
  const std::string want = export_.pending.job == ExportJob::kGraphSvg ? "svg" : "png";
  const bool ok = export_format(export_.path) == want;
  if (!ok) ImGui::TextColored(ImVec4(0.95f, 0.4f, 0.4f, 1.f), "the name must end in .%s", want.c_str());
  if ((ImGui::Button("Export") || enter) && ok) {
    export_.pending.path = export_.path;
    request_export(export_.pending);
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) ImGui::CloseCurrentPopup();
  if (!export_.message.empty()) ImGui::TextDisabled("%s", export_.message.c_str());
  ImGui::EndPopup();
}

}  // namespace hookscope::app
