#pragma once
// Colours the graph and timeline views share, packed as ImGui's IM_COL32
// (0xAABBGGRR) so that this header needs no ImGui.

#include <cstdint>

namespace hookscope::render {

constexpr uint32_t rgba(uint32_t r, uint32_t g, uint32_t b, uint32_t a = 255) {
  return (a << 24) | (b << 16) | (g << 8) | r;
}
constexpr uint32_t with_alpha(uint32_t color, uint32_t a) { return (color & 0x00ffffffu) | (a << 24); }

// Every owner keeps one colour for the whole session: its index into a
// palette of hues distinct on a dark background (red is kept for alarms).
inline uint32_t owner_color(uint32_t owner) {
  static constexpr uint32_t kPalette[] = {
      rgba(86, 156, 214),  rgba(78, 201, 176),  rgba(220, 170, 90),  rgba(197, 134, 192),
      rgba(156, 204, 101), rgba(79, 193, 233),  rgba(240, 200, 140), rgba(150, 150, 230),
      rgba(120, 200, 130), rgba(230, 150, 180), rgba(180, 180, 120), rgba(110, 170, 170),
  };
  return kPalette[owner % (sizeof(kPalette) / sizeof(kPalette[0]))];
}

namespace colors {
constexpr uint32_t kBackground = rgba(24, 26, 30);
constexpr uint32_t kGrid = rgba(255, 255, 255, 10);
constexpr uint32_t kBox = rgba(48, 52, 60);
constexpr uint32_t kBoxLeaf = rgba(38, 56, 72);     // AccumulateGrad
constexpr uint32_t kBoxGroup = rgba(60, 58, 44);    // a folded group
constexpr uint32_t kBoxBorder = rgba(96, 102, 114);
constexpr uint32_t kGhost = rgba(150, 150, 150, 110);  // a leaf's hooks with no AccumulateGrad
constexpr uint32_t kText = rgba(230, 232, 236);
constexpr uint32_t kTextDim = rgba(150, 156, 166);
constexpr uint32_t kTextLabel = rgba(150, 200, 250);
constexpr uint32_t kEdge = rgba(140, 146, 158, 170);
constexpr uint32_t kEdgeSelected = rgba(255, 214, 90, 230);
constexpr uint32_t kSelected = rgba(255, 214, 90);
constexpr uint32_t kRunning = rgba(90, 220, 255);
constexpr uint32_t kAlarm = rgba(240, 64, 64);
constexpr uint32_t kFlash = rgba(255, 245, 120);
constexpr uint32_t kMinimap = rgba(16, 18, 22, 220);
}  // namespace colors

}  // namespace hookscope::render
