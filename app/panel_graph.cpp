// Graph panel: the autograd graph at the current event (render/draw/graph_view.h),
// every rank side by side; a click selects a Function for the inspector.
#include "app.h"
#include "panel_common.h"

namespace hookscope::app {

void App::draw_graph_panel() {
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(2.f, 2.f));
  const bool open = ImGui::Begin("Graph");
  ImGui::PopStyleVar();
  if (open) {
    if (!session_.model()) {
      ImGui::TextDisabled(loader_.busy() ? "loading..." : "No trace open. File > Open (Ctrl+O), or drop a .hstrace file here.");
    } else {
      // The Session owns the selection: the view draws it and returns a click as an intent.
      // While the full State is pending, the view draws the new event from the Session's
      // StateView (Note [Graph while the state is pending]), never the old event's State.
      const analysis::State* full = session_.state_pending() ? nullptr : full_state_or_pending(session_);
      graph_.set_indexed_functions(Session::lazy_threshold());  // Note [Graph at a million Functions]
      render::GraphViewResult r;
      if (full) {
        r = graph_.draw(*full, session_.selected_function(), session_.selected_owner());
      } else if (session_.state_pending()) {
        r = graph_.draw(session_.view(), session_.selected_function(), session_.selected_owner());
      }
      if (r.selection_changed) {
        session_.select_function(r.selected_function);
        session_.select_owner(r.selected_owner);
      }
    }
  }
  ImGui::End();
}

}  // namespace hookscope::app
