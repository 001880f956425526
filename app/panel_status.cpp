// The status bar: what is open, event i / N, its time and rank, and what is
// going on (live run, playback, loading, a truncated file).
#include <fmt/format.h>

#include "app.h"
#include "panel_common.h"

namespace hookscope::app {

void App::draw_status_bar() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float h = ImGui::GetFrameHeight() + 6.f;
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x, vp->Pos.y + vp->Size.y - h));
  ImGui::SetNextWindowSize(ImVec2(vp->Size.x, h));
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(8.f, 3.f));
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing |
                   ImGuiWindowFlags_NoBringToFrontOnFocus);
  ImGui::PopStyleVar();
  const std::string name = title_.empty() ? std::string("nothing open (File > Open, or drop a .hstrace here)") : title_;
  ImGui::TextUnformatted(name.c_str());
  const analysis::Model* m = session_.model();
  if (m && m->num_events() > 0) {
    const size_t i = session_.current();
    const double t_ms = ms_since_first(*m, i);
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    ImGui::Text("event %zu / %zu", i, m->num_events() - 1);
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    ImGui::Text("t = %.3f ms", t_ms);
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    ImGui::Text("rank %u", static_cast<unsigned>(m->event(i).rank));
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    const auto kind = trace::to_string(m->event(i).kind);
    ImGui::TextUnformatted(kind.data(), kind.data() + kind.size());
  }
  std::string state;
  if (live_.active()) state = live_.finished() ? "live: finished" : "live: running";
  if (session_.playing()) state += fmt::format("{}playing at {:g} events/s", state.empty() ? "" : " | ", session_.speed());
  if (findings_.pending.valid()) state += state.empty() ? "diagnosing..." : " | diagnosing...";
  if (!warning_.empty()) {
    ImGui::SameLine();
    ImGui::TextDisabled("|");
    ImGui::SameLine();
    ImGui::TextColored(ImVec4(0.95f, 0.65f, 0.2f, 1.f), "%s", warning_.c_str());
    // A killed rank's "ended without its footer ... at about t=" runs past
    // the window's edge at 1280 px: the whole text on hover.
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", warning_.c_str());
  }
  if (!state.empty()) {
    const float w = ImGui::CalcTextSize(state.c_str()).x;
    ImGui::SameLine(std::max(ImGui::GetCursorPosX() + 20.f, ImGui::GetWindowWidth() - w - 12.f));
    ImGui::TextUnformatted(state.c_str());
  }
  ImGui::End();
}

}  // namespace hookscope::app
