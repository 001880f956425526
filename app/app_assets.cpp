#include "app_assets.h"

#include <cstdlib>
#include <system_error>

namespace hookscope::app {

namespace fs = std::filesystem;

fs::path data_dir() {
  if (const char* env = std::getenv("HOOKSCOPE_DATA_DIR"); env && *env) return env;
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path dir = exe.parent_path().parent_path() / "share" / "hookscope";
  return fs::is_directory(dir, ec) ? dir : fs::path{};
}

fs::path ui_font() {
  std::error_code ec;
  if (const fs::path dir = data_dir(); !dir.empty()) {
    const fs::path own = dir / "fonts" / "DejaVuSans.ttf";
    if (fs::exists(own, ec)) return own;
  }
  const fs::path debian = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  return fs::exists(debian, ec) ? debian : fs::path{};
}

}  // namespace hookscope::app
