#pragma once
// Colours the graph and timeline views (and the panels' swatches) share,
// packed as ImGui's IM_COL32 (0xAABBGGRR) so that this header needs no ImGui.
// Two palettes, dark and light (Note [Canvas palettes]); owners keep one
// colour by identity (Note [Owner colours]).

#include <cstdint>
#include <string_view>

namespace hookscope::render {

constexpr uint32_t rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a = 255) {
  return (a << 24) | (b << 16) | (g << 8) | r;
}
constexpr uint32_t with_alpha(uint32_t color, uint32_t a) { return (color & 0x00ffffffu) | (a << 24); }

// Note [Canvas palettes]
// ~~~~~~~~~~~~~~~~~~~~~~
// The canvases (graph, timeline) follow the app's theme: set_light_palette()
// switches every colour below at once. Text colours are chosen for WCAG AA
// (contrast >= 4.5:1) on the backgrounds they are drawn on; a test computes
// the ratios from these tables (tests/render/layout/test_story.cpp), so a colour
// edited here that fails is caught.
//
// Every canvas colour once, with its dark and light value side by side:
// X(name, dark, light). Palette, kDarkPalette and kLightPalette are made
// from this one list, so a colour cannot be added to one palette only.
#define HOOKSCOPE_PALETTE_COLORS(X) \
  X(background,    rgba(24, 26, 30),          rgba(250, 250, 248)) \
  X(grid,          rgba(255, 255, 255, 10),   rgba(0, 0, 0, 14)) \
  X(box,           rgba(48, 52, 60),          rgba(234, 236, 240)) \
  X(box_leaf,      rgba(38, 56, 72),          rgba(222, 234, 246)) \
  X(box_group,     rgba(60, 58, 44),          rgba(240, 234, 212)) \
  X(box_border,    rgba(96, 102, 114),        rgba(130, 136, 148)) \
  X(ghost,         rgba(150, 150, 150, 110),  rgba(120, 120, 120, 140)) \
  X(text,          rgba(230, 232, 236),       rgba(20, 22, 28)) \
  X(text_dim,      rgba(160, 166, 176),       rgba(84, 90, 100)) \
  X(text_label,    rgba(150, 200, 250),       rgba(20, 80, 150)) \
  X(chip_text,     rgba(16, 16, 20),          rgba(16, 16, 20)) \
  X(edge,          rgba(140, 146, 158, 170),  rgba(110, 116, 128, 200)) \
  X(edge_selected, rgba(255, 214, 90, 230),   rgba(200, 140, 0, 240)) \
  X(selected,      rgba(255, 214, 90),        rgba(214, 150, 0)) \
  X(running,       rgba(90, 220, 255),        rgba(0, 140, 190)) \
  X(alarm,         rgba(240, 64, 64),         rgba(208, 30, 30)) \
  X(flash,         rgba(255, 245, 120),       rgba(230, 170, 0)) \
  X(minimap,       rgba(16, 18, 22, 235),     rgba(236, 238, 242, 240)) \
  X(banner,        rgba(176, 28, 28),         rgba(184, 24, 24))  /* a failed rank's banner */ \
  X(banner_text,   rgba(255, 255, 255),       rgba(255, 255, 255))  /* its text */ \
  X(recovered,     rgba(120, 96, 30),         rgba(130, 100, 20))  /* a rank's banner once it is rebuilt */ \
  X(stale,         rgba(255, 70, 150),        rgba(200, 0, 110))  /* a stale fire: a hook of a destroyed owner firing */ \
  X(removed,       rgba(255, 150, 60),        rgba(180, 76, 0))  /* a hook removed here (ghost chip, box highlight) */ \
  X(destroyed,     rgba(255, 150, 60),        rgba(190, 84, 0))  /* an owner destroyed (timeline marker, Events row) */ \
  X(lingering,     rgba(196, 120, 255),       rgba(128, 40, 200))  /* a Reducer replaced but alive (Note [Lingering owners]) */ \
  X(warning,       rgba(240, 190, 70),        rgba(140, 95, 0))  /* a failed removal */ \
  X(track,         rgba(255, 255, 255, 6),    rgba(0, 0, 0, 8))  /* a timeline track's band */ \
  X(compare_a,     rgba(90, 200, 255),        rgba(0, 96, 184))  /* Compare: hooks only in A (outline, tag, text) */ \
  X(compare_b,     rgba(230, 180, 80),        rgba(160, 80, 0))  /* Compare: hooks only in B */

struct Palette {
  bool light = false;
#define HOOKSCOPE_PALETTE_FIELD(name, dark, light) uint32_t name;
  HOOKSCOPE_PALETTE_COLORS(HOOKSCOPE_PALETTE_FIELD)
#undef HOOKSCOPE_PALETTE_FIELD
};

#define HOOKSCOPE_PALETTE_DARK(name, dark, light) .name = dark,
#define HOOKSCOPE_PALETTE_LIGHT(name, dark, light) .name = light,
constexpr Palette kDarkPalette{.light = false, HOOKSCOPE_PALETTE_COLORS(HOOKSCOPE_PALETTE_DARK)};
constexpr Palette kLightPalette{.light = true, HOOKSCOPE_PALETTE_COLORS(HOOKSCOPE_PALETTE_LIGHT)};
#undef HOOKSCOPE_PALETTE_DARK
#undef HOOKSCOPE_PALETTE_LIGHT

// The palette the views draw with now (dark until set_light_palette(true)).
const Palette& palette();
void set_light_palette(bool light);

// Note [Owner colours]
// ~~~~~~~~~~~~~~~~~~~~
// An owner's colour follows its identity, not its index in one model:
// "Reducer 2" is the same colour on every rank and in every trace of a run
// (and in a compared trace). Labels ending in a number N take colour N of a
// palette ordered so that neighbours are far apart in hue (Reducer 1, 2, 3
// are blue, yellow, green); other labels take a colour by a hash of the
// label. Red is kept for alarms. `label` empty: by the raw owner id.
uint32_t owner_color_of(std::string_view label, uint32_t id);
inline constexpr int kNumOwnerColors = 12;
uint32_t owner_palette_color(int index);

// WCAG 2 relative luminance and contrast ratio (alpha ignored).
double relative_luminance(uint32_t color);
double contrast_ratio(uint32_t a, uint32_t b);
// Near-black or white, whichever reads better on `fill` (tags, the alarm "!").
uint32_t ink_on(uint32_t fill);

}  // namespace hookscope::render
