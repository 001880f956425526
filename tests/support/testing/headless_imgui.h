#pragma once
// A Dear ImGui context with no renderer, for the views' headless tests and
// the frame benchmarks (bench/bench_layout.cpp): a
// frame is NewFrame, one window filling the display, Render; what was drawn
// is read back from the window's ImDrawList.

#include <imgui.h>

#include <functional>

namespace hookscope::testing {

class HeadlessImGui {
 public:
  HeadlessImGui(float width, float height) {
    ctx_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = {width, height};
    io.DeltaTime = 1.f / 60.f;
    io.IniFilename = nullptr;
    // What a real backend (OpenGL3) says: large draw lists split into
    // several 16-bit-indexed commands.
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  }
  ~HeadlessImGui() { ImGui::DestroyContext(ctx_); }
  HeadlessImGui(const HeadlessImGui&) = delete;
  HeadlessImGui& operator=(const HeadlessImGui&) = delete;

  // One frame with `draw` inside a window covering the display; returns the
  // vertices that window's draw list holds.
  int frame(const std::function<void()>& draw) {
    ImGui::NewFrame();
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize(ImGui::GetIO().DisplaySize);
    ImGui::Begin("view", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    draw();
    ImDrawList* list = ImGui::GetWindowDrawList();
    ImGui::End();
    ImGui::Render();
    return list->VtxBuffer.Size;
  }

  ImGuiIO& io() { return ImGui::GetIO(); }

 private:
  ImGuiContext* ctx_ = nullptr;
};

}  // namespace hookscope::testing
