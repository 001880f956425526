// A window with the graph and timeline of a recovery trace (policy `none`,
// so the first Reducer's hooks leak and fire stale), rendered for a few
// frames and saved as a PNG: for looking at what the views draw.
//
//   xvfb-run -s "-screen 0 1600x1000x24" hookscope_render_demo [out.png]
//       [--event=N] [--zoom=Z] [--fold=MODULE] [--sample=FUNCTIONS] [--no-hover]
// --sample shows a made-up transformer of that many Functions instead (for
// the level of detail), --fold folds the module groups of that name.
//
// Glue only, in frame order, as Dear ImGui's example main.cpp.

#include <GLFW/glfw3.h>
#include <imgui.h>
#include <imgui_impl_glfw.h>
#include <imgui_impl_opengl3.h>
#include <stb_image_write.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/draw/graph_view.h"
#include "render/sample_graphs.h"
#include "render/draw/timeline_view.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/recorder.h"
#include "trace/strings.h"

using namespace hookscope;

namespace {

analysis::Model record_recovery() {
  trace::MemoryRecorder rec;
  rec.start();
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.policy = trace::DestroyPolicy::kNone;
  o.steps = 8;
  o.recoveries = 2;
  scenarios::run_ddp_scenario(o);
  trace::TraceData data = rec.take_trace();
  data.header.scenario = "recovery --policy none";
  return analysis::Model(std::move(data));
}

// A moment worth a picture: the last stale fire on rank 0 (a leaked hook of
// a destroyed Reducer firing) that the live Reducer's own hook follows, so
// both kinds of badge are on screen. Hook fires are a bulk kind (no
// events_of_kind list), so this walks the events.
size_t interesting_event(const analysis::Model& m) {
  size_t best = m.num_events() - 1;
  auto owner_of = [&](size_t i) {
    const trace::Event e = m.event(i);
    if (e.kind != trace::EventKind::kHookFired) return analysis::kNoIndex;
    const analysis::HookIndex h = m.find_hook(m.source(i), e.key);
    return h == analysis::kNoIndex ? analysis::kNoIndex : m.hooks()[h].owner;
  };
  for (size_t i = 0; i + 2 < m.num_events(); ++i) {
    const analysis::OwnerIndex stale = owner_of(i), live = owner_of(i + 2);
    if (stale == analysis::kNoIndex || live == analysis::kNoIndex || m.event(i).rank != 0) continue;
    if (m.owners()[stale].destroyed_at < i && m.owners()[live].destroyed_at > i) best = i;
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  std::string out = "render-demo.png", fold;
  long long event_arg = -1, sample = 0;
  float zoom = 0.f;
  bool hover = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char* flag) { return a.rfind(flag, 0) == 0 ? a.substr(std::string(flag).size()) : std::string(); };
    if (!value("--event=").empty()) {
      event_arg = std::stoll(value("--event="));
    } else if (!value("--zoom=").empty()) {
      zoom = std::stof(value("--zoom="));
    } else if (!value("--fold=").empty()) {
      fold = value("--fold=");
    } else if (!value("--sample=").empty()) {
      sample = std::stoll(value("--sample="));
    } else if (a == "--no-hover") {
      hover = false;
    } else {
      out = a;
    }
  }
  const analysis::Model model = sample > 0 ? analysis::Model(render::make_sample_trace(
                                                 render::make_transformer_graph(static_cast<int>(sample))))
                                           : record_recovery();
  const size_t event = event_arg >= 0 ? static_cast<size_t>(event_arg)
                       : sample > 0   ? model.num_events() - 1
                                      : interesting_event(model);
  const analysis::State state = model.state_at(event);

