// Graph panel: the autograd graph at the current event (render/draw/graph_view.h),
// every rank side by side; a click selects a Function for the inspector.
#include <algorithm>
#include <cstdlib>

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
      // HOOKSCOPE_GRAPH_WHOLE=Z (screenshots, --bench-frames): the view
      // pinned every frame to the layout's centre at Z times the zoom that
      // shows all of it (1: all of it), as a user zoomed out sees it.
      static const char* whole_env = std::getenv("HOOKSCOPE_GRAPH_WHOLE");
      static const float whole = whole_env ? std::max(0.f, std::strtof(whole_env, nullptr)) : 0.f;
      if (whole > 0.f && graph_.layout()) {
        const render::Layout& l = *graph_.layout();
        const auto& c = graph_.stats().content;
        const float zoom = std::min((c.x1 - c.x0) / std::max(l.max.x - l.min.x, 1.f),
                                    (c.y1 - c.y0) / std::max(l.max.y - l.min.y, 1.f));
        if (zoom > 0.f) graph_.set_view({(l.min.x + l.max.x) * 0.5f, (l.min.y + l.max.y) * 0.5f}, zoom * whole);
      }
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
