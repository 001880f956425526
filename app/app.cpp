// The App: its construction and style, the frame loop and its windows
// (progress, errors). A model reaches it in app_model.cpp (Note [Publishing
// a model]); the panels are in panel_*.cpp, the exports in app_export.cpp.
#include "app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "app_assets.h"
#include "render/layout/colors.h"

namespace hookscope::app {

// Note [UI glyphs]: every character the UI prints is in the font atlas,
// or ImGui draws "?". Latin-1 is ImGui's default; the text also uses
// general punctuation ("…", "—", "•"), arrows ("→") and a few shapes.
// tests/app/test_text.cpp scans the sources' strings against the atlas.
const ImWchar* ui_glyph_ranges() {
  static const ImWchar kRanges[] = {
      0x0020, 0x00FF,  // Basic Latin, Latin-1 ("·", "×")
      0x2010, 0x205E,  // general punctuation: dashes, "…", "•", "‹›"
      0x2190, 0x21FF,  // arrows
      0x2200, 0x22FF,  // mathematical operators ("≤", "≥", "≠")
      0x25A0, 0x25FF,  // geometric shapes ("■", "▶", "●")
      0x2713, 0x2717,  // check marks
      0,
  };
  return kRanges;
}

App::App(const Args& args)
    : args_(args), recent_(args.headless_frames() ? std::filesystem::path() : default_recent_file()) {
  if (args_.live) {
    files_.clear();
    title_ = "live: " + args_.scenario.scenario;
    live_.start(args_.scenario, title_, args_.cli);
  } else if (!args_.files.empty()) {
    open_files(args_.files);
    initial_load_pending_ = true;
  }
  if (!args_.compare.empty()) open_compare(args_.compare);
  if (!args_.export_graph.empty()) {
    const ExportJob job = export_format(args_.export_graph) == "svg" ? ExportJob::kGraphSvg : ExportJob::kGraphPng;
    request_export({job, args_.export_graph, args_.export_whole});
  }
  if (!args_.export_lanes.empty()) request_export({ExportJob::kLanesPng, args_.export_lanes, false});
  export_.from_args = !export_.queue.empty();
}

App::~App() {
  shutdown();
  // io.IniFilename points into this App: save now and let go of it, so an
  // ImGui context that outlives the App never writes to a freed name.
  if (ImGui::GetCurrentContext() && !ini_path_.empty() && ImGui::GetIO().IniFilename == ini_path_.c_str()) {
    ImGui::SaveIniSettingsToDisk(ini_path_.c_str());
    ImGui::GetIO().IniFilename = nullptr;
  }
}

void App::setup_style(float scale) {
  ImGuiIO& io = ImGui::GetIO();
  // Headless runs (screenshots, benchmarks, tests) neither read nor write the
  // user's layout, so they look the same everywhere.
  if (args_.headless_frames() || config_dir().empty()) {
    io.IniFilename = nullptr;
  } else {
    ini_path_ = (config_dir() / "imgui.ini").string();
    io.IniFilename = ini_path_.c_str();
  }
  scale = std::clamp(scale, 1.f, 4.f);
  if (const std::string font = ui_font().string(); !font.empty()) {
    io.Fonts->AddFontFromFileTTF(font.c_str(), 15.f * scale, nullptr, ui_glyph_ranges());
  } else {
    ImFontConfig config;
    config.SizePixels = 13.f * scale;
    io.Fonts->AddFontDefault(&config);
  }
  render::set_light_palette(args_.light);  // Note [Canvas palettes]
  if (args_.light) {
    ImGui::StyleColorsLight();
  } else {
    ImGui::StyleColorsDark();
  }
  ImGuiStyle& style = ImGui::GetStyle();
  style.WindowRounding = 3.f;
  style.FrameRounding = 2.f;
  style.ScaleAllSizes(scale);
}

std::string App::describe_view() const {
  const analysis::Model* m = session_.model();
  if (!m) return "nothing open";
  const render::GraphDrawStats& g = graph_.stats();
  const size_t i = session_.current();
  const auto counts = analysis::count_findings(*findings_.findings);
  if (!session_.full_state()) {
    return fmt::format("event {} / {} ({}): computing the state; {} errors, {} warnings found", i,
                       m->num_events() - 1, trace::to_string(m->event(i).kind), counts.errors, counts.warnings);
  }
  return fmt::format("event {} / {} ({}): {} Functions live, {} hooks attached; graph drew {} boxes, "
                     "{} as alarms; {} errors, {} warnings found",
                     i, m->num_events() - 1, trace::to_string(m->event(i).kind),
                     session_.state().functions.size(), session_.state().num_hooks(), g.boxes,
                     g.alarms, counts.errors, counts.warnings);
}

bool App::settled() const {
  return !loader_.busy() && !initial_load_pending_ && (!live_.active() || live_.finished()) &&
         (!session_.model() || (findings_.ready && graph_.layout_ready() && !graph_.layout_pending())) &&
         compare_settled();
}

bool App::wants_frames() const {  // Note [Idle frames]
  auto graph_busy = [](const std::unique_ptr<render::GraphView>& g) { return g && g->busy(); };
  return session_.playing() || session_.state_pending() || initial_load_pending_ || loader_.busy() ||
         compare_.loader.busy() || (compare_.findings.valid() && !compare_findings_ready()) ||
         compare_.pending.valid() || !compare_.retired.empty() ||
         (live_.active() && !live_.finished()) || rows_.pending.valid() ||
         !rows_.retired.empty() || findings_.pending.valid() ||
         (findings_.wanted && findings_.wanted.get() != findings_.model) || graph_.busy() ||
         (show_compare_ && (graph_busy(compare_graphs_.view_a) || graph_busy(compare_graphs_.view_b) ||
                            compare_graphs_.pending)) ||
         graph_busy(export_.whole) || !exports_done() || views_.focus_frames > 0;
}

void App::shutdown() {
  live_.stop();
  if (findings_.pending.valid()) findings_.pending.wait();
  rows_.retire();
  for (auto& f : rows_.retired) f.wait();
  rows_.retired.clear();
}

// ---------------------------------------------------------------- frame

void App::jump_to(size_t event, analysis::FunctionIndex select) {
  session_.set_playing(false);
  session_.go_to(event);
  if (select != analysis::kNoIndex) {
    session_.select_function(select);
    graph_.focus(select);
  }
}

void App::place(float x, float y, float w, float h) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  const float top = ImGui::GetFrameHeight();           // menu bar
  const float bottom = ImGui::GetFrameHeight() + 6.f;  // status bar
  const float W = vp->WorkSize.x, H = vp->Size.y - top - bottom;
  const ImGuiCond cond = reset_layout_ ? ImGuiCond_Always : ImGuiCond_FirstUseEver;
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + x * W, vp->Pos.y + top + y * H), cond);
  ImGui::SetNextWindowSize(ImVec2(w * W, h * H), cond);
}

