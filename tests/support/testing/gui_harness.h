#pragma once
// The GUI tests' harness (tests/app/test_*gui.cpp): the
// real hookscope in a 1280x800 window under Xvfb, traces recorded once per
// test process by the real hookscope-cli, screenshots read back as pixels.
// Header-only: it needs doctest, stb_image and the programs' paths, which
// only the test executable has (HOOKSCOPE_GUI_PATH, HOOKSCOPE_CLI_PATH).

#include <doctest/doctest.h>
#include <stb_image.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "testing/test_util.h"

namespace hookscope::testing {

// A directory for this test process's traces and screenshots, made on first
// use and kept (a failed test's pictures stay to look at).
inline std::filesystem::path gui_scratch_dir(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
  std::filesystem::create_directories(d);
  return d;
}

// False, with why in `why`, when xvfb-run is missing (the tests then skip).
inline bool have_xvfb(std::string* why = nullptr) {
  if (run_command("command -v xvfb-run").exit == 0) return true;
  if (why) *why = "xvfb-run is not installed (scripts/setup.sh installs xvfb)";
  return false;
}

// Runs `hookscope --size 1280x800 ARGS` (or `size`) under xvfb-run, with `env` (e.g.
// "HOOKSCOPE_DRAW_REPORT=x.json") set. xvfb-run -a (a free display, so tests
// may run side by side) races when several start at once: two pick one
// display, or its temporary directory cleanup fails and it exits 5. Such a
// run says so and is retried; the app's own result is kept.
// `size` ("1920x1080"): the window's and its own Xvfb screen's.
inline CommandResult run_gui(const std::string& args, const std::string& env = "",
                             const std::string& size = "1280x800") {
  const std::string cmd = (env.empty() ? "" : env + " ") + "xvfb-run -a -s '-screen 0 " + size + "x24' " +
                          std::string(HOOKSCOPE_GUI_PATH) + " --size " + size + " " + args;
  CommandResult r;
  for (int attempt = 0; attempt < 4; ++attempt) {
    r = run_command(cmd);
    if (r.out.find("Xvfb failed to start") == std::string::npos && r.out.find("xvfb-run: error") == std::string::npos &&
        r.out.find("no display") == std::string::npos && r.out.find("could not open display") == std::string::npos) {
      break;
    }
  }
  return r;
}

// `dir/name.hstrace`, recorded by `hookscope-cli record ARGS` unless it is
// there already.
inline std::string record_once(const std::filesystem::path& dir, const std::string& name, const std::string& args) {
  const std::filesystem::path path = dir / (name + ".hstrace");
  if (!std::filesystem::exists(path)) {
    const auto r = run_command(std::string(HOOKSCOPE_CLI_PATH) + " record " + args + " -o " + path.string());
    REQUIRE_MESSAGE(r.exit == 0, r.out);
  }
  return path.string();
}

// A screenshot's pixels, RGBA.
struct Pixels {
  int w = 0, h = 0;
  std::vector<unsigned char> rgba;
  // Pixels within `tol` of `color` (IM_COL32 packing, 0xAABBGGRR) inside
  // [x0, x1) x [y0, y1), clipped to the image.
  size_t count(uint32_t color, float x0, float y0, float x1, float y1, int tol) const {
    const int r = color & 0xff, g = (color >> 8) & 0xff, b = (color >> 16) & 0xff;
    size_t n = 0;
    for (int y = std::max(0, static_cast<int>(y0)); y < std::min(h, static_cast<int>(y1)); ++y) {
      for (int x = std::max(0, static_cast<int>(x0)); x < std::min(w, static_cast<int>(x1)); ++x) {
        const unsigned char* p = &rgba[(static_cast<size_t>(y) * w + x) * 4];
        n += std::abs(p[0] - r) <= tol && std::abs(p[1] - g) <= tol && std::abs(p[2] - b) <= tol;
      }
    }
    return n;
  }
};

inline void load_png(const std::string& path, Pixels& img) {
  int channels = 0;
  unsigned char* data = stbi_load(path.c_str(), &img.w, &img.h, &channels, 4);
  REQUIRE_MESSAGE(data != nullptr, "cannot read " << path);
  img.rgba.assign(data, data + static_cast<size_t>(img.w) * img.h * 4);
  stbi_image_free(data);
}

}  // namespace hookscope::testing
