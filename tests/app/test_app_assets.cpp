// Where the app finds what it ships (app/app_assets.h): relative to its
// executable, so the build tree works as an install does.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "app_assets.h"

using namespace hookscope;
namespace fs = std::filesystem;

TEST_CASE("app assets: found beside the executable in the build tree, or where HOOKSCOPE_DATA_DIR says") {
  ::unsetenv("HOOKSCOPE_DATA_DIR");
  // This test program is build/tests/hookscope_tests: its data is build/share/hookscope.
  const fs::path exe = fs::read_symlink("/proc/self/exe");
  const fs::path dir = app::data_dir();
  REQUIRE_FALSE(dir.empty());
  CHECK(fs::equivalent(dir, exe.parent_path().parent_path() / "share" / "hookscope"));
  CHECK(fs::exists(dir / "icons" / "hookscope-48.png"));
  CHECK(fs::exists(dir / "samples" / "recovery-none.hstrace"));

  const fs::path elsewhere = fs::temp_directory_path() / ("hookscope-data-" + std::to_string(::getpid()));
  fs::create_directories(elsewhere / "fonts");
  ::setenv("HOOKSCOPE_DATA_DIR", elsewhere.c_str(), 1);
  CHECK(app::data_dir() == elsewhere);
  // No font of its own there: Debian's DejaVu Sans (or none, then ImGui's own).
  const fs::path debian = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  CHECK(app::ui_font() == (fs::exists(debian) ? debian : fs::path{}));
  fs::copy_file(exe, elsewhere / "fonts" / "DejaVuSans.ttf");  // any file: only its place matters
  CHECK(app::ui_font() == elsewhere / "fonts" / "DejaVuSans.ttf");
  ::unsetenv("HOOKSCOPE_DATA_DIR");
  fs::remove_all(elsewhere);
}
#endif
