// Module hooks: registration and removal (Note [Module hooks]); a call runs
// them in module_call.cpp.
#include <stdexcept>

#include "nn/module_hook_list.h"
#include "trace/emitters_autograd.h"

namespace hookscope::nn {

// Note [Module hooks]
// ~~~~~~~~~~~~~~~~~~~
// Module::call does what PyTorch 2.x's Module._call_impl does
// (torch/nn/modules/module.py; docs/semantics.md rules M1-M12):
//  1. it takes the full backward (pre) hooks as they are now, the global
//     ones first: those, and only those, run in the backward of this call's
//     graph, even if they are removed before that backward (PyTorch issue
//     #25723: "expected behavior ... you cannot change the nn.Module's hooks
//     after the graph has been created");
//  2. forward pre hooks run, global first (over a snapshot, Note [Removing
//     hooks while they fire]); a result replaces the args (with_kwargs: the
//     args and kwargs);
//  3. if any full backward (pre) hook was taken and a tensor argument
//     requires grad, the tensor arguments are wrapped in one
//     BackwardHookFunction (torch/utils/hooks.py BackwardHook);
//  4. forward runs; forward hooks run, global first (the lists as they are
//     after forward); a result replaces the output;
//  5. the output's tensors are wrapped in a BackwardHookFunction;
//  6. legacy backward hooks go on the Node of the output's first tensor
//     (Note [Legacy module backward hooks]).
//  If forward or a hook throws, the forward hooks registered with
//  always_call that have not run yet run (global, then the module's; one
//  that throws then is reported by warn() and skipped) and the exception
//  propagates.
// In backward, the output's BackwardHookFunctionBackward post hook runs the
// backward pre hooks (they may replace grad_output), the input's runs the
// full backward hooks with (grad_input, grad_output) (they may replace
// grad_input). When no argument requires grad the full backward hooks run
// from the output's Node with grad_input all None.
// Trace (Note [Module hooks in traces]): add/remove/forward fires carry
// node = 0, backward fires carry the BackwardHookFunction Node (legacy
// hooks: the Node they are on); the owner is the module (OwnerKind::kModule,
// its path), or "global module hooks" for the global ones. The internal post
// hooks on the BackwardHookFunction Nodes are ordinary post hooks owned by
// the module (by "global module hooks" when only global hooks are taken).

namespace {

template <class List, class Fn>
HookKey add_module_hook(ModuleHooks& h, List& list, HookKind kind, Fn fn, HookOptions options,
                        bool with_kwargs = false) {
  HookKey key = list.add({HookKey{}, h.owner, kind, std::move(fn), with_kwargs,
                          options.always_call},
                         options.prepend);
  h.issued.emplace(key.value, kind);
  trace::emit_hook_added(0, key.value, kind, h.owner);
  return key;
}

const Tensor& only_tensor(const Module& m, const std::vector<Tensor>& grads, const char* what) {
  if (grads.size() != 1) {
    throw std::invalid_argument("a single-Tensor hook of module '" +
                                (m.path().empty() ? std::string("(root)") : m.path()) +
                                "' got " + std::to_string(grads.size()) + " " + what +
                                "; register the hook on Grads for a module with several");
  }
  return grads[0];
}

const Tensor& only_tensor(const Module& m, const Args& args, const char* what) {
  const Tensor* t = args.size() == 1 ? as_tensor(args[0]) : nullptr;
  if (!t) {
    throw std::invalid_argument("a single-Tensor hook of module '" +
                                (m.path().empty() ? std::string("(root)") : m.path()) +
                                "' got " + std::to_string(args.size()) + " " + what +
                                " that are not one Tensor; register the hook on Args");
  }
  return *t;
}

// module.py's _is_full_backward_hook: full or legacy, never both.
void set_backward_hook_kind(ModuleHooks& h, bool full) {
  if (h.lists.is_full_backward && *h.lists.is_full_backward != full) {
    throw std::runtime_error(
        "Cannot use both regular backward hooks and full backward hooks on a single Module. "
        "Please use only one of them.");
  }
  h.lists.is_full_backward = full;
}

std::optional<Args> as_args(Tensor t) {
  if (!t.defined()) return std::nullopt;
  return Args{std::move(t)};
}

}  // namespace

Module::Module() = default;

Module::~Module() {
  if (!hooks_ || hooks_->owner == 0) return;
  ModuleHooks& h = *hooks_;
  // The hooks go with the module (as in PyTorch); say so, so that they are
  // not taken for leaked hooks of a destroyed owner.
  auto released = [&h](const auto& list) {
    for (const auto& e : list.hooks()) {
      trace::emit_hook_removed(0, e->key.value, e->kind, h.owner, h.owner,
                               trace::RemoveCause::kNodeReleased);
    }
  };
  released(h.lists.forward_pre);
  released(h.lists.forward);
  released(h.lists.backward_pre);
  released(h.lists.backward);
  destroy_owner(h.owner);
}

OwnerId Module::hook_owner() {
  if (!hooks_) hooks_ = std::make_unique<ModuleHooks>();
  if (hooks_->owner == 0) {
    hooks_->owner = create_owner(OwnerKind::kModule, path_.empty() ? "(root)" : path_);
  }
  return hooks_->owner;
}

HookKey Module::register_forward_pre_hook(ForwardPreHookFn fn, HookOptions options) {
  return register_forward_pre_hook(
      ArgsForwardPreHookFn([fn = std::move(fn)](Module& m, const Args& args) {
        return as_args(fn(m, only_tensor(m, args, "arguments")));
      }),
      options);
}
HookKey Module::register_forward_pre_hook(ArgsForwardPreHookFn fn, HookOptions options) {
  hook_owner();
  KwargsForwardPreHookFn adapted =
      [fn = std::move(fn)](Module& m, const Args& args,
                           const Kwargs& kwargs) -> std::optional<std::pair<Args, Kwargs>> {
    std::optional<Args> r = fn(m, args);
    if (!r) return std::nullopt;
    return std::make_pair(std::move(*r), kwargs);
  };
  return add_module_hook(*hooks_, hooks_->lists.forward_pre, HookKind::kModuleForwardPre,
                         std::move(adapted), options);
}
HookKey Module::register_forward_pre_hook(KwargsForwardPreHookFn fn, HookOptions options) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->lists.forward_pre, HookKind::kModuleForwardPre,
                         std::move(fn), options, true);
}

