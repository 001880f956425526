// What the graph view draws, as one digest line per (trace, canvas size,
// box style, way of drawing, event, zoom): a hash of the frame's ImGui draw
// data (every vertex, index and clip rectangle: the picture) and of its
// GraphDrawStats (the draw report). A refactor of render/draw must leave
// every line as it was: run it on the build before and after and diff
// (bench/graph_draw_digest.sh; Note [One graph drawing path]).
//   graph_draw_digest [TRACE[+TRACE...]]...
// (No argument: the tests' models, recorded in this process: their timings
// differ run to run, so only traces on disk compare between builds.)
// A trace joined with '+' is one run's ranks. Ways of drawing: the full
// State; the StateView while the State is pending (Note [Graph while the
// state is pending]); the full State read through the LiveIndex (Note
// [Graph at a million Functions]).

#include <cstdint>
#include <cstdio>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state_view.h"
#include "render/draw/graph_view.h"
#include "testing/graph_test_models.h"
#include "testing/headless_imgui.h"
#include "trace/reader.h"

namespace {

using namespace hookscope;

uint64_t fnv(uint64_t h, const void* data, size_t n) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}

uint64_t picture_hash() {
  const ImDrawData* d = ImGui::GetDrawData();
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; d && i < d->CmdListsCount; ++i) {
    const ImDrawList* l = d->CmdLists[i];
    h = fnv(h, l->VtxBuffer.Data, sizeof(ImDrawVert) * static_cast<size_t>(l->VtxBuffer.Size));
    h = fnv(h, l->IdxBuffer.Data, sizeof(ImDrawIdx) * static_cast<size_t>(l->IdxBuffer.Size));
    for (const ImDrawCmd& c : l->CmdBuffer) {
      h = fnv(h, &c.ClipRect, sizeof c.ClipRect);
      h = fnv(h, &c.ElemCount, sizeof c.ElemCount);
    }
  }
  return h;
}

std::string report_of(const render::GraphDrawStats& s) {
  std::ostringstream o;
  auto rect = [&](const render::GraphDrawStats::Rect& r) { o << r.x0 << ',' << r.y0 << ',' << r.x1 << ',' << r.y1 << ';'; };
  o << int(s.detail) << ' ' << s.boxes << ' ' << s.texts << ' ' << s.edges << ' ' << s.cells << ' ' << s.alarms << ' '
    << s.min_text_px << ' ' << s.small_texts << ' ' << s.hidden_chips << ' ' << s.minimap_shown << ' ' << s.stale_chips
    << ' ' << s.ghost_chips << ' ' << s.pulsing << ' ' << s.legend_entries << ' ' << s.legend_more << ' '
    << s.legend_lines << ' ' << s.legend_gens << ' ' << s.legend_right << ' ' << s.removal_boxes << ' ' << s.live_units
    << ' ' << s.layout_units << ' ' << s.gen_labels << ' ' << s.state_pending << ' ' << s.indexed << ' ' << s.fit << ' '
    << s.fit_on_alarms << ' ' << s.layout_w << ' ' << s.layout_h << ' ' << s.lingering << ' ' << s.lingering_tags
    << ' ' << s.legend_lingering << ' ' << s.off_canvas << ' ' << s.focus_on_canvas << '|';
  for (const auto& r : s.box_rects) rect(r);
  for (uint32_t u : s.box_units) o << u << ',';
  for (uint16_t k : s.box_chip_kinds) o << k << ',';
  for (const auto& [rank, r] : s.rank_columns) o << rank << ':', rect(r);
  for (const auto& [rank, r] : s.banners) o << rank << ':', rect(r);
  for (const auto& r : s.alarm_cells) rect(r);
  for (const auto& r : s.tag_rects) rect(r);
  rect(s.minimap), rect(s.content), rect(s.fit_focus);
  return o.str();
}

struct Case {
  std::string name;
  std::vector<std::string> files;
};

enum class Way { kFull, kPending, kIndexed };
const char* name_of(Way w) { return w == Way::kFull ? "full" : w == Way::kPending ? "pending" : "indexed"; }

