// Compare panel (to be written).
#include "app_state.h"

namespace hookscope::app {

void App::draw_compare_panel() {
  if (ImGui::Begin("Compare", &show_compare_)) ImGui::TextDisabled("not written yet");
  ImGui::End();
}

}  // namespace hookscope::app
