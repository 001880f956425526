#pragma once
// What a module call passes and returns (Note [Module arguments]).

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "tensor/tensor.h"

namespace hookscope::nn {

// Note [Module arguments]
// ~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's Module.__call__ takes any Python objects and returns any object.
// Here a module argument or result is a Value: a Tensor or a non-tensor
// (None, bool, int, float, str). A result is Args: one entry for a single
// value, several for a tuple (a one-element tuple and a single value are the
// same thing here; for every hook PyTorch treats them alike too: a single
// result is wrapped as (result,) by BackwardHook.setup_output_hook).
// Gradients follow torch/utils/hooks.py BackwardHook: grad_input has one
// entry per positional argument and grad_output one per result, an undefined
// Tensor where PyTorch gives None (non-tensor arguments and results, results
// that do not require grad or got no gradient). A tensor argument that does
// not require grad, next to one that does, gets zeros: BackwardHookFunction
// marks it non-differentiable and autograd.Function materializes its
// missing gradient (docs/semantics.md M7).
using Value = std::variant<std::monostate, Tensor, bool, int64_t, double, std::string>;
using Args = std::vector<Value>;
// Keyword arguments in call order (a Python dict keeps insertion order).
using Kwargs = std::vector<std::pair<std::string, Value>>;
using Grads = std::vector<Tensor>;

inline const Tensor* as_tensor(const Value& v) { return std::get_if<Tensor>(&v); }
inline bool all_tensors(const Args& args) {
  for (const Value& v : args) {
    if (!as_tensor(v)) return false;
  }
  return true;
}
// Python's type(v) as printed: "<class 'int'>", for messages that quote PyTorch's.
std::string python_type(const Value& v);

}  // namespace hookscope::nn
