#pragma once
// Tensors saved for backward, and saved-tensor hooks
// (torch.autograd.graph.saved_tensors_hooks). See Note [Saved tensor hooks].

#include <any>
#include <cstdint>
#include <functional>
#include <memory>

#include "autograd/hooks.h"
#include "tensor/tensor.h"

namespace hookscope {

class Node;

// Note [Saved tensor hooks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// As torch.autograd.graph.saved_tensors_hooks (docs/semantics.md rule H1-H5):
//  * while a SavedTensorsHooks context is alive on this thread, every tensor an
//    op saves for backward is passed to `pack` when it is saved (in forward,
//    after the op's Function exists); what pack returns is stored instead of
//    the tensor;
//  * when the Function runs in backward it calls `unpack` on each stored value
//    (once per run of the Function) and computes with the tensor it returns;
//  * the hooks are bound at save time: leaving the context later does not
//    change how an already saved tensor is unpacked;
//  * contexts nest; the innermost one packs. While a DisableSavedTensorsHooks
//    lives, installing hooks throws its message (disable_saved_tensors_hooks);
//  * ops that record no history (grad mode off, no input requiring grad) save
//    nothing, so pack is not called;
//  * a wrapped number (the 2.0 of `t * 2.0`, saved as a 0-dim tensor) is
//    saved but never packed or unpacked: PyTorch 2.x's SavedVariable
//    ("Avoid wrapped numbers from being leaked to the user"; 1.13 packed it).
// Each call is an event: kSavedTensorPacked / kSavedTensorUnpacked with the
// Function, the saved slot and the context's owner (the debugger shows them).
// Unlike PyTorch, pack returns std::any and unpack takes it back.
using PackHookFn = std::function<std::any(const Tensor& tensor)>;
using UnpackHookFn = std::function<Tensor(const std::any& packed)>;

struct SavedTensorsHookPair {
  PackHookFn pack;
  UnpackHookFn unpack;
  OwnerId owner = 0;
};

// Installs pack/unpack hooks for the current thread for its lifetime.
class SavedTensorsHooks {
 public:
  SavedTensorsHooks(PackHookFn pack, UnpackHookFn unpack, OwnerId owner = user_owner());
  ~SavedTensorsHooks();
  SavedTensorsHooks(const SavedTensorsHooks&) = delete;
  SavedTensorsHooks& operator=(const SavedTensorsHooks&) = delete;
};

// While alive, creating a SavedTensorsHooks throws std::logic_error(`message`)
// (torch.autograd.graph.disable_saved_tensors_hooks).
class DisableSavedTensorsHooks {
 public:
  explicit DisableSavedTensorsHooks(std::string message);
  ~DisableSavedTensorsHooks();
  DisableSavedTensorsHooks(const DisableSavedTensorsHooks&) = delete;
  DisableSavedTensorsHooks& operator=(const DisableSavedTensorsHooks&) = delete;

 private:
  std::string previous_;
  bool had_previous_;
};

// One tensor saved by a Function for its backward.
class SavedVariable {
 public:
  SavedVariable() = default;
  // Saves `tensor` as slot `slot` of `node`, packing it if hooks are active
  // and it is not a wrapped number.
  SavedVariable(const Tensor& tensor, const Node& node, uint32_t slot,
                bool wrapped_number = false);
  // The saved tensor (unpacked through the hooks bound at save time).
  // Throws once reset() freed it (a second backward without retain_graph).
  Tensor unpack(const Node& node) const;
  // Frees what is stored (the Function released its variables).
  void reset();

 private:
  Tensor data_;                                  // saved without hooks
  std::shared_ptr<SavedTensorsHookPair> hooks_;  // bound at save time
  std::any packed_;
  uint32_t slot_ = 0;
  bool defined_ = false;
  bool released_ = false;
};

}  // namespace hookscope
