// The palette in use and owners' colours (Note [Canvas palettes], Note [Owner colours]).

#include "render/layout/colors.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstddef>

namespace hookscope::render {

namespace {

std::atomic<bool> g_light{false};

// Neighbours far apart in hue; no red (alarms), and the first ten away from the
// stale-fire pink and the removal orange. Dark chip text is legible on each.
constexpr uint32_t kOwnerPalette[kNumOwnerColors] = {
    rgba(86, 156, 214),   // blue
    rgba(222, 206, 80),   // yellow
    rgba(110, 196, 100),  // green
    rgba(176, 140, 232),  // violet
    rgba(64, 196, 196),   // teal
    rgba(176, 176, 96),   // khaki
    rgba(130, 190, 250),  // sky
    rgba(214, 170, 130),  // tan
    rgba(150, 222, 176),  // mint
    rgba(200, 176, 240),  // lavender
    rgba(240, 160, 40),   // orange (last: near the removal colour)
    rgba(236, 136, 188),  // pink (last: near the stale-fire colour)
};

double channel(uint32_t c8) {
  const double c = static_cast<double>(c8) / 255.0;
  return c <= 0.03928 ? c / 12.92 : std::pow((c + 0.055) / 1.055, 2.4);
}

}  // namespace

const Palette& palette() { return g_light.load(std::memory_order_relaxed) ? kLightPalette : kDarkPalette; }
void set_light_palette(bool light) { g_light.store(light, std::memory_order_relaxed); }

uint32_t owner_palette_color(int index) {
  const int n = kNumOwnerColors;
  return kOwnerPalette[((index % n) + n) % n];
}

uint32_t owner_color_of(std::string_view label, uint32_t id) {
  if (label.empty()) return owner_palette_color(static_cast<int>(id % kNumOwnerColors));
  // A trailing number: "Reducer 2" -> colour 1 (numbering from 1).
  size_t end = label.size();
  while (end > 0 && label[end - 1] == ' ') --end;
  size_t begin = end;
  while (begin > 0 && label[begin - 1] >= '0' && label[begin - 1] <= '9') --begin;
  if (begin < end && end - begin <= 9) {
    uint32_t n = 0;
    for (size_t i = begin; i < end; ++i) n = n * 10 + static_cast<uint32_t>(label[i] - '0');
    return owner_palette_color(static_cast<int>((n + kNumOwnerColors - 1) % kNumOwnerColors));
  }
  uint64_t h = 14695981039346656037ull;  // FNV-1a
  for (char c : label) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return owner_palette_color(static_cast<int>(h % kNumOwnerColors));
}

double relative_luminance(uint32_t color) {
  return 0.2126 * channel(color & 0xff) + 0.7152 * channel((color >> 8) & 0xff) +
         0.0722 * channel((color >> 16) & 0xff);
}

double contrast_ratio(uint32_t a, uint32_t b) {
  const double la = relative_luminance(a), lb = relative_luminance(b);
  return (std::max(la, lb) + 0.05) / (std::min(la, lb) + 0.05);
}

uint32_t ink_on(uint32_t fill) {
  const uint32_t white = rgba(255, 255, 255), black = rgba(16, 16, 20);
  return contrast_ratio(fill, white) >= contrast_ratio(fill, black) ? white : black;
}

}  // namespace hookscope::render
