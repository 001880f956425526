#pragma once
// Per-frame state shared by graph_view.cpp (input, layout, minimap) and
// graph_draw.cpp (boxes, badges, edges). Internal to the graph view.

#include <imgui.h>

#include <algorithm>
#include <cstdio>
#include <deque>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/state_view.h"

#include "render/layout/colors.h"

#include "render/draw/graph_source.h"
#include "render/draw/graph_view.h"
#include "render/draw/graph_view_live.h"

namespace hookscope::render {

constexpr uint32_t kNone = UINT32_MAX;
// How long a firing hook's ring pulses after its event is reached (Note [Idle frames]).
constexpr double kFlashPulseSeconds = 1.5;

struct GraphView::Chip {
  uint8_t kind = 0;  // trace::HookKind
  analysis::OwnerIndex owner = analysis::kNoIndex;
  bool dead = false;   // its owner is destroyed: an alarm
  bool lingering = false;  // its owner was replaced and is still alive: an alarm too (Note [Lingering owners])
  bool alarm() const { return dead || lingering; }
  bool flash = false;  // one of its hooks fires at the current event
  uint16_t count = 0;  // hooks of this owner in a row ("R1x4")
  uint32_t fires = 0;
  bool stale = false;    // fires at the current event although its owner is destroyed
  bool removed = false;  // a ghost: removed `age` events ago (GraphViewOptions::ghost_events)
  uint32_t age = 0;
  analysis::HookIndex first_hook = analysis::kNoIndex;
  float x0 = 0.f, x1 = 0.f;  // world x, set by place_chips()
};

struct GraphView::Frame {
  // The State drawn: while pending (Note [Graph while the state is pending])
  // an empty one at the event, for its index and (no) module hooks.
  const analysis::State* state = nullptr;
  // What the draw code asks of the event (Note [One graph drawing path]).
  const GraphSource* src = nullptr;
  // Lingering owners whose "lingering: ..." tag this frame has drawn: one tag
  // per owner (each rank's Reducer is an owner of its own), on its first box
  // drawn from the top; its other boxes keep the outline and the "!" disc.
  std::vector<uint32_t> tagged_owners;
  ImDrawList* dl = nullptr;
  ImVec2 panel_min, panel_max;    // the whole canvas: header strip, content, minimap column
  ImVec2 canvas_min, canvas_max;  // the content: where boxes go (Note [Graph canvas])
  float header_h = 0.f;
  // x ranges of the header's captions (Note [Banner rows]); rank -1: an edge
  // list ("<< rank 2, 3") that names ranks off screen.
  struct CaptionSpan {
    float x0 = 0.f, x1 = 0.f;
    int rank = -1;
  };
  std::vector<CaptionSpan> caption_spans;
  Vec2 view_min, view_max;  // the world rectangle on screen
  float zoom = 1.f;
  GraphDetail detail = GraphDetail::kFull;
  double time = 0.0;         // for the flash
  double since_event = 0.0;  // seconds the current event has been drawn (the flash pulses that long)
  // Note [Frame caches]: what the source was refreshed for.
  struct LiveKey {
    uint64_t generation = 0;  // GraphView::generation_: scene and layout
    const analysis::State* state = nullptr;
    const analysis::StateView* view = nullptr;
    const LiveIndex* live_index = nullptr;
    size_t index = 0, functions = 0, tensor_hooks = 0;
    bool operator==(const LiveKey&) const = default;
  };
  LiveKey live_key;
  uint64_t live_stamp = 0;  // bumped whenever the source is refreshed
  // The density cells (draw_cells) and the minimap's, for a view and a liveness.
  struct CellsKey {
    uint64_t live_stamp = 0;
    float x0 = 0.f, y0 = 0.f, x1 = 0.f, y1 = 0.f, zoom = 0.f, vx = 0.f, vy = 0.f;
    bool operator==(const CellsKey&) const = default;
  };
  CellsKey cells_key, minimap_key;
  std::vector<uint32_t> density, minimap_cells;
  std::vector<std::pair<uint32_t, uint32_t>> edge_order;  // scratch: (first live model edge, layout edge)
  analysis::HookIndex firing_hook = analysis::kNoIndex;
  analysis::FunctionIndex running = analysis::kNoIndex;  // applied at the current event
  bool firing_stale = false;  // the current event is a stale fire (Note [Run story])
  analysis::FunctionIndex removing = analysis::kNoIndex;  // a hook removed from it at the current event
  std::vector<uint32_t> edge_stamp;  // per layout edge: drawn in this frame
  uint32_t stamp = 0;
  uint32_t hovered_unit = kNone;
  bool clicked = false;
  bool double_clicked = false;
  std::vector<Chip> chips;  // scratch
  GraphViewResult result;

