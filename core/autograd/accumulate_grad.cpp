#include <stdexcept>

#include "autograd/node.h"
#include "tensor/kernels.h"
#include "trace/emitters_autograd.h"

namespace hookscope {

AccumulateGrad::AccumulateGrad(Tensor variable) : variable_(std::move(variable)) {
  // PyTorch gives AccumulateGrad the highest priority in the ready queue.
  sequence_nr_ = UINT64_MAX;
}

AccumulateGrad::~AccumulateGrad() = default;

HookList<TensorPreHookFn>& AccumulateGrad::tensor_pre_hooks() {
  return variable_.autograd_meta()->leaf_tensor_pre_hooks;
}
const HookList<TensorPreHookFn>& AccumulateGrad::tensor_pre_hooks() const {
  return variable_.autograd_meta()->leaf_tensor_pre_hooks;
}

variable_list AccumulateGrad::apply(variable_list&& grad_outputs) {
  const Tensor& g = grad_outputs.at(0);
  if (!g.defined()) return {};
  AutogradMeta& meta = *variable_.autograd_meta();
  if (g.device() != variable_.device() || g.device_index() != variable_.device_index()) {
    throw std::invalid_argument("AccumulateGrad: a gradient on " + g.device_str() +
                                " arrived for leaf '" + meta.name + "' on " +
                                variable_.device_str() +
                                "; a leaf's gradient must be on the leaf's device");
  }
  if (!meta.grad) {
    meta.grad = g.clone().impl_ptr();
  } else {
    Tensor acc(meta.grad);
    kernels_for(acc.device()).axpy(1.f, g, acc);
  }
  meta.post_accumulate_hooks.fire([&](const auto& e, PostAccumulateGradHookFn& fn) {
    trace::emit_hook_fired(id_, e.key.value, HookKind::kPostAccumulate, e.owner);
    fn(variable_);
  });
  return {};
}

Edge gradient_edge(const Tensor& t) {
  if (!t.defined() || !t.requires_grad()) return Edge{};
  if (t.grad_fn()) return Edge{t.grad_fn(), t.output_nr()};
  return Edge{t.grad_accumulator(), 0};
}

bool set_history(const std::shared_ptr<Node>& node, const variable_list& inputs,
                 const std::vector<Tensor*>& outputs) {
  if (!GradMode::is_enabled()) return false;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) return false;
  for (const Tensor& t : inputs) node->add_next_edge(gradient_edge(t));
  node->set_num_inputs(static_cast<uint32_t>(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i]->set_history(node, static_cast<uint32_t>(i));
  }
  node->record_created();
  return true;
}

}  // namespace hookscope
