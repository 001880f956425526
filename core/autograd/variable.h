#pragma once
// Autograd metadata of a tensor and the autograd half of Tensor's API (Note
// [Layers] in tensor/tensor.h), as PyTorch's torch/csrc/autograd/variable.h.

#include <memory>
#include <string>

#include "autograd/hooks.h"
#include "tensor/tensor.h"

namespace hookscope {

struct AutogradMeta : AutogradMetaInterface {
  // Removes the leaf hooks from traces (Note [Leaf hooks live on the tensor]).
  ~AutogradMeta() override;
  bool requires_grad = false;
  bool retains_grad = false;
  uint32_t output_nr = 0;
  std::shared_ptr<Node> grad_fn;           // non-leaf: the Function that made it
  std::weak_ptr<Node> grad_accumulator;    // leaf: as in PyTorch, held weakly
  std::shared_ptr<struct TensorImpl> grad; // accumulated gradient (leaf / retain_grad)
  std::string name;                        // parameter name, e.g. "0.weight"
  HookKey retain_grad_key;
  // Note [Leaf hooks live on the tensor]
  // A leaf's tensor hooks and post-accumulate hooks live here, not on its
  // AccumulateGrad, exactly as in PyTorch: the AccumulateGrad is held weakly
  // and may be freed and re-created between iterations, while hooks the user
  // registered on a parameter must survive that. AccumulateGrad reads these
  // lists when it runs. Their events name the AccumulateGrad current at the
  // time (it is created if needed when a hook is registered), and a later
  // AccumulateGrad of the same leaf carries the previous one's id, so the
  // analysis can follow the hooks across re-creation.
  HookList<TensorHookFn> leaf_tensor_pre_hooks;
  HookList<PostAccumulateGradHookFn> post_accumulate_hooks;
  uint64_t last_accumulator_id = 0;
};

inline AutogradMeta* Tensor::autograd_meta() const {
  return impl_ ? static_cast<AutogradMeta*>(impl_->autograd.get()) : nullptr;
}

}  // namespace hookscope
