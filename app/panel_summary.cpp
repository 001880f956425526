// Summary panel: counts per event kind and per hook kind, and the live run's result.
#include "analysis/summary.h"
#include "app_state.h"

namespace hookscope::app {

void App::draw_summary_panel() {
  ImGui::Begin("Summary", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                       ImGuiWindowFlags_NoCollapse);
  for (const auto& t : traces_) {
    ImGui::TextWrapped("%s", t.source.c_str());
    if (!t.header.scenario.empty()) ImGui::TextDisabled("%s", t.header.scenario.c_str());
  }
  ImGui::Separator();
  const std::string text = analysis::format_summary(analysis::summarize(events_));
  ImGui::TextUnformatted(text.c_str());
  if (!live_result_.empty()) {
    ImGui::Separator();
    ImGui::TextUnformatted(live_result_.c_str());
  }
  ImGui::End();
}

}  // namespace hookscope::app
