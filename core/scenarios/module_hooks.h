#pragma once
// The module-hooks story (PyTorch issue #25723): a full backward hook removed
// after forward still fires in that backward, because the module took its
// backward hooks when it was called (Note [Module hooks]). Also shows every
// module hook kind and saved-tensor hooks in one small training run.

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/device.h"

namespace hookscope::scenarios {

struct ModuleHooksOptions {
  int steps = 4;          // >= 2: the removal happens in step 1
  uint64_t seed = 0;
  Device device = Device::kCPU;
};

struct ModuleHooksResult {
  std::vector<float> losses;        // one per step
  int backward_hook_calls = 0;      // calls of the gradient probe (a full backward hook)
  int calls_after_removal = 0;      // of those, after its handle.remove(): the #25723 fire
  int forward_hook_calls = 0;
  int backward_pre_hook_calls = 0;
  int saved_tensors_packed = 0;
  int saved_tensors_unpacked = 0;
};

// Sequential(Linear(6,12), ReLU, Linear(12,3)) trained with SGD. The probe is
// registered on module "2" and removed in step 1 between forward and backward.
ModuleHooksResult run_module_hooks(const ModuleHooksOptions& options);

// One line per fact, for the CLI.
std::string format_result(const ModuleHooksOptions& options, const ModuleHooksResult& result);

}  // namespace hookscope::scenarios
