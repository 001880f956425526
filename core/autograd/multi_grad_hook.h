#pragma once
// torch.autograd.graph.register_multi_grad_hook (Note [Multi-grad hooks]).

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace hookscope::autograd {

enum class MultiGradMode { kAll, kAny };

// "all": the gradients of every tensor, undefined for those this pass does
// not compute. "any": the first gradient computed.
using MultiGradAllFn = std::function<void(const variable_list& grads)>;
using MultiGradAnyFn = std::function<void(const Tensor& grad)>;

// What register_multi_grad_hook returns (RemovableHandle over the tensors'
// hooks). It holds the tensors weakly, as PyTorch's handle does.
class MultiGradHookHandle {
 public:
  MultiGradHookHandle() = default;
  MultiGradHookHandle(std::vector<std::pair<std::weak_ptr<TensorImpl>, HookKey>> hooks,
                      OwnerId owner)
      : hooks_(std::move(hooks)), owner_(owner) {}
  // Removes the hook from every tensor still alive; false when there was
  // nothing left to remove.
  bool remove();
  const std::vector<std::pair<std::weak_ptr<TensorImpl>, HookKey>>& hooks() const { return hooks_; }
  OwnerId owner() const { return owner_; }

 private:
  std::vector<std::pair<std::weak_ptr<TensorImpl>, HookKey>> hooks_;
  OwnerId owner_ = 0;
  bool removed_ = false;
};

// One tensor hook per tensor (Tensor::register_hook, kind tensor_pre), owned
// by `owner` (kDefaultHookOwner: a new owner "multi_grad_hook (all)" /
// "(any)"). Every tensor must require grad. `mode` must fit fn: kAll takes
// all the gradients, kAny one.
MultiGradHookHandle register_multi_grad_hook(const variable_list& tensors, MultiGradAllFn fn,
                                             MultiGradMode mode = MultiGradMode::kAll,
                                             OwnerId owner = kDefaultHookOwner);
MultiGradHookHandle register_multi_grad_hook(const variable_list& tensors, MultiGradAnyFn fn,
                                             MultiGradMode mode, OwnerId owner = kDefaultHookOwner);

// True for the tensor hooks of a multi-grad hook: the hook writes their
// fires itself, one per call of its function (Note [Multi-grad hooks]), so
// the Node firing them does not. One relaxed load while none exists.
bool fire_written_by_hook(uint64_t key) noexcept;

}  // namespace hookscope::autograd
