#include "autograd/variable.h"

#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "tensor/kernels.h"
#include "trace/emitters_autograd.h"
#include "trace/strings.h"

namespace hookscope {

using trace::RemoveCause;

// A TensorImpl's AutogradMeta goes with it (nothing else resets it).
AutogradMeta::~AutogradMeta() {
  // Note [Leaf hooks live on the tensor]: they go when the leaf goes.
  if (!trace::recording()) return;
  const uint64_t node = last_accumulator_id;
  for (const auto* e : leaf_tensor_pre_hooks.live_entries()) {
    trace::emit_hook_removed(node, e->key.value, HookKind::kTensorPre, e->owner, 0,
                             RemoveCause::kTensorReleased);
  }
  for (const auto* e : post_accumulate_hooks.live_entries()) {
    trace::emit_hook_removed(node, e->key.value, HookKind::kPostAccumulate, e->owner, 0,
                             RemoveCause::kTensorReleased);
  }
}

AutogradMeta& Tensor::materialize_autograd_meta() {
  check_defined("materialize_autograd_meta()");
  if (!impl_->autograd) impl_->autograd = std::make_unique<AutogradMeta>();
  return *autograd_meta();
}

bool Tensor::requires_grad() const {
  auto* m = autograd_meta();
  return m && m->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  if (!is_leaf()) {
    throw std::logic_error(
        "set_requires_grad can only change leaf tensors; this tensor was produced by " +
        grad_fn()->name() + " (detach() it first)");
  }
  materialize_autograd_meta().requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  auto* m = autograd_meta();
  return !m || !m->grad_fn;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  auto* m = autograd_meta();
  return m ? m->grad_fn : none;
}

uint32_t Tensor::output_nr() const {
  auto* m = autograd_meta();
  return m ? m->output_nr : 0;
}

Tensor Tensor::grad() const {
  auto* m = autograd_meta();
  return (m && m->grad) ? Tensor(m->grad) : Tensor();
}

void Tensor::zero_grad() {
  if (auto* m = autograd_meta()) m->grad.reset();
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && grad.shape() != shape()) {
    throw std::invalid_argument("set_grad: gradient of shape " + shape_str(grad.shape()) +
                                " for a tensor of shape " + shape_str(shape()));
  }
  materialize_autograd_meta().grad = grad.impl_ptr();
}

const std::string& Tensor::name() const {
  static const std::string none;
  auto* m = autograd_meta();
  return m ? m->name : none;
}

Tensor& Tensor::set_name(std::string name) {
  materialize_autograd_meta().name = std::move(name);
  return *this;
}

void Tensor::set_history(std::shared_ptr<Node> fn, uint32_t nr) {
  AutogradMeta& m = materialize_autograd_meta();
  m.requires_grad = true;
  m.grad_fn = std::move(fn);
  m.output_nr = nr;
}

std::shared_ptr<Node> Tensor::grad_accumulator() const {
  auto* m = autograd_meta();
  if (!m || !m->requires_grad || m->grad_fn) return nullptr;
  if (auto acc = m->grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(*this);
  const uint64_t previous = m->last_accumulator_id;
  m->grad_accumulator = acc;
  m->last_accumulator_id = acc->id();
  acc->record_created(trace::kNodeIsLeafAccumulator, previous);
  if (trace::recording()) {
    std::string label = m->name.empty() ? std::string("leaf") : m->name;
    label += " " + shape_str(shape());
    trace::emit_node_label(acc->id(), trace::intern(label));
  }
  return acc;
}

void Tensor::retain_grad() {
  if (!requires_grad()) {
    throw std::logic_error("can't retain_grad on a tensor that has requires_grad=false");
  }
  if (is_leaf() || retains_grad()) return;  // leaves always keep .grad
  AutogradMeta& m = materialize_autograd_meta();
  std::weak_ptr<TensorImpl> weak = impl_;
  static const OwnerId owner = create_owner(OwnerKind::kRetainGrad, "retain_grad");
  m.retain_grad_key = m.grad_fn->add_retain_grad_hook(
      [weak](const Tensor& grad) {
        if (!grad.defined()) return Tensor();  // Note [Undefined gradients]
        if (auto impl = weak.lock()) {
          auto& meta = static_cast<AutogradMeta&>(*impl->autograd);
          if (!meta.grad) {
            meta.grad = grad.clone().impl_ptr();
          } else {
            Tensor acc(meta.grad);
            kernels_for(acc.device()).axpy(1.f, grad, acc);
          }
        }
        return Tensor();
      },
      m.output_nr, owner);
  m.retains_grad = true;
}

bool Tensor::retains_grad() const {
  auto* m = autograd_meta();
  return m && m->retains_grad;
}

HookKey Tensor::register_hook(TensorHookFn fn, OwnerId owner) {
  if (!requires_grad()) {
    throw std::logic_error(
        "cannot register a hook on a tensor that doesn't require gradient");
  }
  owner = resolve_owner(owner);
  if (!is_leaf()) return grad_fn()->add_tensor_pre_hook(std::move(fn), output_nr(), owner);
  return grad_accumulator()->add_tensor_pre_hook(std::move(fn), 0, owner);
}

bool Tensor::remove_hook(HookKey key, OwnerId remover) {
  if (!requires_grad()) return false;
  remover = resolve_owner(remover);
  if (!is_leaf()) return grad_fn()->del_tensor_pre_hook(key, remover);
  return grad_accumulator()->del_tensor_pre_hook(key, remover);
}

HookKey Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHookFn fn,
                                                   OwnerId owner) {
  if (!requires_grad() || !is_leaf()) {
    throw std::logic_error(
        "post accumulate grad hooks can only be registered on leaf tensors that require "
        "grad");
  }
  auto acc = grad_accumulator();
  AutogradMeta& m = *autograd_meta();
  owner = resolve_owner(owner);
  HookKey key = m.post_accumulate_hooks.add(std::move(fn), owner);
  trace::emit_hook_added(acc->id(), key.value, HookKind::kPostAccumulate, owner);
  return key;
}

bool Tensor::remove_post_accumulate_grad_hook(HookKey key, OwnerId remover) {
  auto* m = autograd_meta();
  const uint64_t node = m ? m->last_accumulator_id : 0;
  const auto kind = HookKind::kPostAccumulate;
  remover = resolve_owner(remover);
  OwnerId owner = 0;
  if (!m || !m->post_accumulate_hooks.remove(key, &owner)) {
    trace::emit_hook_remove_failed(node, key.value, kind, remover);
    return false;
  }
  trace::emit_hook_removed(node, key.value, kind, owner, remover, RemoveCause::kByKey);
  return true;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph,
                      const variable_list& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, inputs);
}

}  // namespace hookscope
