#pragma once
// Full backward hooks of a module, as PyTorch builds them (torch/utils/hooks.py
// BackwardHook): BackwardHookFunction Nodes wrap the module's tensor
// arguments and results, so the hooks run from inside backward and the
// Nodes are in the graph (Note [Module hooks]).

#include <memory>
#include <optional>
#include <vector>

#include "autograd/node.h"
#include "nn/module_hook_list.h"

namespace hookscope::nn {

// The identity Function whose Node carries a module's backward hooks
// (torch/nn/modules/_functions.py BackwardHookFunction). Its tensors that do
// not require grad are non-differentiable; as autograd.Function does, a
// missing incoming gradient is materialized as zeros of its tensor's shape.
class BackwardHookFunctionBackward : public Node {
 public:
  explicit BackwardHookFunctionBackward(std::vector<Tensor> like) : like_(std::move(like)) {}
  variable_list apply(variable_list&& grad_outputs) override;
  std::string name() const override { return "BackwardHookFunctionBackward"; }

 private:
  std::vector<Tensor> like_;  // shape and device of each wrapped tensor (detached)
};

// The per-call state PyTorch keeps in a BackwardHook object: the hooks as
// they were at the call, and the gradients w.r.t. the results once backward
// reaches them.
class BackwardHook {
 public:
  BackwardHook(Module& module, std::shared_ptr<const int> module_alive, OwnerId internal_owner,
               std::vector<ModuleHookPtr<Module::GradsBackwardHookFn>> hooks,
               std::vector<ModuleHookPtr<Module::GradsBackwardPreHookFn>> pre_hooks);
  // Wraps the tensor arguments (when one requires grad) in a
  // BackwardHookFunction whose Node's post hook calls the full backward hooks.
  static Args setup_input_hook(const std::shared_ptr<BackwardHook>& self, Args args);
  // Wraps the result's tensors in a BackwardHookFunction whose Node's post
  // hook calls the backward pre hooks (and the full backward hooks when no
  // argument required grad).
  static Args setup_output_hook(const std::shared_ptr<BackwardHook>& self, Args result);

 private:
  Module& module();
  void on_output_grad(uint64_t node, variable_list& grad_inputs, const variable_list& grad_outputs);
  void on_input_grad(uint64_t node, variable_list& grad_inputs);

  Module* module_;
  std::weak_ptr<const int> module_alive_;
  OwnerId owner_;
  std::vector<ModuleHookPtr<Module::GradsBackwardHookFn>> hooks_;
  std::vector<ModuleHookPtr<Module::GradsBackwardPreHookFn>> pre_hooks_;
  size_t n_inputs_ = 0, n_outputs_ = 0;
  std::optional<std::vector<size_t>> input_index_, output_index_;  // tensors' positions
  std::optional<Grads> grad_outputs_;
};

// The module must outlive the backward of graphs its hooks are in.
Module& live_module(Module* module, const std::weak_ptr<const int>& alive);

}  // namespace hookscope::nn
