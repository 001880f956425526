#include "autograd/saved_variable.h"

#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "trace/emitters_autograd.h"

namespace hookscope {

namespace {
thread_local std::vector<std::shared_ptr<SavedTensorsHookPair>> tl_hook_stack;
thread_local std::optional<std::string> tl_disabled_message;
}  // namespace

SavedTensorsHooks::SavedTensorsHooks(PackHookFn pack, UnpackHookFn unpack, OwnerId owner) {
  if (tl_disabled_message) throw std::logic_error(*tl_disabled_message);
  if (!pack || !unpack) {
    throw std::invalid_argument("saved_tensors_hooks: both a pack and an unpack hook are needed");
  }
  tl_hook_stack.push_back(std::make_shared<SavedTensorsHookPair>(
      SavedTensorsHookPair{std::move(pack), std::move(unpack), owner}));
}

SavedTensorsHooks::~SavedTensorsHooks() { tl_hook_stack.pop_back(); }

DisableSavedTensorsHooks::DisableSavedTensorsHooks(std::string message)
    : had_previous_(tl_disabled_message.has_value()) {
  if (had_previous_) previous_ = *tl_disabled_message;
  tl_disabled_message = std::move(message);
}

DisableSavedTensorsHooks::~DisableSavedTensorsHooks() {
  if (had_previous_) {
    tl_disabled_message = previous_;
  } else {
    tl_disabled_message.reset();
  }
}

SavedVariable::SavedVariable(const Tensor& tensor, const Node& node, uint32_t slot,
                             bool wrapped_number)
    : slot_(slot), defined_(tensor.defined()) {
  if (!defined_) return;
  if (tl_hook_stack.empty() || wrapped_number) {
    data_ = tensor;
    return;
  }
  hooks_ = tl_hook_stack.back();
  trace::emit_saved_tensor_packed(node.id(), slot, hooks_->owner);
  packed_ = hooks_->pack(tensor);
}

Tensor SavedVariable::unpack(const Node& node) const {
  if (released_) {
    throw std::runtime_error(
        "Trying to backward through the graph a second time (" + node.name() +
        " already ran and freed its saved tensors). Saved intermediate values of the graph "
        "are freed when you call backward() or grad(); pass retain_graph=true to the first "
        "call if you need to backward through the graph again.");
  }
  if (!defined_) return Tensor();
  if (!hooks_) return data_;
  trace::emit_saved_tensor_unpacked(node.id(), slot_, hooks_->owner);
  Tensor t = hooks_->unpack(packed_);
  if (!t.defined()) {
    throw std::runtime_error("unpack hook of saved_tensors_hooks returned an undefined tensor "
                             "for saved slot " + std::to_string(slot_) + " of " + node.name() +
                             "; it must return the tensor pack was given (or an equal one)");
  }
  return t;
}

void SavedVariable::reset() {
  data_ = Tensor();
  packed_.reset();
  released_ = true;
}

}  // namespace hookscope
