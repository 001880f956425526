#pragma once
// The readiness map's cell colours (app/panel_readiness.cpp), one per
// analysis::Readiness, chosen apart from the owner palette and the alarm red
// so that a screenshot can count them (tests/app/test_views_gui.cpp).

#include "analysis/readiness.h"
#include "render/layout/colors.h"

namespace hookscope::app {

inline constexpr uint32_t kReadinessNone = render::rgba(62, 66, 74);
inline constexpr uint32_t kReadinessOk = render::rgba(52, 150, 84);
inline constexpr uint32_t kReadinessUnused = render::rgba(70, 130, 250);
inline constexpr uint32_t kReadinessTwice = render::rgba(250, 130, 0);
inline constexpr uint32_t kReadinessStale = render::rgba(220, 40, 200);
inline constexpr uint32_t kReadinessCut = render::rgba(120, 112, 96);

inline uint32_t readiness_color(analysis::Readiness r) {
  switch (r) {
    case analysis::Readiness::kNoDdp: return kReadinessNone;
    case analysis::Readiness::kOk: return kReadinessOk;
    case analysis::Readiness::kUnused: return kReadinessUnused;
    case analysis::Readiness::kTwice: return kReadinessTwice;
    case analysis::Readiness::kStale: return kReadinessStale;
    case analysis::Readiness::kNotReached: return kReadinessCut;
  }
  return kReadinessNone;
}

}  // namespace hookscope::app
