#include "nn/backward_hook.h"

#include <stdexcept>
#include <string>

#include "trace/emitters_autograd.h"

namespace hookscope::nn {

namespace {

// Wraps `t` in a BackwardHookFunction whose Node gets `post_hook`; returns
// `t` itself when it does not require grad or grad mode is off.
template <class PostHook>
Tensor wrap(const Tensor& t, OwnerId owner, PostHook post_hook, bool* wrapped) {
  *wrapped = false;
  if (!t.defined() || !t.requires_grad() || !GradMode::is_enabled()) return t;
  auto node = std::make_shared<BackwardHookFunctionBackward>();
  Tensor out = t.detach();
  set_history(node, {t}, {&out});
  const uint64_t id = node->id();
  node->add_post_hook(
      [post_hook, id](variable_list& grad_inputs, const variable_list& grad_outputs) {
        post_hook(id, grad_inputs, grad_outputs);
      },
      owner);
  *wrapped = true;
  return out;
}

void check_replacement(const Module& m, const char* what, const Tensor& original,
                       const Tensor& replaced) {
  if (!original.defined()) {
    throw std::runtime_error(std::string(what) + " of module '" +
                             (m.path().empty() ? "(root)" : m.path()) +
                             "' returned a gradient where the gradient is undefined; return an "
                             "undefined Tensor to keep it");
  }
  if (replaced.shape() != original.shape()) {
    throw std::runtime_error(std::string(what) + " of module '" +
                             (m.path().empty() ? "(root)" : m.path()) +
                             "' returned a gradient of shape " + shape_str(replaced.shape()) +
                             " for one of shape " + shape_str(original.shape()));
  }
}

}  // namespace

BackwardHook::BackwardHook(Module& module, std::shared_ptr<const int> module_alive,
                           OwnerId owner, std::vector<HookSnapshot<Module::BackwardHookFn>> hooks,
                           std::vector<HookSnapshot<Module::BackwardPreHookFn>> pre_hooks)
    : module_(&module), module_alive_(module_alive), owner_(owner), hooks_(std::move(hooks)),
      pre_hooks_(std::move(pre_hooks)) {}

Module& BackwardHook::module() {
  if (module_alive_.expired()) {
    throw std::runtime_error(
        "a module with full backward hooks was destroyed before the backward of a graph its "
        "forward built; keep the module alive until that backward has run");
  }
  return *module_;
}

Tensor BackwardHook::setup_input_hook(const std::shared_ptr<BackwardHook>& self,
                                      const Tensor& input) {
  return wrap(
      input, self->owner_,
      [self](uint64_t node, variable_list& grad_inputs, const variable_list&) {
        self->on_input_grad(node, grad_inputs);
      },
      &self->input_wrapped_);
}

Tensor BackwardHook::setup_output_hook(const std::shared_ptr<BackwardHook>& self,
                                       const Tensor& output) {
  bool wrapped = false;
  return wrap(
      output, self->owner_,
      [self](uint64_t node, variable_list& grad_inputs, const variable_list& grad_outputs) {
        self->on_output_grad(node, grad_inputs, grad_outputs);
      },
      &wrapped);
}

void BackwardHook::on_output_grad(uint64_t node, variable_list& grad_inputs,
                                  const variable_list& grad_outputs) {
  grad_output_ = grad_outputs.at(0);
  have_grad_output_ = true;
  for (const auto& h : pre_hooks_) {
    trace::emit_hook_fired(node, h.key.value, trace::HookKind::kModuleBackwardPre, owner_);
    Tensor r = (*h.fn)(module(), grad_output_);
    if (!r.defined()) continue;
    check_replacement(*module_, "full backward pre hook", grad_output_, r);
    grad_output_ = std::move(r);
  }
  const Tensor grad_output = grad_output_;
  if (!input_wrapped_) {
    // No input requires grad: the full backward hooks run here, with an
    // undefined grad_input, and may not return one.
    for (const auto& h : hooks_) {
      trace::emit_hook_fired(node, h.key.value, trace::HookKind::kModuleBackward, owner_);
      if ((*h.fn)(module(), Tensor(), grad_output_).defined()) {
        throw std::runtime_error(
            "a full backward hook of a module whose input does not require grad must return "
            "an undefined Tensor (there is no grad_input to replace)");
      }
    }
    have_grad_output_ = false;
    grad_output_ = Tensor();
  }
  grad_inputs.at(0) = grad_output;
}

void BackwardHook::on_input_grad(uint64_t node, variable_list& grad_inputs) {
  // The gradient reached the input without passing through the output.
  if (!have_grad_output_) return;
  Tensor res = grad_inputs.at(0);
  for (const auto& h : hooks_) {
    trace::emit_hook_fired(node, h.key.value, trace::HookKind::kModuleBackward, owner_);
    Tensor r = (*h.fn)(module(), res, grad_output_);
    if (!r.defined()) continue;
    check_replacement(*module_, "full backward hook", res, r);
    res = std::move(r);
  }
  have_grad_output_ = false;
  grad_output_ = Tensor();
  grad_inputs.at(0) = res;
}

}  // namespace hookscope::nn
