#pragma once
// The hook lists of a module and of the global module hooks (Note [Module
// hooks]); internal to core/nn.

#include <algorithm>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>
#include <vector>

#include "autograd/hooks_list.h"
#include "nn/nn.h"

namespace hookscope::nn {

using trace::HookKind;

// One registered hook. Immutable once added: a call takes shared pointers
// to the hooks as they are (the snapshot PyTorch takes by iterating a copy of
// its dict), so removing one later changes nothing for that call.
template <class Fn>
struct ModuleHook {
  HookKey key;
  OwnerId owner = 0;
  HookKind kind = HookKind::kModuleForward;
  Fn fn;
  bool with_kwargs = false;
  bool always_call = false;
};
template <class Fn>
using ModuleHookPtr = std::shared_ptr<const ModuleHook<Fn>>;

// Hooks in firing order (an OrderedDict in PyTorch: `prepend` is
// move_to_end(last=False)). A module has a handful of hooks: removal is a
// scan, not Note [Hook list storage]'s O(1).
template <class Fn>
class ModuleHookList {
 public:
  HookKey add(ModuleHook<Fn> hook, bool prepend) {
    hook.key = next_hook_key_for_slot(0);
    auto p = std::make_shared<const ModuleHook<Fn>>(std::move(hook));
    if (prepend) {
      hooks_.insert(hooks_.begin(), p);
    } else {
      hooks_.push_back(p);
    }
    return p->key;
  }
  // The removed hook, or null for a key not here.
  ModuleHookPtr<Fn> remove(HookKey key) {
    auto it = std::find_if(hooks_.begin(), hooks_.end(),
                           [&](const auto& h) { return h->key.value == key.value; });
    if (it == hooks_.end()) return nullptr;
    ModuleHookPtr<Fn> h = *it;
    hooks_.erase(it);
    return h;
  }
  const std::vector<ModuleHookPtr<Fn>>& hooks() const { return hooks_; }
  size_t size() const { return hooks_.size(); }

 private:
  std::vector<ModuleHookPtr<Fn>> hooks_;
};

// The four kinds, as stored: every register_* form is adapted to these.
using PreHookList = ModuleHookList<Module::KwargsForwardPreHookFn>;
using ForwardHookList = ModuleHookList<Module::KwargsForwardHookFn>;
using BackwardPreHookList = ModuleHookList<Module::GradsBackwardPreHookFn>;
using BackwardHookList = ModuleHookList<Module::GradsBackwardHookFn>;

struct HookLists {
  PreHookList forward_pre;
  ForwardHookList forward;
  BackwardPreHookList backward_pre;
  BackwardHookList backward;
  // PyTorch's _is_full_backward_hook: unset until a backward hook is added;
  // then full (true) or legacy (false), never both on one module.
  std::optional<bool> is_full_backward;
  size_t size() const {
    return forward_pre.size() + forward.size() + backward_pre.size() + backward.size();
  }
};

// Removes `key` from the list of its `kind`; false when it is not there.
inline bool remove_from(HookLists& lists, HookKind kind, HookKey key) {
  switch (kind) {
    case HookKind::kModuleForwardPre: return lists.forward_pre.remove(key) != nullptr;
    case HookKind::kModuleBackwardPre: return lists.backward_pre.remove(key) != nullptr;
    case HookKind::kModuleBackward:
    case HookKind::kModuleLegacyBackward: return lists.backward.remove(key) != nullptr;
    default: return lists.forward.remove(key) != nullptr;
  }
}

struct ModuleHooks {
  HookLists lists;
  std::unordered_map<uint64_t, HookKind> issued;  // every key handed out, for failed removals
  OwnerId owner = 0;
  std::shared_ptr<const int> alive = std::make_shared<const int>(0);
};

// What one call runs: the global hooks, then the module's, as they were.
struct CallHooks {
  std::vector<ModuleHookPtr<Module::KwargsForwardPreHookFn>> forward_pre;
  std::vector<ModuleHookPtr<Module::GradsBackwardPreHookFn>> backward_pre;
  std::vector<ModuleHookPtr<Module::GradsBackwardHookFn>> full_backward;
  std::vector<ModuleHookPtr<Module::GradsBackwardHookFn>> legacy_backward;
};

// The global module hooks (global_module_hooks.cpp).
bool global_module_hooks_active();
// Appends the global hooks to `out` (forward hooks: `forward`).
void take_global_hooks(CallHooks& out);
std::vector<ModuleHookPtr<Module::KwargsForwardHookFn>> global_forward_hooks();

}  // namespace hookscope::nn
