#pragma once
// The graph as SVG, written from the layout geometry the view draws with
// (boxes, edge routes, titles and labels, hook chips in their owners'
// colours, the palette of the app's theme). No ImGui: the GUI's
// File > Export graph as SVG and `hookscope --export-graph out.svg` call it,
// and tests parse what it writes. See Note [Graph SVG].

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/state.h"
#include "render/layout/colors.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"

namespace hookscope::render {

// Note [Graph SVG]
// ~~~~~~~~~~~~~~~~
// One <rect class="box"> per live box (a unit with a Function alive at the
// state's event), its title and label as <text>, one <rect class="chip">
// per hook run (same kind and owner in a row, as the view's chips: "R1×4"),
// edges as <path> of the layout's cubic Béziers between live boxes. World
// units are SVG user units: the picture is the view at zoom 1. Text widths
// come from `measure` (the app passes its font's), or 0.56 em per
// character. A box whose Functions carry hooks of a destroyed owner is
// outlined in the alarm colour, one of a lingering owner (replaced, still
// alive: Note [Lingering owners]) in the lingering colour, as on screen;
// module hooks are chips on their anchors (Note [Module hook anchors]). `highlight` (per unit, may be
// empty) outlines boxes in `highlight_color`: the Compare view's "hooks only
// in A/B".
struct GraphSvgOptions {
  BoxMetrics metrics;
  const Palette* palette = &kDarkPalette;
  bool whole = true;     // else only what lies within [view_min, view_max]
  Vec2 view_min, view_max;
  GraphScene::MeasureText measure;  // width of text at metrics.line_height (null: estimate)
  std::vector<uint8_t> highlight;   // per unit
  uint32_t highlight_color = rgba(230, 180, 80);
};

struct GraphSvgStats {
  uint32_t boxes = 0, edges = 0, chips = 0, texts = 0;
  uint32_t alarm_boxes = 0, lingering_boxes = 0;  // of boxes: outlined as alarms, of them in the lingering colour
  float width = 0.f, height = 0.f;  // of the picture (user units)
};

// Throws std::invalid_argument when the layout is not the folded graph's.
std::string graph_svg(const GraphScene& scene, const FoldedGraph& folded, const Layout& layout,
                      const analysis::State& state, const GraphSvgOptions& options = {},
                      GraphSvgStats* stats = nullptr);

// Per unit of `folded`: the live Function's index in state.functions + 1, or
// 0 (a group: its first live member's).
std::vector<uint32_t> live_units(const GraphScene& scene, const FoldedGraph& folded,
                                 const analysis::State& state);

// "#rrggbb" of an IM_COL32 colour, and its alpha as 0..1.
std::string svg_color(uint32_t color);
float svg_alpha(uint32_t color);

}  // namespace hookscope::render
