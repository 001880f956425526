// File > Open: a file browser drawn with ImGui (to be written).
#include "app_state.h"

namespace hookscope::app {

void App::draw_file_browser() {}

}  // namespace hookscope::app
