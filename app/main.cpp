// hookscope: the desktop app. Glue only, in frame order, as Dear ImGui's
// example_glfw_opengl3: init, frame loop, shutdown in reverse. The panels
// live in their own files.
#include <glad/gl.h>
// glad first: GLFW must not pull in the system GL header.
#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb/stb_image.h>
#include <stb/stb_image_write.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app_args.h"
#include "app_assets.h"
#include "app.h"

namespace {

void glfw_error(int code, const char* what) { std::fprintf(stderr, "glfw error %d: %s\n", code, what); }

bool save_png(const std::string& path, int w, int h) {
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * static_cast<size_t>(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(0, 0, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows go bottom-up; PNG's top-down.
  const int stride = w * 4;
  return stbi_write_png(path.c_str(), w, h, 4, pixels.data() + (h - 1) * stride, -stride) != 0;
}

// The window's icon: the installed (or built) share/hookscope/icons PNG.
void set_window_icon(GLFWwindow* window) {
  const auto dir = hookscope::app::data_dir();
  if (dir.empty()) return;
  GLFWimage image{};
  const std::string path = (dir / "icons" / "hookscope-48.png").string();
  image.pixels = stbi_load(path.c_str(), &image.width, &image.height, nullptr, 4);
  if (!image.pixels) return;
  glfwSetWindowIcon(window, 1, &image);
  stbi_image_free(image.pixels);
}

}  // namespace

int main(int argc, char** argv) {
  hookscope::app::Args args;
  if (int rc = hookscope::app::parse_args(argc, argv, args); rc >= 0) return rc;

  glfwSetErrorCallback(glfw_error);
  if (!std::getenv("DISPLAY") && !std::getenv("WAYLAND_DISPLAY")) {
    return hookscope::app::run_headless_fallback(args, "no display ($DISPLAY is not set)");
  }
  if (!glfwInit()) return hookscope::app::run_headless_fallback(args, "GLFW could not initialise");
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  if (args.headless_frames()) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
  GLFWwindow* window = glfwCreateWindow(args.width, args.height, "hookscope", nullptr, nullptr);
  if (!window) {
    glfwTerminate();
    return hookscope::app::run_headless_fallback(args, "no OpenGL 3.3 window could be created");
  }
  set_window_icon(window);
  glfwMakeContextCurrent(window);
  glfwSwapInterval(args.headless_frames() ? 0 : 1);
  gladLoadGL(glfwGetProcAddress);

  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  hookscope::app::App app(args);
  float xscale = 1.f, yscale = 1.f;
  glfwGetWindowContentScale(window, &xscale, &yscale);
  app.setup_style(xscale);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  // Files dropped onto the window open (with Shift held: for comparison).
  glfwSetWindowUserPointer(window, &app);
  glfwSetDropCallback(window, [](GLFWwindow* w, int count, const char** paths) {
    auto* a = static_cast<hookscope::app::App*>(glfwGetWindowUserPointer(w));
    a->on_drop(std::vector<std::string>(paths, paths + count));
  });
  ImGui_ImplOpenGL3_Init("#version 330 core");

  int frames = 0;
  int settled_at = -1;
  while (!glfwWindowShouldClose(window) && !app.quit_requested()) {
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    app.frame();
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    glViewport(0, 0, w, h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    ++frames;
    // A screenshot waits until what was asked for is loaded and laid out,
    // then a few frames more for fonts and scrolling to settle.
    if (!app.settled()) settled_at = -1;
    else if (settled_at < 0) settled_at = frames;
    const bool settled = settled_at >= 0 && frames >= settled_at + args.screenshot_frame();
    if (!args.screenshot.empty() && (settled || frames >= 2000)) {
      if (!settled) std::fprintf(stderr, "hookscope: still loading after %d frames; taking the screenshot anyway\n", frames);
      const bool ok = save_png(args.screenshot, w, h);
      std::printf(ok ? "wrote %s (%dx%d)\n" : "could not write %s\n", args.screenshot.c_str(), w, h);
      std::printf("%s\n", app.describe_view().c_str());
      if (const char* report = std::getenv("HOOKSCOPE_DRAW_REPORT"); report && *report) {
        if (!app.write_draw_report(report)) std::fprintf(stderr, "could not write %s\n", report);
      }
      if (app.exit_code() == 0) app.request_quit(ok ? 0 : 1);
    }
    glfwSwapBuffers(window);
    if (args.frames > 0 && frames >= args.frames) app.request_quit(0);
  }
  const int rc = app.exit_code();
  app.report();

  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  app.shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
