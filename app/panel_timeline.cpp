// Timeline panel: the transport controls (play, speed, step kind, lifecycle
// jumps) over the timeline (render/draw/timeline_view.h), ranks as tracks.
#include <fmt/format.h>

#include "app.h"

namespace hookscope::app {

namespace {

// to_string's names are string literals, so their data() ends in a NUL.
const char* kind_label(trace::EventKind k) { return trace::to_string(k).data(); }

}  // namespace

void App::draw_timeline_panel() {
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(4.f, 4.f));
  const bool open = ImGui::Begin("Timeline");
  ImGui::PopStyleVar();
  if (!open || session_.empty()) {
    if (open) ImGui::TextDisabled("No events.");
    ImGui::End();
    return;
  }
  // Transport: |< < play > >| , speed, step kind, lifecycle.
  if (ImGui::SmallButton("|<")) jump_to(0);
  ImGui::SameLine();
  if (ImGui::SmallButton("<")) session_.step(-1);
  ImGui::SameLine();
  if (ImGui::SmallButton(session_.playing() ? "Pause" : "Play")) session_.set_playing(!session_.playing());
  ImGui::SameLine();
  if (ImGui::SmallButton(">")) session_.step(+1);
  ImGui::SameLine();
  if (ImGui::SmallButton(">|")) jump_to(session_.num_events() - 1);
  ImGui::SameLine();
  float speed = static_cast<float>(session_.speed());
  ImGui::SetNextItemWidth(150.f);
  if (ImGui::SliderFloat("##speed", &speed, 1.f, 100000.f, "%.0f events/s",
                         ImGuiSliderFlags_Logarithmic)) {
    session_.set_speed(speed);
  }
  ImGui::SameLine();
  ImGui::TextDisabled("step kind");
  ImGui::SameLine();
  ImGui::SetNextItemWidth(190.f);
  const trace::EventKind sk = session_.step_kind();
  if (ImGui::BeginCombo("##stepkind", sk == trace::EventKind::kNone ? "current event's" : kind_label(sk))) {
    if (ImGui::Selectable("current event's", sk == trace::EventKind::kNone)) {
      session_.set_step_kind(trace::EventKind::kNone);
    }
    for (int k = 1; k < static_cast<int>(trace::EventKind::kCount); ++k) {
      const auto kind = static_cast<trace::EventKind>(k);
      if (trace::to_string(kind) == "unknown") continue;
      if (ImGui::Selectable(kind_label(kind), kind == sk)) session_.set_step_kind(kind);
    }
    ImGui::EndCombo();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("< kind")) session_.step_kind(-1);
  ImGui::SameLine();
  if (ImGui::SmallButton("kind >")) session_.step_kind(+1);
  ImGui::SameLine();
  ImGui::TextDisabled("| Reducer lifecycle");
  ImGui::SameLine();
  const bool no_lifecycle = session_.lifecycle_events().empty();
  if (no_lifecycle) ImGui::BeginDisabled();
  if (ImGui::SmallButton("< PgUp")) session_.step_lifecycle(-1);
  ImGui::SameLine();
  if (ImGui::SmallButton("PgDn >")) session_.step_lifecycle(+1);
  if (no_lifecycle) ImGui::EndDisabled();

  // The Session holds the bookmarks (Ctrl+B, Ctrl+1..9); the timeline shows
  // them, and its own Bookmark button toggles the Session's.
  timeline_.set_bookmarks(session_.bookmarks());
  const render::TimelineResult r = timeline_.draw(session_.current());
  if (timeline_.bookmarks() != session_.bookmarks()) session_.toggle_bookmark();
  if (r.current_event) jump_to(*r.current_event);
  ImGui::End();
}

}  // namespace hookscope::app