HookKey Module::register_forward_hook(ForwardHookFn fn, HookOptions options) {
  return register_forward_hook(
      ArgsForwardHookFn([fn = std::move(fn)](Module& m, const Args& args, const Args& out) {
        return as_args(fn(m, only_tensor(m, args, "arguments"), only_tensor(m, out, "results")));
      }),
      options);
}
HookKey Module::register_forward_hook(ArgsForwardHookFn fn, HookOptions options) {
  hook_owner();
  KwargsForwardHookFn adapted = [fn = std::move(fn)](Module& m, const Args& args, const Kwargs&,
                                                     const Args& out) { return fn(m, args, out); };
  return add_module_hook(*hooks_, hooks_->lists.forward, HookKind::kModuleForward,
                         std::move(adapted), options);
}
HookKey Module::register_forward_hook(KwargsForwardHookFn fn, HookOptions options) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->lists.forward, HookKind::kModuleForward, std::move(fn),
                         options, true);
}

HookKey Module::register_full_backward_pre_hook(BackwardPreHookFn fn, HookOptions options) {
  return register_full_backward_pre_hook(
      GradsBackwardPreHookFn([fn = std::move(fn)](Module& m, const Grads& go) -> std::optional<Grads> {
        Tensor r = fn(m, only_tensor(m, go, "grad_outputs"));
        if (!r.defined()) return std::nullopt;
        return Grads{std::move(r)};
      }),
      options);
}
HookKey Module::register_full_backward_pre_hook(GradsBackwardPreHookFn fn, HookOptions options) {
  hook_owner();
  return add_module_hook(*hooks_, hooks_->lists.backward_pre, HookKind::kModuleBackwardPre,
                         std::move(fn), options);
}

HookKey Module::register_full_backward_hook(BackwardHookFn fn, HookOptions options) {
  return register_full_backward_hook(
      GradsBackwardHookFn([fn = std::move(fn)](Module& m, const Grads& gi,
                                               const Grads& go) -> std::optional<Grads> {
        Tensor r = fn(m, only_tensor(m, gi, "grad_inputs"), only_tensor(m, go, "grad_outputs"));
        if (!r.defined()) return std::nullopt;
        return Grads{std::move(r)};
      }),
      options);
}
HookKey Module::register_full_backward_hook(GradsBackwardHookFn fn, HookOptions options) {
  hook_owner();
  set_backward_hook_kind(*hooks_, true);
  return add_module_hook(*hooks_, hooks_->lists.backward, HookKind::kModuleBackward,
                         std::move(fn), options);
}

HookKey Module::register_backward_hook(GradsBackwardHookFn fn) {
  hook_owner();
  set_backward_hook_kind(*hooks_, false);
  return add_module_hook(*hooks_, hooks_->lists.backward, HookKind::kModuleLegacyBackward,
                         std::move(fn), {});
}

bool Module::remove_hook(HookKey key) {
  const OwnerId owner = hook_owner();
  ModuleHooks& h = *hooks_;
  auto it = h.issued.find(key.value);
  const HookKind kind = it == h.issued.end() ? HookKind::kModuleForward : it->second;
  if (!remove_from(h.lists, kind, key)) {
    trace::emit_hook_remove_failed(0, key.value, kind, owner);
    return false;
  }
  trace::emit_hook_removed(0, key.value, kind, owner, owner, trace::RemoveCause::kByKey);
  return true;
}

size_t Module::num_hooks() const { return hooks_ ? hooks_->lists.size() : 0; }

}  // namespace hookscope::nn
