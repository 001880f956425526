// Diagnostics panel (to be written).
#include "app_state.h"

namespace hookscope::app {

void App::draw_diagnostics_panel() {
  if (ImGui::Begin("Diagnostics")) ImGui::TextDisabled("not written yet");
  ImGui::End();
}

}  // namespace hookscope::app
