#include "app.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "app_assets.h"
#include "render/layout/colors.h"

namespace hookscope::app {

App::App(const Args& args)
    : args_(args), recent_(args.headless_frames() ? std::filesystem::path() : default_recent_file()) {
  if (args_.live) {
    files_.clear();
    title_ = "live: " + args_.scenario.scenario;
    live_.start(args_.scenario, title_);
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
    io.Fonts->AddFontFromFileTTF(font.c_str(), 15.f * scale);
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

// ---------------------------------------------------------------- opening

void App::open_files(std::vector<std::string> files) {
  if (files.empty()) return;
  loader_.start(std::move(files));
}

void App::open_compare(std::vector<std::string> files) {
  if (files.empty()) return;
  compare_.files = files;
  compare_.error.clear();
  compare_.loader.start(std::move(files));
  show_compare_ = true;
}

void App::on_drop(std::vector<std::string> files) {
  if (ImGui::GetIO().KeyShift) {
    open_compare(std::move(files));
  } else {
    open_files(std::move(files));
  }
}

void App::adopt(LoadResult result) {
  error_ += result.errors;
  // Headless runs have nobody to read the dialog: say it on stderr too.
  if (args_.headless_frames() && !result.errors.empty()) {
    fmt::print(stderr, "hookscope: could not open:\n{}", result.errors);
  }
  if (args_.headless_frames() && !result.warnings.empty()) {
    fmt::print(stderr, "hookscope: read in part:\n{}", result.warnings);
  }
  if (!result.model) return;  // nothing readable: what was open stays open
  warning_ = result.warnings;
  if (!warning_.empty() && warning_.back() == '\n') warning_.pop_back();
  live_.stop();
  files_ = result.files;
  title_ = files_.size() == 1 ? files_[0]
                              : fmt::format("{} (+{} more)", files_[0], files_.size() - 1);
  recent_.add(files_);
  publish_model(std::move(result.model), false, std::move(result.scene), std::move(result.story),
                std::move(result.timeline));
}

namespace {

// Whether a Function is live right after event `at` (State::functions not
// empty): from the model's lifetimes, without building the State the
// Session builds next.
bool any_live_function(const analysis::Model& model, size_t at) {
  return std::any_of(model.functions().begin(), model.functions().end(), [&](const analysis::FunctionInfo& f) {
    return f.created_at <= at && at < f.released_at;
  });
}

}  // namespace

// Note [Publishing a model]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A model (a trace opened, a live run grown) reaches the views here and only
// here: the graph and timeline views, the Session (current event, selection),
// the Events panel's rows, the findings and the compare diff. Every other
// panel reads session_.model() each frame and keeps caches keyed by the model
// pointer, so nothing else has to be told. A panel that keeps state across
// models adds its reset here, not in its own file.
void App::publish_model(std::shared_ptr<const analysis::Model> model, bool keep_position,
                        std::shared_ptr<render::GraphScene> scene, std::shared_ptr<const render::RunStory> story,
                        std::shared_ptr<render::TimelineIndex> timeline) {
  // The views point at the model: give them the new one before the old goes.
  // What the loader thread built for it comes along; the rest is built here.
  if (model && story && timeline) {
    timeline_.set_model(model.get(), std::move(*timeline), *story);
  } else {
    timeline_.set_model(model.get());
  }
  size_t at = 0;
  if (!keep_position && args_.at >= 0) {
    at = static_cast<size_t>(args_.at);
    if (model && at >= model->num_events()) {  // a user error: say so (exit 2 when headless)
      const std::string what = fmt::format("--at {}: the trace has events 0 to {}; give an event in that range",
                                           args_.at, model->num_events() == 0 ? 0 : model->num_events() - 1);
      if (args_.headless_frames()) {
        fmt::print(stderr, "hookscope: {}\n", what);
        request_quit(2);
      }
      warning_ = what;
    }
    args_.at = -1;  // only for the first trace opened
  } else if (!keep_position && model && model->num_events() > 0) {
    // Open at the end, as a debugger opens at the last frame; but a run that
    // released everything before it ended would show an empty graph there:
    // then open at its last backward pass, the graph and its hooks complete.
    at = model->num_events() - 1;
    const auto& ends = model->events_of_kind(trace::EventKind::kBackwardEnd);
    if (!ends.empty() && !any_live_function(*model, at)) at = ends.back();
  }
  // The graph's first layout is that of the opening event (Note [One layout
  // at open]): --play opens at the first.
  if (keep_position) {
    graph_.update_model(model.get());
  } else {
    const bool plays = args_.play > 0.0 && model;
    const size_t open_at = plays ? 0 : model ? std::min(at, model->num_events() - 1) : 0;
    graph_.set_model(model.get(), std::move(scene), std::move(story),  // built by the loader
                     model && model->num_events() > 0 ? static_cast<analysis::EventIndex>(open_at) : analysis::kNever);
  }
  session_.set_model(model, keep_position, at);
  if (!keep_position && args_.select >= 0 && model) {
    for (uint32_t s = 0; s < model->num_traces(); ++s) {
      const auto f = model->find_function(s, static_cast<uint64_t>(args_.select));
      if (f != analysis::kNoIndex) {
        session_.select_function(f);
        graph_.focus(f);
        break;
      }
    }
    if (session_.selected_function() == analysis::kNoIndex) {
      warning_ = fmt::format("--select {}: no Function with that id in the trace (ids are the #N on the boxes)",
                             args_.select);
      if (args_.headless_frames()) {
        fmt::print(stderr, "hookscope: {}\n", warning_);
        request_quit(2);
      }
    }
    args_.select = -1;
  }
  if (!keep_position && args_.play > 0.0 && model) {
    session_.set_speed(args_.play);
    session_.go_first();
    session_.set_playing(true);
    args_.play = 0.0;
  }
  rows_.retire();
  rows_.model = nullptr;
  rows_.expression.clear();
  rows_.all = true;
  rows_.rows.clear();
  set_filter(filter_text_);
  if (!keep_position) {
    findings_.findings.clear();
    findings_.ready = false;
    findings_.model = nullptr;
    findings_.described.reset();
  }
  findings_.wanted = model;
  compare_.diff.reset();
  compare_.diffed_against = nullptr;
  scroll_events_ = true;
}

void App::set_filter(const std::string& expression) {
  std::snprintf(filter_text_, sizeof(filter_text_), "%s", expression.c_str());
  const analysis::Model* model = session_.model();
  if (rows_.model == model && rows_.expression == expression) return;
  FilterParseError error;
  EventFilter filter = EventFilter::parse(expression, &error);
  rows_.error = error;
  if (!error.message.empty()) return;  // keep showing the last good rows
  rows_.model = model;
  rows_.expression = expression;
  rows_.retire();
  if (filter.empty() || !model) {
    rows_.all = true;
    rows_.rows.clear();
    return;
  }
  rows_.cancel = std::make_shared<std::atomic<bool>>(false);
  rows_.pending = std::async(std::launch::async, [filter = std::move(filter), shared = session_.shared_model(),
                                                  cancel = rows_.cancel] {
    return filter.select(*shared, 0, shared->num_events(), cancel.get());
  });
  if (args_.headless_frames()) rows_.pending.wait();
}

void App::poll_background() {
  if (auto r = args_.headless_frames() ? loader_.wait() : loader_.poll()) {
    initial_load_pending_ = false;
    adopt(std::move(*r));
  }
  if (auto r = args_.headless_frames() ? compare_.loader.wait() : compare_.loader.poll()) {
    compare_.error = r->errors;
    error_ += r->errors;
    if (r->model) {
      compare_.model = std::move(r->model);
      compare_.files = r->files;
      compare_.diff.reset();
      compare_.diffed_against = nullptr;
    }
  }
  std::erase_if(rows_.retired, [](auto& f) {
    return f.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
  });
  if (rows_.pending.valid() &&
      rows_.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
    rows_.rows = rows_.pending.get();
    rows_.all = false;
    scroll_events_ = true;
  }
  if (!findings_.pending.valid() && findings_.wanted && findings_.wanted.get() != findings_.model) {
    findings_.running = findings_.wanted;
    findings_.pending = std::async(std::launch::async, [m = findings_.running] {
      analysis::FindingTable t = analysis::diagnose_table(*m);
      release_free_memory();  // its temporaries (Note [Returning freed memory])
      return t;
    });
  }
  if (findings_.pending.valid()) {
    if (args_.headless_frames()) findings_.pending.wait();
    if (findings_.pending.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
      try {
        findings_.findings = findings_.pending.get();
      } catch (const std::exception& e) {
        warning_ = fmt::format("diagnostics failed: {}", e.what());
        findings_.findings.clear();
      }
      findings_.model = findings_.running.get();
      findings_.described = findings_.running;
      // Findings of an older model are shown until the latest one's are in;
      // `ready` means they describe the model on screen.
      findings_.ready = findings_.model == session_.model();
    }
  }
  // The diff needs both models and this side's findings.
  if (compare_.model && session_.model() && findings_.ready &&
      compare_.diffed_against != session_.model()) {
    compare_.diff = std::make_unique<analysis::ModelDiff>(
        analysis::diff_models(*session_.model(), findings_.findings.to_vector(), *compare_.model,
                              analysis::diagnose(*compare_.model)));
    compare_.diffed_against = session_.model();
  }
  // Screenshots and test frames see each layout landed; a benchmark only in
  // the warm-up frames it does not count (report()): later layouts land in
  // the background, as they do for a user.
  if (args_.headless_frames() && session_.model() &&
      (args_.bench_frames <= 0 || frame_ms_.size() < kBenchWarmupFrames)) {
    graph_.wait_for_layout();
  }
}

std::string App::describe_view() const {
  const analysis::Model* m = session_.model();
  if (!m) return "nothing open";
  const render::GraphDrawStats& g = graph_.stats();
  const size_t i = session_.current();
  const auto counts = analysis::count_findings(findings_.findings);
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

// ---------------------------------------------------------------- live

void App::poll_live() {
  auto update = live_.poll(args_.headless_frames());
  if (!update) return;
  error_ += update->error;
  if (update->model) publish_model(std::move(update->model), session_.model() != nullptr);
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
  const double dt = last_frame_ == std::chrono::steady_clock::time_point{}
                        ? 0.0
                        : std::chrono::duration<double>(t0 - last_frame_).count();
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
  constexpr float kLeft = 0.62f, kTop = 0.52f, kTimeline = 0.27f, kFunction = 0.34f;
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
