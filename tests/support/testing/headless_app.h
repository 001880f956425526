#pragma once
// The App driven as a user would, in an ImGui context with no window (the
// app tests): frame() runs one App frame, press() taps a key as the GLFW
// backend reports it (down for one frame, up for the next). Call
// testing::scratch_config_dir() first, so imgui.ini and the recent files go
// to a scratch directory, not into the user's config.
#if HOOKSCOPE_APP_UI
#include <imgui.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>

#include "app.h"

namespace hookscope::testing {

// GLFW's key codes, which the GLFW backend puts in io.KeysDown[].
constexpr int kLeft = 263, kRight = 262, kPageUp = 266, kPageDown = 267, kHome = 268, kEnd = 269;
constexpr int kSpace = 32, kEscape = 256, kEnter = 257;

// A directory of this test process's own, set as XDG_CONFIG_HOME.
inline std::filesystem::path scratch_config_dir(const std::string& name) {
  static const std::filesystem::path dir = [&] {
    auto d = std::filesystem::temp_directory_path() / (name + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(d);
    ::setenv("XDG_CONFIG_HOME", d.c_str(), 1);
    return d;
  }();
  return dir;
}

class HeadlessApp {
 public:
  explicit HeadlessApp(app::Args args, ImVec2 display = ImVec2(1600, 1000)) {
    ctx_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = display;
    io.DeltaTime = 1.f / 60.f;
    // What the real backend (OpenGL3) says: large draw lists split into
    // several 16-bit-indexed commands (a full-width Lanes panel needs it).
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
    const std::pair<ImGuiKey, int> keys[] = {
        {ImGuiKey_LeftArrow, kLeft}, {ImGuiKey_RightArrow, kRight}, {ImGuiKey_PageUp, kPageUp},
        {ImGuiKey_PageDown, kPageDown}, {ImGuiKey_Home, kHome},      {ImGuiKey_End, kEnd},
        {ImGuiKey_Space, kSpace},       {ImGuiKey_Escape, kEscape},  {ImGuiKey_Enter, kEnter}};
    for (auto [k, code] : keys) io.KeyMap[k] = code;
    app_ = std::make_unique<app::App>(std::move(args));
    app_->setup_style(1.f);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    frame();
  }
  ~HeadlessApp() {
    app_.reset();
    ImGui::DestroyContext(ctx_);
  }
  HeadlessApp(const HeadlessApp&) = delete;
  HeadlessApp& operator=(const HeadlessApp&) = delete;

  app::App& app() { return *app_; }
  void frame() {
    ImGui::NewFrame();
    app_->frame();
    ImGui::Render();
  }
  void key(int code, bool down, bool ctrl = false) {
    ImGuiIO& io = ImGui::GetIO();
    io.KeyCtrl = down && ctrl;
    io.KeysDown[code] = down;
  }
  // Down for one frame, up for the next, as a key tap arrives.
  void press(int code, bool ctrl = false) {
    key(code, true, ctrl);
    frame();
    key(code, false);
    frame();
  }

 private:
  ImGuiContext* ctx_ = nullptr;
  std::unique_ptr<app::App> app_;
};

// Args of a headless run of `files`: loads finish before the first frame draws.
inline app::Args headless_args(std::vector<std::string> files) {
  app::Args a;
  a.files = std::move(files);
  a.frames = 1000;
  return a;
}

}  // namespace hookscope::testing
#endif
