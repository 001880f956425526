// Export from the GUI (app/app_export.h): File > Export ..., the
// --export-graph / --export-lanes flags, and the whole graph drawn fitted
// in a window of its own for a PNG.
#include "app_export.h"

#include <fmt/format.h>
#include <imgui_internal.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cfloat>
#include <filesystem>
#include <fstream>

#include "app.h"
#include "render/layout/graph_svg.h"

namespace hookscope::app {

namespace {

constexpr int kSettleFrames = 4;  // frames a capture waits for layout, fit and fonts
constexpr const char* kWholeTitle = "Graph (whole, for export)";

Capture capture_of(const std::string& path, float x0, float y0, float x1, float y1) {
  return {path, static_cast<int>(x0), static_cast<int>(y0), static_cast<int>(x1 - x0), static_cast<int>(y1 - y0)};
}

bool write_text(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(out);
}

}  // namespace

std::string export_format(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  for (char& c : ext) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return ext == ".svg" ? "svg" : ext == ".png" ? "png" : "";
}

void App::request_export(ExportRequest request) {
  export_.queue.push_back(std::move(request));
  export_.frames = 0;
}

std::vector<Capture> App::take_captures() { return std::exchange(export_.captures, {}); }

void App::capture_written(const Capture& c, bool ok) {
  export_.message = ok ? fmt::format("wrote {} ({}x{})", c.path, c.w, c.h) : fmt::format("could not write {}", c.path);
  export_.failures += ok ? 0 : 1;
  if (export_.from_args) fmt::print(ok ? stdout : stderr, "{}\n", export_.message);
}

// One request per frame at most; PNGs wait kSettleFrames frames for what
// they show (the Lanes panel in front, the whole graph laid out and fitted).
void App::draw_exports() {
  if (export_.whole) draw_export_window();
  if (export_.queue.empty() || export_.queue.front().job != ExportJob::kGraphPng || !export_.queue.front().whole) {
    if (export_.captures.empty()) export_.off_w = export_.off_h = 0;  // back on screen once read
  }
  if (export_.queue.empty()) {
    export_.whole.reset();
    if (export_.from_args && export_.captures.empty()) request_quit(export_.failures ? 1 : 0);
    return;
  }
  // An export waits for the full state (Note [Lazy seeks in the GUI]).
  if (!settled() || !session_.model() || !graph_.layout_ready() || session_.state_pending()) return;
  const ExportRequest& r = export_.queue.front();
  ++export_.frames;
  bool done = true;
  if (r.job == ExportJob::kGraphSvg) {
    render::GraphSvgOptions o;
    o.palette = &render::palette();
    if (graph_.compact()) o.metrics = render::compact_metrics(o.metrics);
    o.whole = r.whole;
    graph_.visible_rect(&o.view_min, &o.view_max);
    // The layout measured its boxes' text with this font at metrics.line_height: so does the SVG.
    const float size = o.metrics.line_height;
    o.measure = [size](std::string_view s) {
      return ImGui::GetFont()->CalcTextSizeA(size, FLT_MAX, 0.f, s.data(), s.data() + s.size()).x;
    };
    render::GraphSvgStats st;
    const std::string svg =
        graph_svg(*graph_.scene(), *graph_.folded_graph(), *graph_.layout(), session_.state(), o, &st);
    const bool ok = write_text(r.path, svg);
    capture_written({r.path, 0, 0, static_cast<int>(st.width), static_cast<int>(st.height)}, ok);
  } else if (r.job == ExportJob::kGraphPng && !r.whole) {
    done = export_.frames > 2;  // the menu and the dialog gone from the picture
    const auto& c = graph_.stats().content;
    if (done) export_.captures.push_back(capture_of(r.path, c.x0, c.y0, c.x1, c.y1));
  } else if (r.job == ExportJob::kGraphPng) {
    if (!export_.whole) {
      render::GraphViewOptions o;
      o.minimap = false;
      o.pack_aspect = graph_.packed_aspect();  // the same packing as on screen (and in the SVG)
      export_.whole = std::make_unique<render::GraphView>(o);
      // The box shape first, then the model at the event it draws: one layout
      // (Note [One layout at open]), not a full one the compact one replaces.
      export_.whole->set_compact(graph_.compact());
      export_.whole->set_model(session_.model(), nullptr, nullptr,
                              static_cast<analysis::EventIndex>(session_.current()));
      export_.fitted = false;
      export_.frames = 0;
    }
    done = export_.fitted && export_.off_w > 0 && export_.frames > kSettleFrames;
    if (done) {
      const auto& c = export_.whole->stats().content;
      export_.captures.push_back(capture_of(r.path, c.x0, c.y0, c.x1, c.y1));
    }
  } else {  // the lanes
    views_.show_lanes = true;
    ImGui::SetWindowFocus("Lanes");
    const ImGuiWindow* w = ImGui::FindWindowByName("Lanes");
    done = w && export_.frames > kSettleFrames;
    if (done) export_.captures.push_back(capture_of(r.path, w->Pos.x, w->Pos.y, w->Pos.x + w->Size.x, w->Pos.y + w->Size.y));
  }
  if (!done && export_.frames > 1000) {  // what it waits for never came: say so, go on
    capture_written({r.path, 0, 0, 0, 0}, false);
    done = true;
  }
  if (done) {
    export_.queue.erase(export_.queue.begin());
    export_.frames = 0;
  }
}

// The whole graph: a window over the whole (offscreen) display. Once laid
// out, the display becomes the graph's size at zoom 1 plus the view's header
// (at most kMaxExportSide a side: then zoomed out to fit).
void App::draw_export_window() {
  if (session_.state_pending()) return;  // the next frames draw it
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(vp->WorkPos);
  ImGui::SetNextWindowSize(vp->WorkSize);
  ImGui::SetNextWindowFocus();
  ImGui::PushStyleVar(ImGuiStyleVar_WindowPadding, ImVec2(0.f, 0.f));
  ImGui::Begin(kWholeTitle, nullptr,
               ImGuiWindowFlags_NoDecoration | ImGuiWindowFlags_NoSavedSettings | ImGuiWindowFlags_NoMove);
  ImGui::PopStyleVar();
  render::GraphView& v = *export_.whole;
  v.draw(session_.state(), session_.selected_function(), analysis::kNoIndex);
  const auto& c = v.stats().content;
  if (v.layout_ready() && !v.layout_pending() && c.x1 > c.x0 && c.y1 > c.y0) {
    const render::Layout& l = *v.layout();
    constexpr float kMargin = 24.f;
    const float w = std::max(l.max.x - l.min.x, 1.f) + 2.f * kMargin, h = std::max(l.max.y - l.min.y, 1.f) + 2.f * kMargin;
    const float chrome_w = vp->Size.x - (c.x1 - c.x0), chrome_h = vp->Size.y - (c.y1 - c.y0);
    const float side = static_cast<float>(kMaxExportSide);
    const float zoom = std::min({1.f, (side - chrome_w) / w, (side - chrome_h) / h});
    // At least 64 px a side: compared as set, or a graph narrower than that
    // (a long chain zoomed out to fit kMaxExportSide) asks again every frame
    // and the export never settles.
    const int want_w = std::max(static_cast<int>(std::ceil(w * zoom + chrome_w)), 64);
    const int want_h = std::max(static_cast<int>(std::ceil(h * zoom + chrome_h)), 64);
    const render::Vec2 center{(l.min.x + l.max.x) * 0.5f, (l.min.y + l.max.y) * 0.5f};
    if (!export_.fitted || want_w != export_.off_w || want_h != export_.off_h || std::abs(v.zoom() - zoom) > 1e-4f) {
      export_.off_w = want_w;
      export_.off_h = want_h;
      v.set_view(center, zoom);
      export_.fitted = true;
      export_.frames = 0;
    }
  }
  ImGui::End();
}

}  // namespace hookscope::app