void App::frame() {
  const auto t0 = std::chrono::steady_clock::now();
  // Note [Idle frames]: the first frame after a wait follows seconds of
  // nothing; playback started in it must not count them.
  const double dt = last_frame_ == std::chrono::steady_clock::time_point{}
                        ? 0.0
                        : std::min(std::chrono::duration<double>(t0 - last_frame_).count(), 0.1);
  last_frame_ = t0;
  poll_live();
  poll_background();
  session_.poll();  // Note [Lazy seeks in the GUI]
  handle_keys();
  // A benchmark plays a fixed 1/60 s of events a frame, so that `--play 120000
  // --bench-frames N` measures exactly 2,000 events a frame however slow the
  // frames are (with the wall clock, a slower frame moves further).
  session_.advance(args_.bench_frames > 0 ? 1.0 / 60.0 : dt);
  if (session_.current() != last_current_) {
    last_current_ = session_.current();
    scroll_events_ = true;
  }

  draw_menu();
  // Note [Default layout]: the graph is the largest panel, top left; what
  // describes the selection is to its right; time runs along the bottom.
  // The Function panel takes most of the right column (its hook table and
  // history need the room at 1280x800); the Reducers panel scrolls below it.
  constexpr float kLeft = kLayoutLeft, kTop = kLayoutTop, kTimeline = kLayoutTimeline, kFunction = kLayoutFunction;
  place(0.f, 0.f, kLeft, kTop);
  draw_graph_panel();
  place(kLeft, 0.f, 1.f - kLeft, kFunction);
  draw_inspector_panel();
  place(kLeft, kFunction, 1.f - kLeft, kTop - kFunction);
  draw_reducers_panel();
  place(0.f, kTop, 1.f, kTimeline);
  draw_timeline_panel();
  place(0.f, kTop + kTimeline, kLeft, 1.f - kTop - kTimeline);
  draw_events_panel();
  place(kLeft, kTop + kTimeline, 1.f - kLeft, 1.f - kTop - kTimeline);
  draw_diagnostics_panel();
  if (show_compare_) {
    // Two graphs side by side need the width: over the graph and the right column.
    place(0.f, 0.f, 1.f, kTop + kTimeline);
    draw_compare_panel();
  }
  draw_view_panels();
  draw_exports();
  reset_layout_ = false;
  draw_status_bar();
  draw_help_window();
  draw_goto_dialog();
  draw_file_browser();
  draw_progress();
  draw_error_dialog();
  draw_export_dialog();
  frame_ms_.push_back(
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
}

void App::report() {
  if (args_.bench_frames <= 0 || frame_ms_.empty()) return;
  // The first frames build fonts and the layout: not what a user scrolls through.
  std::vector<double> v(frame_ms_.begin() + static_cast<long>(std::min<size_t>(frame_ms_.size() - 1, kBenchWarmupFrames)),
                        frame_ms_.end());
  std::sort(v.begin(), v.end());
  const analysis::Model* m = session_.model();
  fmt::print("{} Functions, {} events, {} frames: median CPU frame time {:.3f} ms (p90 {:.3f} ms)\n",
             m ? m->functions().size() : 0, m ? m->num_events() : 0, v.size(), v[v.size() / 2],
             v[std::min(v.size() - 1, v.size() * 9 / 10)]);
}

namespace {

// A small undecorated window in the middle of the main viewport (End() it).
void begin_progress_window(const char* title) {
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + vp->Size.x * 0.5f, vp->Pos.y + vp->Size.y * 0.5f),
                          ImGuiCond_Always, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(std::min(560.f, vp->Size.x * 0.8f), 0.f));
  ImGui::Begin(title, nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove |
                   ImGuiWindowFlags_NoFocusOnAppearing);
}

}  // namespace