void digest(const std::string& name, const analysis::Model& model, float width, float height, bool compact, Way way) {
  testing::HeadlessImGui imgui(width, height);
  render::GraphView view;
  if (way == Way::kIndexed) view.set_indexed_functions(0);
  testing::open_settled(view, model, compact);
  const size_t n = model.num_events();
  const analysis::State last = model.state_at(n - 1);
  for (int i = 0; i < 3; ++i) imgui.frame([&] { view.draw(last); });
  view.wait_for_layout();
  view.wait_for_live_index();
  for (int i = 0; i < 2; ++i) imgui.frame([&] { view.draw(last); });
  const render::Vec2 fitted = view.center();
  const float fit_zoom = view.zoom();
  std::mt19937 rng(7);
  const size_t events[] = {0, n / 7, n / 3, n / 2, 2 * n / 3, 5 * n / 6, n - 1};
  const float zooms[] = {1.f, 2.5f, 0.4f, 0.1f};  // times the fit's: text, closer, plain boxes, cells
  for (size_t e : events) {
    const analysis::State full = model.state_at(e);
    const analysis::StateView sv(model, e);
    // A selected Function and owner on some frames: their outlines and fades.
    const analysis::FunctionIndex sel_f = full.functions.empty() || e % 2 ? analysis::kNoIndex
                                          : full.functions[full.functions.size() / 2].function;
    const analysis::OwnerIndex sel_o = model.owners().empty() || e % 3 ? analysis::kNoIndex : 0;
    for (float z : zooms) {
      const float dx = static_cast<float>(rng() % 200) - 100.f, dy = static_cast<float>(rng() % 200) - 100.f;
      const render::Vec2 at{fitted.x + (z > 1.f ? dx : 0.f), fitted.y + (z > 1.f ? dy : 0.f)};
      auto frame = [&] {
        imgui.frame([&] {
          if (way == Way::kPending) {
            view.draw(sv, sel_f, sel_o);
          } else {
            view.draw(full, sel_f, sel_o);
          }
        });
      };
      // A compact layout of a new live set, and its LiveIndex, land off the
      // UI thread: wait for them, so that what is drawn does not depend on
      // the threads' timing; then the view asked for (a landing may fit).
      view.set_view(at, fit_zoom * z);
      frame();
      view.wait_for_layout();
      view.wait_for_live_index();
      frame();
      view.set_view(at, fit_zoom * z);
      for (int i = 0; i < 2; ++i) frame();
      const std::string report = report_of(view.stats());
      std::printf("%s %gx%g %s %s event %zu zoom %g: picture %016llx report %016llx (%u boxes, %u cells, %u alarms)\n",
                  name.c_str(), width, height, compact ? "compact" : "full-boxes", name_of(way), e, z,
                  static_cast<unsigned long long>(picture_hash()),
                  static_cast<unsigned long long>(fnv(1469598103934665603ull, report.data(), report.size())),
                  view.stats().boxes, view.stats().cells, view.stats().alarms);
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::pair<std::string, const analysis::Model*>> models;
  std::vector<std::unique_ptr<analysis::Model>> owned;
  if (argc < 2) {
    models.push_back({"recovery-model", &testing::graph_recovery_model()});
    models.push_back({"autograd-model", &testing::graph_autograd_model()});
  }
  for (int i = 1; i < argc; ++i) {
    std::vector<trace::TraceData> traces;
    std::string arg = argv[i], name;
    for (size_t at = 0; at <= arg.size();) {
      const size_t plus = std::min(arg.find('+', at), arg.size());
      const std::string path = arg.substr(at, plus - at);
      traces.push_back(trace::read_trace(path));
      name += (name.empty() ? "" : "+") + path.substr(path.find_last_of('/') + 1);
      at = plus + 1;
    }
    owned.push_back(std::make_unique<analysis::Model>(std::move(traces)));
    models.push_back({name, owned.back().get()});
  }
  for (const auto& [name, model] : models) {
    for (auto [w, h] : {std::pair{1280.f, 800.f}, std::pair{1920.f, 1080.f}}) {
      for (bool compact : {false, true}) {
        for (Way way : {Way::kFull, Way::kPending, Way::kIndexed}) digest(name, *model, w, h, compact, way);
      }
    }
  }
  return 0;
}
