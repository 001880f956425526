#pragma once
// The autograd demo: a small MLP trained with SGD, with user hooks of every
// kind added, fired and removed along the way (including a removal by a
// stale key), so every hook event appears in its trace.

#include <cstdint>
#include <vector>

#include "tensor/device.h"

namespace hookscope::scenarios {

struct AutogradDemoOptions {
  int steps = 5;
  uint64_t seed = 0;
  Device device = Device::kCPU;
};

struct AutogradDemoResult {
  std::vector<float> losses;  // one per step
  int hooks_added = 0;
  int hooks_removed = 0;
  int stale_removals_refused = 0;
};

AutogradDemoResult run_autograd_demo(const AutogradDemoOptions& options);

}  // namespace hookscope::scenarios