void App::draw_progress() {
  const bool main_busy = loader_.busy();
  const bool compare_busy = compare_.loader.busy();
  if (!main_busy && !compare_busy) {
    // The first layout of a huge graph takes a while off the UI thread
    // (Note [Layout jobs]): say so, the window stays live meanwhile.
    if (session_.model() && graph_.layout_pending() && !graph_.layout_ready()) {
      begin_progress_window("Laying out");
      ImGui::Text("laying out the graph (%zu Functions)", session_.model()->functions().size());
      const float pulse = static_cast<float>(std::fmod(ImGui::GetTime() * 0.5, 1.0));
      ImGui::ProgressBar(pulse, ImVec2(-1.f, 0.f), "");
      ImGui::End();
    }
    return;
  }
  const TraceLoader& l = main_busy ? loader_ : compare_.loader;
  begin_progress_window("Loading");
  ImGui::TextUnformatted(l.stage().c_str());
  ImGui::ProgressBar(l.progress(), ImVec2(-1.f, 0.f));
  ImGui::End();
}

void App::draw_error_dialog() {
  if (error_.empty()) return;
  ImGui::OpenPopup("Could not open");
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + vp->Size.x * 0.5f, vp->Pos.y + vp->Size.y * 0.5f),
                          ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  if (ImGui::BeginPopupModal("Could not open", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) {
    ImGui::PushTextWrapPos(ImGui::GetFontSize() * 40.f);
    ImGui::TextUnformatted(error_.c_str());
    ImGui::PopTextWrapPos();
    if (session_.model()) {
      ImGui::TextDisabled("What was open stays open.");
    }
    if (ImGui::Button("OK") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter)) ||
        ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
      error_.clear();
      ImGui::CloseCurrentPopup();
    }
    ImGui::EndPopup();
  }
}

}  // namespace hookscope::app