  ImVec2 to_screen(Vec2 w) const {
    return {canvas_min.x + (w.x - view_min.x) * zoom, canvas_min.y + (w.y - view_min.y) * zoom};
  }
  Vec2 to_world(ImVec2 s) const {
    return {view_min.x + (s.x - canvas_min.x) / zoom, view_min.y + (s.y - canvas_min.y) / zoom};
  }
  bool visible(Vec2 lo, Vec2 hi) const {
    return hi.x >= view_min.x && lo.x <= view_max.x && hi.y >= view_min.y && lo.y <= view_max.y;
  }
};

// Note [Landing a layout off the UI thread]: a finished layout, packed, with
// the tables frames read (culling, edges by tile, the LiveIndex).
struct GraphView::Landed {
  bool cancelled = false;
  std::shared_ptr<Layout> layout;
  std::vector<float> layer_max_width;
  std::vector<Vec2> edge_min, edge_max;
  std::vector<RankBounds> rank_bounds;
  std::vector<uint32_t> edge_model_begin, edge_model;
  int edge_cols = 0, edge_rows = 0;
  Vec2 edge_tile{1.f, 1.f};
  std::vector<uint32_t> tile_edge_begin, tile_edges, long_edges;
  std::shared_ptr<const LiveIndex> live;  // null when cancelled
  // The culling tables and edge bounds of `l` (graph_view_land.cpp).
  static void index(const GraphScene& scene, const FoldedGraph& fg, const Layout& l, Landed& t);
  // The edges by tile, from t.edge_min / edge_max (graph_edges.cpp).
  static void index_edges(const analysis::Model& model, const GraphScene& scene, const FoldedGraph& fg,
                          const Layout& l, Landed& t);
};

// Note [Graph at a million Functions]: per slot of `scene`, whether it is
// live or holds tensor hooks right after event `at` (what refresh_liveness
// puts in StateSource::keep), from the model: O(Functions), for the layout job.
std::vector<uint8_t> keep_at(const analysis::Model& model, const GraphScene& scene, analysis::EventIndex at);

// Every unit's box size (GraphScene::box_sizes) with `font`'s text widths at
// metrics.line_height; any thread (Note [Box sizes off the UI thread]).
std::vector<Vec2> box_sizes_with(const GraphScene& scene, const FoldedGraph& folded, const ImFont& font,
                                 const BoxMetrics& metrics);

// Chip text is a little smaller than the box's.
inline float chip_font(const BoxMetrics& m) { return m.compact ? m.line_height : m.line_height * 0.85f; }

inline float text_width(float size, const char* begin, const char* end = nullptr) {
  return ImGui::GetFont()->CalcTextSizeA(size, FLT_MAX, 0.f, begin, end).x;
}

// "R1", "R1×4": an owner's tag and the hooks in its run.
inline int chip_text(char* buf, size_t n, const std::string& tag, uint16_t count) {
  if (count <= 1) return std::snprintf(buf, n, "%s", tag.c_str());
  return std::snprintf(buf, n, "%s\xc3\x97%u", tag.c_str(), count);  // U+00D7 in UTF-8
}

inline uint32_t scale_alpha(uint32_t color, float factor) {
  const uint32_t a = static_cast<uint32_t>(static_cast<float>(color >> 24) * factor);
  return with_alpha(color, std::min(a, 255u));
}

// Note [Fit shows every rank]: the toolbar's note ("full\nshort") after the
// legend's last entry, in the room left on that line or not at all: it never
// adds a toolbar line, which would move the canvas under a fit made for it
// (graph_fit.cpp).
void draw_off_canvas_note(const std::string& note, bool minimap);  // minimap: the view has one

}  // namespace hookscope::render
