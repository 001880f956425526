// Function panel (to be written).
#include "app_state.h"

namespace hookscope::app {

void App::draw_inspector_panel() {
  if (ImGui::Begin("Function")) ImGui::TextDisabled("not written yet");
  ImGui::End();
}

}  // namespace hookscope::app