  if (!glfwInit()) {
    std::fprintf(stderr, "render_demo: no display (run under xvfb-run)\n");
    return 1;
  }
  glfwWindowHint(GLFW_CONTEXT_VERSION_MAJOR, 3);
  glfwWindowHint(GLFW_CONTEXT_VERSION_MINOR, 3);
  glfwWindowHint(GLFW_OPENGL_PROFILE, GLFW_OPENGL_CORE_PROFILE);
  const int width = 1600, height = 1000;
  GLFWwindow* window = glfwCreateWindow(width, height, "hookscope render demo", nullptr, nullptr);
  if (!window) {
    std::fprintf(stderr, "render_demo: could not create an OpenGL 3.3 window\n");
    return 1;
  }
  glfwMakeContextCurrent(window);
  IMGUI_CHECKVERSION();
  ImGui::CreateContext();
  ImGui::StyleColorsDark();
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  if (std::filesystem::exists(font)) io.Fonts->AddFontFromFileTTF(font, 15.f);
  ImGui_ImplGlfw_InitForOpenGL(window, true);
  ImGui_ImplOpenGL3_Init("#version 330");

  render::GraphView graph;
  render::TimelineView timeline;
  graph.set_model(&model);
  timeline.set_model(&model);
  graph.wait_for_layout();
  if (!fold.empty()) {
    for (uint32_t g = 0; g < graph.scene()->groups().size(); ++g) {
      if (graph.scene()->groups()[g].name == fold) graph.set_folded(g, true);
      graph.wait_for_layout();
    }
  }
  size_t current = event;

  // From the third frame the mouse rests on the first badge of rank 0's
  // 0.weight AccumulateGrad, so the picture shows its tooltip.
  analysis::FunctionIndex weight = analysis::kNoIndex;
  for (const analysis::FunctionAt& fa : state.functions) {
    const analysis::FunctionInfo& info = model.functions()[fa.function];
    if (info.rank == 0 && model.str(info.label).rfind("0.weight", 0) == 0) weight = fa.function;
  }
  for (int frame = 0; frame < 6; ++frame) {
    render::Vec2 lo, hi;
    if (frame == 1 && zoom > 0.f) graph.set_view(graph.center(), zoom);
    if (hover && frame >= 2 && graph.box_on_screen(weight, &lo, &hi)) {
      const float z = graph.zoom();
      glfwSetCursorPos(window, lo.x + 50.f * z, hi.y - 13.5f * z);
    }
    glfwPollEvents();
    ImGui_ImplOpenGL3_NewFrame();
    ImGui_ImplGlfw_NewFrame();
    ImGui::NewFrame();
    ImGui::SetNextWindowPos({0, 0});
    ImGui::SetNextWindowSize(io.DisplaySize);
    ImGui::Begin("hookscope", nullptr, ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings);
    ImGui::Text("%s   |   event #%zu: %s", sample > 0 ? "made-up transformer" : "recovery --policy none", current,
                model.describe(current).c_str());
    ImGui::BeginChild("graph", {0, io.DisplaySize.y * 0.66f}, true);
    graph.draw(state);
    ImGui::EndChild();
    ImGui::BeginChild("timeline", {0, 0}, true);
    const render::TimelineResult t = timeline.draw(current);
    if (t.current_event) current = *t.current_event;
    ImGui::EndChild();
    ImGui::End();
    ImGui::Render();
    int fw = 0, fh = 0;
    glfwGetFramebufferSize(window, &fw, &fh);
    glViewport(0, 0, fw, fh);
    glClearColor(0.1f, 0.1f, 0.11f, 1.f);
    glClear(GL_COLOR_BUFFER_BIT);
    ImGui_ImplOpenGL3_RenderDrawData(ImGui::GetDrawData());
    if (frame == 5) {
      std::vector<unsigned char> pixels(static_cast<size_t>(fw) * fh * 3);
      glPixelStorei(GL_PACK_ALIGNMENT, 1);
      glReadPixels(0, 0, fw, fh, GL_RGB, GL_UNSIGNED_BYTE, pixels.data());
      stbi_flip_vertically_on_write(1);
      if (!stbi_write_png(out.c_str(), fw, fh, 3, pixels.data(), fw * 3)) {
        std::fprintf(stderr, "render_demo: could not write %s\n", out.c_str());
        return 1;
      }
      std::printf("wrote %s (%dx%d), event %zu\n", out.c_str(), fw, fh, current);
    }
    glfwSwapBuffers(window);
  }
  ImGui_ImplOpenGL3_Shutdown();
  ImGui_ImplGlfw_Shutdown();
  ImGui::DestroyContext();
  glfwDestroyWindow(window);
  glfwTerminate();
  return 0;
}
