#pragma once
// The module-api story: the hook API beyond one tensor in and out, in one
// small training run (docs/semantics.md M7-M12): a module taking and
// returning tuples with non-tensor arguments, its full backward hook seeing
// None and zeros where PyTorch gives them, with_kwargs/prepend/always_call,
// a global module hook, a legacy register_backward_hook seeing the wrong
// Node's gradients, and multi-grad hooks in both modes.

#include <cstdint>
#include <string>
#include <vector>

#include "tensor/device.h"

namespace hookscope::scenarios {

struct ModuleApiOptions {
  int steps = 3;
  uint64_t seed = 0;
  Device device = Device::kCPU;
};

struct ModuleApiResult {
  std::vector<float> losses;
  int global_forward_calls = 0;           // the global hook: every module call
  int gate_backward_calls = 0;            // the tuple module's full backward hook
  std::string gate_grad_input;            // what it saw in the first step, e.g. "(T, zeros, None)"
  int legacy_calls = 0;
  std::string legacy_grad_input_node;     // the Node the legacy hook ran on
  size_t legacy_grad_inputs = 0;          // that Node's gradients (not the module's one input)
  std::vector<std::string> warnings;      // warn() texts, each once
  int multi_all_calls = 0;                // once per backward
  int multi_any_calls = 0;
  int always_call_runs = 0;               // after the forward that throws
};

ModuleApiResult run_module_api(const ModuleApiOptions& options);
std::string format_result(const ModuleApiOptions& options, const ModuleApiResult& result);

}  // namespace hookscope::scenarios
