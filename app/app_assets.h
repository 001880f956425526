#pragma once
// Where the app finds what it ships (assets/, installed as share/hookscope):
// relative to its own executable, so the build tree and any install prefix
// work alike (assets/CMakeLists.txt mirrors the install layout in the build).
// No GUI code.

#include <filesystem>

namespace hookscope::app {

// $HOOKSCOPE_DATA_DIR when set; else <dir of the executable>/../share/hookscope
// when it exists (installed: <prefix>/bin/../share/hookscope; build tree:
// build/app/../share/hookscope); else empty.
std::filesystem::path data_dir();

// The UI font: data_dir()/fonts/DejaVuSans.ttf when someone put one there,
// else Debian's fonts-dejavu-core (a dependency of the package); empty when
// neither exists (the app then uses ImGui's built-in font).
std::filesystem::path ui_font();

}  // namespace hookscope::app
