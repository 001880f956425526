// Module hooks: forward pre, forward, full backward pre, full backward
// (Note [Module hooks]).
#include <unordered_map>

#include "nn/backward_hook.h"
#include "nn/nn.h"
#include "trace/emitters_autograd.h"

namespace hookscope::nn {

using trace::HookKind;

// Note [Module hooks]
// ~~~~~~~~~~~~~~~~~~~
// Module::operator() does what PyTorch 2.x's Module._call_impl does
// (torch/nn/modules/module.py; docs/semantics.md rules M1-M6):
//  1. it takes the full backward (pre) hooks as they are now: those, and only
//     those, run in the backward of this call's graph, even if they are
//     removed before that backward (PyTorch issue #25723: "expected
//     behavior ... you cannot change the nn.Module's hooks after the graph
//     has been created");
//  2. forward pre hooks run (over a snapshot, Note [Removing hooks while they
//     fire]); a defined result replaces the input;
//  3. if any backward hook was taken and the input requires grad, the input
//     is wrapped in a BackwardHookFunction (torch/utils/hooks.py BackwardHook);
//  4. forward runs; forward hooks run; a defined result replaces the output;
//  5. the output is wrapped in a BackwardHookFunction.
// In backward, the output's BackwardHookFunctionBackward post hook runs the
// backward pre hooks (they may replace grad_output), the input's runs the
// full backward hooks with (grad_input, grad_output) (they may replace
// grad_input). When the input does not require grad the full backward hooks
// run from the output's Node with an undefined grad_input.
// Trace (Note [Module hooks in traces]): add/remove/forward fires carry
// node = 0, backward fires carry the BackwardHookFunction Node; the owner is
// the module (OwnerKind::kModule, its path). The internal post hooks on the
// BackwardHookFunction Nodes are ordinary post hooks owned by the module.
struct ModuleHooks {
  HookList<Module::ForwardPreHookFn> forward_pre;
  HookList<Module::ForwardHookFn> forward;
  HookList<std::shared_ptr<Module::BackwardPreHookFn>> backward_pre;
  HookList<std::shared_ptr<Module::BackwardHookFn>> backward;
  std::unordered_map<uint64_t, HookKind> issued;  // every key handed out, for failed removals
  OwnerId owner = 0;
  std::shared_ptr<const int> alive = std::make_shared<const int>(0);
};

Module::Module() = default;

Module::~Module() {
  if (!hooks_ || hooks_->owner == 0) return;
  ModuleHooks& h = *hooks_;
  // The hooks go with the module (as in PyTorch); say so, so that they are
  // not taken for leaked hooks of a destroyed owner.
  auto released = [&h](const auto& list, HookKind kind) {
    for (const auto* e : list.live_entries()) {
      trace::emit_hook_removed(0, e->key.value, kind, h.owner, h.owner,
                               trace::RemoveCause::kNodeReleased);
    }
  };
  released(h.forward_pre, HookKind::kModuleForwardPre);
  released(h.forward, HookKind::kModuleForward);
  released(h.backward_pre, HookKind::kModuleBackwardPre);
  released(h.backward, HookKind::kModuleBackward);
  destroy_owner(h.owner);
}

OwnerId Module::hook_owner() {
  if (!hooks_) hooks_ = std::make_unique<ModuleHooks>();
  if (hooks_->owner == 0) {
    hooks_->owner = create_owner(OwnerKind::kModule, path_.empty() ? "(root)" : path_);
  }
  return hooks_->owner;
}

namespace {
template <class List, class Fn>
HookKey add_module_hook(ModuleHooks& h, List& list, HookKind kind, Fn fn) {
  HookKey key = list.add(std::move(fn), h.owner);
  h.issued.emplace(key.value, kind);
  trace::emit_hook_added(0, key.value, kind, h.owner);
  return key;
}
}  // namespace

HookKey Module::register_forward_pre_hook(ForwardPreHookFn fn) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->forward_pre, HookKind::kModuleForwardPre, std::move(fn));
}
HookKey Module::register_forward_hook(ForwardHookFn fn) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->forward, HookKind::kModuleForward, std::move(fn));
}
HookKey Module::register_full_backward_pre_hook(BackwardPreHookFn fn) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->backward_pre, HookKind::kModuleBackwardPre,
                         std::make_shared<BackwardPreHookFn>(std::move(fn)));
}
HookKey Module::register_full_backward_hook(BackwardHookFn fn) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->backward, HookKind::kModuleBackward,
                         std::make_shared<BackwardHookFn>(std::move(fn)));
}

bool Module::remove_hook(HookKey key) {
  const OwnerId owner = hook_owner();
  ModuleHooks& h = *hooks_;
  auto it = h.issued.find(key.value);
  const HookKind kind = it == h.issued.end() ? HookKind::kModuleForward : it->second;
  bool removed = false;
  switch (kind) {
    case HookKind::kModuleForwardPre: removed = h.forward_pre.remove(key); break;
    case HookKind::kModuleBackwardPre: removed = h.backward_pre.remove(key); break;
    case HookKind::kModuleBackward: removed = h.backward.remove(key); break;
    default: removed = h.forward.remove(key); break;
  }
  if (!removed) {
    trace::emit_hook_remove_failed(0, key.value, kind, owner);
    return false;
  }
  trace::emit_hook_removed(0, key.value, kind, owner, owner, trace::RemoveCause::kByKey);
  return true;
}

size_t Module::num_hooks() const {
  if (!hooks_) return 0;
  return hooks_->forward_pre.size() + hooks_->forward.size() + hooks_->backward_pre.size() +
         hooks_->backward.size();
}

Tensor Module::operator()(const Tensor& input) {
  if (!hooks_ || num_hooks() == 0) return forward(input);
  ModuleHooks& h = *hooks_;
  // 1. The backward hooks of this call, taken now.
  std::vector<HookSnapshot<BackwardHookFn>> backward;
  std::vector<HookSnapshot<BackwardPreHookFn>> backward_pre;
  for (const auto* e : h.backward.live_entries()) backward.push_back({e->key, e->fn});
  for (const auto* e : h.backward_pre.live_entries()) backward_pre.push_back({e->key, e->fn});
  // 2. Forward pre hooks.
  Tensor x = input;
  h.forward_pre.fire([&](const auto& e, ForwardPreHookFn& fn) {
    trace::emit_hook_fired(0, e.key.value, HookKind::kModuleForwardPre, h.owner);
    Tensor r = fn(*this, x);
    if (r.defined()) x = std::move(r);
  });
  // 3. The input's BackwardHookFunction.
  std::shared_ptr<BackwardHook> bw;
  if (!backward.empty() || !backward_pre.empty()) {
    bw = std::make_shared<BackwardHook>(*this, h.alive, h.owner, std::move(backward),
                                        std::move(backward_pre));
    x = BackwardHook::setup_input_hook(bw, x);
  }
  // 4. forward, forward hooks.
  Tensor out = forward(x);
  h.forward.fire([&](const auto& e, ForwardHookFn& fn) {
    trace::emit_hook_fired(0, e.key.value, HookKind::kModuleForward, h.owner);
    Tensor r = fn(*this, x, out);
    if (r.defined()) out = std::move(r);
  });
  // 5. The output's BackwardHookFunction.
  if (bw) out = BackwardHook::setup_output_hook(bw, out);
  return out;
}

}  // namespace hookscope::nn
