#pragma once
// Full backward hooks of a module, as PyTorch builds them (torch/utils/hooks.py
// BackwardHook): BackwardHookFunction Nodes wrap the module's input and output,
// so the hooks run from inside backward and the Nodes are in the graph.

#include <memory>
#include <vector>

#include "autograd/node.h"
#include "nn/nn.h"

namespace hookscope::nn {

// The identity Function whose Node carries a module's backward hooks
// (torch/nn/modules/_functions.py BackwardHookFunction).
class BackwardHookFunctionBackward : public Node {
 public:
  variable_list apply(variable_list&& grad_outputs) override { return std::move(grad_outputs); }
  std::string name() const override { return "BackwardHookFunctionBackward"; }
};

// One hook as it was when the module was called (Note [Module hooks]).
template <class Fn>
struct HookSnapshot {
  HookKey key;
  std::shared_ptr<Fn> fn;
};

// The per-call state PyTorch keeps in a BackwardHook object: the hooks as
// they were at the call, and the gradient w.r.t. the output once backward
// reaches it.
class BackwardHook {
 public:
  BackwardHook(Module& module, std::shared_ptr<const int> module_alive, OwnerId owner,
               std::vector<HookSnapshot<Module::BackwardHookFn>> hooks,
               std::vector<HookSnapshot<Module::BackwardPreHookFn>> pre_hooks);
  // Wraps the input (when it requires grad) in a BackwardHookFunction whose
  // Node's post hook calls the full backward hooks.
  static Tensor setup_input_hook(const std::shared_ptr<BackwardHook>& self, const Tensor& input);
  // Wraps the output in a BackwardHookFunction whose Node's post hook calls
  // the backward pre hooks (and the full backward hooks when the input did
  // not require grad).
  static Tensor setup_output_hook(const std::shared_ptr<BackwardHook>& self,
                                  const Tensor& output);

 private:
  Module& module();
  void on_output_grad(uint64_t node, variable_list& grad_inputs, const variable_list& grad_outputs);
  void on_input_grad(uint64_t node, variable_list& grad_inputs);

  Module* module_;
  std::weak_ptr<const int> module_alive_;
  OwnerId owner_;
  std::vector<HookSnapshot<Module::BackwardHookFn>> hooks_;
  std::vector<HookSnapshot<Module::BackwardPreHookFn>> pre_hooks_;
  bool input_wrapped_ = false;
  bool have_grad_output_ = false;
  Tensor grad_output_;
};

}  // namespace hookscope::nn
