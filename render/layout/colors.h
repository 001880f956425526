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
// the ratios from these tables (tests/test_render_palette.cpp), so a colour
// edited here that fails is caught.
struct Palette {
  bool light = false;
  uint32_t background, grid, box, box_leaf, box_group, box_border, ghost;
  uint32_t text, text_dim, text_label, chip_text;
  uint32_t edge, edge_selected, selected, running, alarm, flash, minimap;
  uint32_t banner, banner_text;  // a failed rank's banner
  uint32_t recovered;            // a rank's banner once it is rebuilt
  uint32_t stale;                // a stale fire: a hook of a destroyed owner firing
  uint32_t removed;              // a hook removed here (ghost chip, box highlight)
  uint32_t destroyed;            // an owner destroyed (timeline marker, Events row)
  uint32_t warning;              // a failed removal
  uint32_t track;                // a timeline track's band
};

constexpr Palette kDarkPalette{
    .light = false,
    .background = rgba(24, 26, 30),
    .grid = rgba(255, 255, 255, 10),
    .box = rgba(48, 52, 60),
    .box_leaf = rgba(38, 56, 72),
    .box_group = rgba(60, 58, 44),
    .box_border = rgba(96, 102, 114),
    .ghost = rgba(150, 150, 150, 110),
    .text = rgba(230, 232, 236),
    .text_dim = rgba(160, 166, 176),
    .text_label = rgba(150, 200, 250),
    .chip_text = rgba(16, 16, 20),
    .edge = rgba(140, 146, 158, 170),
    .edge_selected = rgba(255, 214, 90, 230),
    .selected = rgba(255, 214, 90),
    .running = rgba(90, 220, 255),
    .alarm = rgba(240, 64, 64),
    .flash = rgba(255, 245, 120),
    .minimap = rgba(16, 18, 22, 235),
    .banner = rgba(176, 28, 28),
    .banner_text = rgba(255, 255, 255),
    .recovered = rgba(120, 96, 30),
    .stale = rgba(255, 70, 150),
    .removed = rgba(255, 150, 60),
    .destroyed = rgba(255, 150, 60),
    .warning = rgba(240, 190, 70),
    .track = rgba(255, 255, 255, 6),
};

constexpr Palette kLightPalette{
    .light = true,
    .background = rgba(250, 250, 248),
    .grid = rgba(0, 0, 0, 14),
    .box = rgba(234, 236, 240),
    .box_leaf = rgba(222, 234, 246),
    .box_group = rgba(240, 234, 212),
    .box_border = rgba(130, 136, 148),
    .ghost = rgba(120, 120, 120, 140),
    .text = rgba(20, 22, 28),
    .text_dim = rgba(84, 90, 100),
    .text_label = rgba(20, 80, 150),
    .chip_text = rgba(16, 16, 20),
    .edge = rgba(110, 116, 128, 200),
    .edge_selected = rgba(200, 140, 0, 240),
    .selected = rgba(214, 150, 0),
    .running = rgba(0, 140, 190),
    .alarm = rgba(208, 30, 30),
    .flash = rgba(230, 170, 0),
    .minimap = rgba(236, 238, 242, 240),
    .banner = rgba(184, 24, 24),
    .banner_text = rgba(255, 255, 255),
    .recovered = rgba(130, 100, 20),
    .stale = rgba(200, 0, 110),
    .removed = rgba(180, 76, 0),
    .destroyed = rgba(190, 84, 0),
    .warning = rgba(140, 95, 0),
    .track = rgba(0, 0, 0, 8),
};

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
