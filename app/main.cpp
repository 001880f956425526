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

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "app_args.h"
#include "app_assets.h"
#include "app.h"

namespace {

void glfw_error(int code, const char* what) { std::fprintf(stderr, "glfw error %d: %s\n", code, what); }

// The rectangle (x, y, w, h) of a framebuffer `fb_h` pixels tall, top-left origin.
bool save_png(const std::string& path, int x, int y, int w, int h, int fb_h) {
  if (w <= 0 || h <= 0) return false;
  std::vector<unsigned char> pixels(static_cast<size_t>(w) * static_cast<size_t>(h) * 4);
  glPixelStorei(GL_PACK_ALIGNMENT, 1);
  glReadPixels(x, fb_h - y - h, w, h, GL_RGBA, GL_UNSIGNED_BYTE, pixels.data());
  // OpenGL's rows go bottom-up; PNG's top-down.
  const int stride = w * 4;
  return stbi_write_png(path.c_str(), w, h, 4, pixels.data() + (h - 1) * stride, -stride) != 0;
}

// An offscreen framebuffer (a whole-graph export larger than the window).
struct Offscreen {
  GLuint fbo = 0, color = 0;
  int w = 0, h = 0;
  bool bind(int width, int height) {
    if (width != w || height != h) {
      release();
      glGenTextures(1, &color);
      glBindTexture(GL_TEXTURE_2D, color);
      glTexImage2D(GL_TEXTURE_2D, 0, GL_RGBA8, width, height, 0, GL_RGBA, GL_UNSIGNED_BYTE, nullptr);
      glGenFramebuffers(1, &fbo);
      glBindFramebuffer(GL_FRAMEBUFFER, fbo);
      glFramebufferTexture2D(GL_FRAMEBUFFER, GL_COLOR_ATTACHMENT0, GL_TEXTURE_2D, color, 0);
      w = width, h = height;
    }
    glBindFramebuffer(GL_FRAMEBUFFER, fbo);
    return glCheckFramebufferStatus(GL_FRAMEBUFFER) == GL_FRAMEBUFFER_COMPLETE;
  }
  void release() {
    if (fbo) glDeleteFramebuffers(1, &fbo);
    if (color) glDeleteTextures(1, &color);
    fbo = color = 0;
    w = h = 0;
  }
};

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

// Note [Idle frames] (app/app.h): what GLFW delivered since the last frame.
// The callbacks are installed before ImGui's, which call them in turn.
unsigned long g_input_events = 0;

void count_input_events(GLFWwindow* window) {
  glfwSetMouseButtonCallback(window, [](GLFWwindow*, int, int, int) { ++g_input_events; });
  glfwSetScrollCallback(window, [](GLFWwindow*, double, double) { ++g_input_events; });
  glfwSetKeyCallback(window, [](GLFWwindow*, int, int, int, int) { ++g_input_events; });
  glfwSetCharCallback(window, [](GLFWwindow*, unsigned int) { ++g_input_events; });
  glfwSetWindowFocusCallback(window, [](GLFWwindow*, int) { ++g_input_events; });
  glfwSetCursorEnterCallback(window, [](GLFWwindow*, int) { ++g_input_events; });
  // ImGui 1.86 reads the mouse position itself, without a callback.
  glfwSetCursorPosCallback(window, [](GLFWwindow*, double, double) { ++g_input_events; });
  glfwSetFramebufferSizeCallback(window, [](GLFWwindow*, int, int) { ++g_input_events; });
  glfwSetWindowRefreshCallback(window, [](GLFWwindow*) { ++g_input_events; });  // uncovered: draw again
}

// A held key or button: ImGui's key repeat and drags run on its clock.
bool input_held() {
  const ImGuiIO& io = ImGui::GetIO();
  return std::any_of(std::begin(io.MouseDown), std::end(io.MouseDown), [](bool d) { return d; }) ||
         std::any_of(std::begin(io.KeysDown), std::end(io.KeysDown), [](bool d) { return d; });
}

// Tests of the real window (Xvfb): HOOKSCOPE_TEST_CLICK="X,Y" clicks the left
// button there once the app has settled, as X would: the pointer warped by
// GLFW, then the press and, a frame later, the release through the GLFW
// callbacks ImGui's backend installed. A screenshot waits for it.
struct SyntheticClick {
  double x = 0, y = 0;
  enum Stage { kNone, kWaiting, kPressed, kDone } stage = kNone;
  SyntheticClick() {
    const char* at = std::getenv("HOOKSCOPE_TEST_CLICK");
    if (at && std::sscanf(at, "%lf,%lf", &x, &y) == 2) stage = kWaiting;
  }
  bool pending() const { return stage == kWaiting || stage == kPressed; }
  void step(GLFWwindow* window, bool settled) {
    if (stage == kWaiting && settled) {
      glfwSetCursorPos(window, x, y);
      ImGui_ImplGlfw_CursorEnterCallback(window, GLFW_TRUE);
      ImGui_ImplGlfw_MouseButtonCallback(window, GLFW_MOUSE_BUTTON_LEFT, GLFW_PRESS, 0);
      stage = kPressed;
    } else if (stage == kPressed) {
      ImGui_ImplGlfw_MouseButtonCallback(window, GLFW_MOUSE_BUTTON_LEFT, GLFW_RELEASE, 0);
      stage = kDone;
    }
  }
};

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
  SyntheticClick click;
  // A pointer cannot be warped into an unmapped window: one clicked stays visible.
  if (args.headless_frames() && click.stage == SyntheticClick::kNone) glfwWindowHint(GLFW_VISIBLE, GLFW_FALSE);
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
  count_input_events(window);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  // Files dropped onto the window open (with Shift held: for comparison).
  glfwSetWindowUserPointer(window, &app);
  glfwSetDropCallback(window, [](GLFWwindow* w, int count, const char** paths) {
    ++g_input_events;
    auto* a = static_cast<hookscope::app::App*>(glfwGetWindowUserPointer(w));
    a->on_drop(std::vector<std::string>(paths, paths + count));
  });
  ImGui_ImplOpenGL3_Init("#version 330 core");

