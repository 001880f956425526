#include "app_state.h"

#include <GLFW/glfw3.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "scenarios/autograd_demo.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/reader.h"
#include "trace/strings.h"

namespace hookscope::app {

void LiveSink::on_chunk(std::unique_ptr<trace::Chunk> chunk) {
  std::lock_guard<std::mutex> lock(mutex_);
  pending_.push_back(std::move(chunk));
}

void LiveSink::drain(std::vector<std::unique_ptr<trace::Chunk>>& out) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (auto& c : pending_) out.push_back(std::move(c));
  pending_.clear();
}

App::App(const Args& args) : args_(args) {
  if (args_.live) {
    start_live();
  } else {
    open_files(args_.files);
  }
}

App::~App() { shutdown(); }

void App::setup_style(GLFWwindow* window) {
  ImGuiIO& io = ImGui::GetIO();
  io.IniFilename = nullptr;
  float xscale = 1.f, yscale = 1.f;
  glfwGetWindowContentScale(window, &xscale, &yscale);
  const float scale = std::max(1.f, xscale);
  const char* font = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";
  if (std::filesystem::exists(font)) {
    io.Fonts->AddFontFromFileTTF(font, 15.f * scale);
  } else {
    io.Fonts->AddFontDefault();
  }
  if (args_.light) {
    ImGui::StyleColorsLight();
  } else {
    ImGui::StyleColorsDark();
  }
  ImGui::GetStyle().ScaleAllSizes(scale);
}

void App::open_files(const std::vector<std::string>& files) {
  traces_.clear();
  for (const auto& f : files) {
    try {
      traces_.push_back(trace::read_trace(f));
      if (!traces_.back().truncation.empty()) {
        error_ += fmt::format("{}: {}\n", f, traces_.back().truncation);
      }
    } catch (const std::exception& e) {
      error_ += fmt::format("{}\n", e.what());
    }
  }
  events_.clear();
  event_trace_.clear();
  for (uint32_t t = 0; t < traces_.size(); ++t) {
    for (const auto& e : traces_[t].events) {
      events_.push_back(e);
      event_trace_.push_back(t);
    }
  }
  std::vector<size_t> order(events_.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return events_[a].t_ns < events_[b].t_ns; });
  std::vector<trace::Event> e2;
  std::vector<uint32_t> t2;
  for (size_t i : order) {
    e2.push_back(events_[i]);
    t2.push_back(event_trace_[i]);
  }
  events_.swap(e2);
  event_trace_.swap(t2);
  if (args_.at >= 0) current_ = std::min<size_t>(static_cast<size_t>(args_.at), events_.size() ? events_.size() - 1 : 0);
}

void App::start_live() {
  traces_.assign(1, trace::TraceData{});
  traces_[0].source = "live: " + args_.scenario.scenario;
  live_recorder_ = std::make_unique<trace::Recorder>(live_sink_);
  live_recorder_->start();
  live_thread_ = std::thread([this] {
    try {
      if (args_.scenario.scenario == "autograd-demo") {
        scenarios::AutogradDemoOptions o;
        o.steps = args_.scenario.steps > 0 ? args_.scenario.steps : 5;
        o.seed = args_.scenario.seed;
        auto r = scenarios::run_autograd_demo(o);
        live_result_ = fmt::format("loss {:.4f} -> {:.4f}", r.losses.front(), r.losses.back());
      } else {
        auto o = cli::to_ddp_options(args_.scenario);
        auto r = scenarios::run_ddp_scenario(o);
        live_result_ = scenarios::format_result(o, r);
      }
    } catch (const std::exception& e) {
      live_result_ = std::string("the scenario failed: ") + e.what();
    }
    live_done_ = true;
  });
}

void App::poll_live() {
  if (!live_recorder_) return;
  if (live_done_ && live_thread_.joinable()) {
    live_thread_.join();
    live_recorder_->finish();
  }
  std::vector<std::unique_ptr<trace::Chunk>> fresh;
  live_sink_.drain(fresh);
  if (fresh.empty()) return;
  for (auto& c : fresh) live_chunks_.push_back(std::move(c));
  std::vector<const trace::Chunk*> view;
  for (auto& c : live_chunks_) view.push_back(c.get());
  events_ = trace::merge_chunks(view);
  event_trace_.assign(events_.size(), 0);
  traces_[0].strings = trace::strings_since(0);
}

void App::shutdown() {
  if (live_thread_.joinable()) live_thread_.join();
  if (live_recorder_ && live_recorder_->attached()) live_recorder_->finish();
}

void App::frame() {
  const auto t0 = std::chrono::steady_clock::now();
  poll_live();
  ImGuiIO& io = ImGui::GetIO();
  if (!io.WantTextInput && !events_.empty()) {
    if (ImGui::IsKeyPressed(ImGuiKey_RightArrow) && current_ + 1 < events_.size()) ++current_;
    if (ImGui::IsKeyPressed(ImGuiKey_LeftArrow) && current_ > 0) --current_;
    if (ImGui::IsKeyPressed(ImGuiKey_Home)) current_ = 0;
    if (ImGui::IsKeyPressed(ImGuiKey_End)) current_ = events_.size() - 1;
  }
  draw_menu();
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float status_h = ImGui::GetFrameHeight();
  const float menu_h = ImGui::GetFrameHeight();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x, vp->Pos.y + menu_h));
  ImGui::SetNextWindowSize(ImVec2(vp->Size.x * 0.35f, vp->Size.y - menu_h - status_h));
  draw_summary_panel();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + vp->Size.x * 0.35f, vp->Pos.y + menu_h));
  ImGui::SetNextWindowSize(ImVec2(vp->Size.x * 0.65f, vp->Size.y - menu_h - status_h));
  draw_events_panel();
  draw_status_bar();
  draw_error_dialog();
  frame_ms_.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

void App::report() {
  if (args_.bench_frames <= 0 || frame_ms_.empty()) return;
  std::vector<double> v = frame_ms_;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  fmt::print("median CPU frame time over {} frames: {:.3f} ms\n", v.size(), v[v.size() / 2]);
}

void App::draw_menu() {
  if (ImGui::BeginMainMenuBar()) {
    if (ImGui::BeginMenu("File")) {
      if (ImGui::MenuItem("Quit", "Ctrl+Q")) request_quit(0);
      ImGui::EndMenu();
    }
    ImGui::EndMainMenuBar();
  }
}

void App::draw_status_bar() {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float h = ImGui::GetFrameHeight();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x, vp->Pos.y + vp->Size.y - h));
  ImGui::SetNextWindowSize(ImVec2(vp->Size.x, h));
  ImGui::Begin("##status", nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoFocusOnAppearing);
  std::string src = traces_.empty() ? "nothing open" : traces_[0].source;
  if (traces_.size() > 1) src += fmt::format(" (+{} more)", traces_.size() - 1);
  if (events_.empty()) {
    ImGui::Text("%s | no events", src.c_str());
  } else {
    const auto& e = events_[current_];
    const double t_ms = (e.t_ns - events_.front().t_ns) / 1e6;
    ImGui::Text("%s | event %zu / %zu | t = %.3f ms | rank %u%s", src.c_str(), current_ + 1,
                events_.size(), t_ms, static_cast<unsigned>(e.rank),
                live_recorder_ && !live_done_ ? " | live: running" : "");
  }
  ImGui::End();
}

void App::draw_error_dialog() {
  if (error_.empty()) return;
  ImGui::OpenPopup("Could not open");
  if (ImGui::BeginPopupModal("Could not open", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::TextUnformatted(error_.c_str());
    if (ImGui::Button("OK")) {
      error_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace hookscope::app
