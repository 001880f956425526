#include "nn/backward_hook.h"

#include <stdexcept>
#include <string>

#include "trace/emitters_autograd.h"

namespace hookscope::nn {

namespace {

std::string module_name(const Module& m) { return m.path().empty() ? "(root)" : m.path(); }

// Wraps the defined tensors of `args` in one BackwardHookFunction whose Node
// gets `post_hook` (_apply_on_tensors). Returns their positions, or nullopt
// (args unchanged) when none requires grad or grad mode is off.
template <class PostHook>
std::optional<std::vector<size_t>> wrap(Args& args, OwnerId owner, PostHook post_hook) {
  std::vector<size_t> index;
  variable_list tensors;
  bool requires_grad = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const Tensor* t = as_tensor(args[i]);
    if (!t || !t->defined()) continue;
    index.push_back(i);
    tensors.push_back(*t);
    requires_grad = requires_grad || t->requires_grad();
  }
  if (!requires_grad || !GradMode::is_enabled()) return std::nullopt;
  std::vector<Tensor> like;
  for (const Tensor& t : tensors) like.push_back(t.detach());
  auto node = std::make_shared<BackwardHookFunctionBackward>(like);
  for (const Tensor& t : tensors) node->add_next_edge(gradient_edge(t));
  node->set_num_inputs(static_cast<uint32_t>(tensors.size()));
  for (size_t j = 0; j < tensors.size(); ++j) {
    Tensor out = tensors[j].detach();
    // mark_non_differentiable for those that do not require grad.
    if (tensors[j].requires_grad()) out.set_history(node, static_cast<uint32_t>(j));
    args[index[j]] = std::move(out);
  }
  node->record_created();
  const uint64_t id = node->id();
  node->add_post_hook(
      [post_hook, id](variable_list& grad_inputs, const variable_list& grad_outputs) {
        post_hook(id, grad_inputs, grad_outputs);
      },
      owner);
  return index;
}

Grads pack_with_none(const std::vector<size_t>& index, const variable_list& values, size_t n) {
  Grads res(n);
  for (size_t j = 0; j < index.size() && j < values.size(); ++j) res[index[j]] = values[j];
  return res;
}

// A gradient a hook put in place of one of a known shape must keep it (the
// engine adds it to others of that shape).
void check_shape(const Module& m, const char* what, const Tensor& original,
                 const Tensor& replaced) {
  if (original.defined() && replaced.defined() && replaced.shape() != original.shape()) {
    throw std::runtime_error(std::string(what) + " of module '" + module_name(m) +
                             "' returned a gradient of shape " + shape_str(replaced.shape()) +
                             " for one of shape " + shape_str(original.shape()));
  }
}

}  // namespace

variable_list BackwardHookFunctionBackward::apply(variable_list&& grad_outputs) {
  for (size_t i = 0; i < grad_outputs.size() && i < like_.size(); ++i) {
    if (!grad_outputs[i].defined()) grad_outputs[i] = Tensor::zeros(like_[i].shape(), like_[i].device());
  }
  return std::move(grad_outputs);
}

Module& live_module(Module* module, const std::weak_ptr<const int>& alive) {
  if (alive.expired()) {
    throw std::runtime_error(
        "a module with backward hooks was destroyed before the backward of a graph its "
        "forward built; keep the module alive until that backward has run");
  }
  return *module;
}

BackwardHook::BackwardHook(Module& module, std::shared_ptr<const int> module_alive,
                           OwnerId internal_owner,
                           std::vector<ModuleHookPtr<Module::GradsBackwardHookFn>> hooks,
                           std::vector<ModuleHookPtr<Module::GradsBackwardPreHookFn>> pre_hooks)
    : module_(&module), module_alive_(module_alive), owner_(internal_owner),
      hooks_(std::move(hooks)), pre_hooks_(std::move(pre_hooks)) {}

Module& BackwardHook::module() { return live_module(module_, module_alive_); }

Args BackwardHook::setup_input_hook(const std::shared_ptr<BackwardHook>& self, Args args) {
  self->input_index_ = wrap(args, self->owner_,
                            [self](uint64_t node, variable_list& grad_inputs, const variable_list&) {
                              self->on_input_grad(node, grad_inputs);
                            });
  self->n_inputs_ = args.size();
  return args;
}

Args BackwardHook::setup_output_hook(const std::shared_ptr<BackwardHook>& self, Args result) {
  self->output_index_ =
      wrap(result, self->owner_,
           [self](uint64_t node, variable_list& grad_inputs, const variable_list& grad_outputs) {
             self->on_output_grad(node, grad_inputs, grad_outputs);
           });
  self->n_outputs_ = result.size();
  return result;
}

void BackwardHook::on_output_grad(uint64_t node, variable_list& grad_inputs,
                                  const variable_list& grad_outputs) {
  grad_outputs_ = pack_with_none(*output_index_, grad_outputs, n_outputs_);
  for (const auto& h : pre_hooks_) {
    trace::emit_hook_fired(node, h->key.value, h->kind, h->owner);
    std::optional<Grads> r = h->fn(module(), *grad_outputs_);
    if (!r) continue;
    if (r->size() != grad_outputs_->size()) {
      throw std::runtime_error("Backward pre hook returned an invalid number of grad_output, got " +
                               std::to_string(r->size()) + ", but expected " +
                               std::to_string(grad_outputs_->size()));
    }
    for (size_t i = 0; i < r->size(); ++i) {
      check_shape(*module_, "full backward pre hook", (*grad_outputs_)[i], (*r)[i]);
    }
    grad_outputs_ = std::move(r);
  }
  const Grads local = *grad_outputs_;
  if (!input_index_) {
    // No argument requires grad: the full backward hooks run here, with
    // grad_input all None, and may not return a gradient.
    const Grads none(n_inputs_);
    for (const auto& h : hooks_) {
      trace::emit_hook_fired(node, h->key.value, h->kind, h->owner);
      std::optional<Grads> r = h->fn(module(), none, *grad_outputs_);
      bool all_none = true;
      if (r) {
        for (const Tensor& g : *r) all_none = all_none && !g.defined();
      }
      if (!all_none) {
        throw std::runtime_error(
            "Backward hook for Modules where no input requires gradient should always return "
            "None or None for all gradients.");
      }
    }
    grad_outputs_.reset();
  }
  for (size_t j = 0; j < output_index_->size(); ++j) grad_inputs.at(j) = local[(*output_index_)[j]];
}

void BackwardHook::on_input_grad(uint64_t node, variable_list& grad_inputs) {
  // The gradient reached the arguments without passing through the result.
  if (!grad_outputs_) return;
  Grads res = pack_with_none(*input_index_, grad_inputs, n_inputs_);
  for (const auto& h : hooks_) {
    trace::emit_hook_fired(node, h->key.value, h->kind, h->owner);
    std::optional<Grads> r = h->fn(module(), res, *grad_outputs_);
    if (!r) continue;
    if (r->size() != res.size()) {
      throw std::runtime_error("Backward hook returned an invalid number of grad_input, got " +
                               std::to_string(r->size()) + ", but expected " +
                               std::to_string(res.size()));
    }
    for (size_t i = 0; i < r->size(); ++i) check_shape(*module_, "full backward hook", res[i], (*r)[i]);
    res = std::move(*r);
  }
  grad_outputs_.reset();
  for (size_t j = 0; j < input_index_->size(); ++j) grad_inputs.at(j) = res[(*input_index_)[j]];
}

}  // namespace hookscope::nn