  int frames = 0;
  int settled_at = -1;
  Offscreen offscreen_fb;
  // Note [Idle frames]: after input or background work, a few frames for
  // ImGui to settle (hover, a window that appears sizes itself in its first
  // frames), then none until something moves.
  constexpr int kSettleFrames = 4;
  int settle = kSettleFrames;
  unsigned long input_seen = 0;
  while (!glfwWindowShouldClose(window) && !app.quit_requested()) {
    const bool typing = ImGui::GetIO().WantTextInput;  // the text cursor blinks
    const bool busy = app.wants_frames();
    const bool idle = !args.headless_frames() && settle <= 0 && !busy && !input_held();
    if (idle) {
      glfwWaitEventsTimeout(typing ? 0.5 : 1.0);
    } else {
      glfwPollEvents();
    }
    if (g_input_events != input_seen || busy) {
      input_seen = g_input_events;
      settle = kSettleFrames;
    } else if (idle && !typing && !app.wants_frames()) {
      continue;  // woken for nothing: the window shows what it showed
    }
    --settle;
    click.step(window, frames > 2 && app.settled());
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    // A whole-graph export draws this frame offscreen, at the size it needs.
    const int off_w = app.offscreen_width(), off_h = app.offscreen_height();
    if (off_w > 0 && off_h > 0) {
      ImGui::GetIO().DisplaySize = ImVec2(static_cast<float>(off_w), static_cast<float>(off_h));
      ImGui::GetIO().DisplayFramebufferScale = ImVec2(1.f, 1.f);
    }
    ImGui::NewFrame();
    app.frame();
    ImGui::Render();
    int w = 0, h = 0;
    glfwGetFramebufferSize(window, &w, &h);
    const bool offscreen = off_w > 0 && off_h > 0 && offscreen_fb.bind(off_w, off_h);
    if (offscreen) w = off_w, h = off_h;
    glViewport(0, 0, w, h);
    const ImVec4 bg = ImGui::GetStyle().Colors[ImGuiCol_WindowBg];
    glClearColor(bg.x, bg.y, bg.z, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    // Exports read back what was just drawn (app_export.h); window to framebuffer pixels.
    for (hookscope::app::Capture c : app.take_captures()) {
      const ImVec2 s = ImGui::GetIO().DisplayFramebufferScale;
      c.x = static_cast<int>(c.x * s.x), c.y = static_cast<int>(c.y * s.y);
      c.w = std::min(static_cast<int>(c.w * s.x), w - c.x), c.h = std::min(static_cast<int>(c.h * s.y), h - c.y);
      app.capture_written(c, c.x >= 0 && c.y >= 0 && save_png(c.path, c.x, c.y, c.w, c.h, h));
    }
    if (offscreen) {  // the window shows the last on-screen frame meanwhile
      glBindFramebuffer(GL_FRAMEBUFFER, 0);
      continue;
    }
    ++frames;
    // A screenshot waits until what was asked for is loaded and laid out,
    // then a few frames more for fonts and scrolling to settle.
    if (!app.settled() || click.pending()) settled_at = -1;
    else if (settled_at < 0) settled_at = frames;
    const bool settled = settled_at >= 0 && frames >= settled_at + args.screenshot_frame() && app.exports_done();
    if (!args.screenshot.empty() && (settled || frames >= 2000)) {
      if (!settled) std::fprintf(stderr, "hookscope: still loading after %d frames; taking the screenshot anyway\n", frames);
      const bool ok = save_png(args.screenshot, 0, 0, w, h, h);
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

  offscreen_fb.release();
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  app.shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return rc;
}
