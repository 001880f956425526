// Reducers panel (to be written).
#include "app_state.h"

namespace hookscope::app {

void App::draw_reducers_panel() {
  if (ImGui::Begin("Reducers")) ImGui::TextDisabled("not written yet");
  ImGui::End();
}

}  // namespace hookscope::app
