// Global module hooks (module.py register_module_*_hook) and warn().
#include <atomic>
#include <iostream>
#include <mutex>
#include <unordered_set>

#include "nn/module_hook_list.h"
#include "trace/emitters_autograd.h"

namespace hookscope::nn {

namespace {

struct GlobalHooks {
  std::mutex mu;
  HookLists lists;
  std::unordered_map<uint64_t, HookKind> issued;
  OwnerId owner = 0;
  std::atomic<size_t> count{0};  // read without the lock by every module call
};

GlobalHooks& globals() {
  static GlobalHooks* g = new GlobalHooks();  // outlives modules destroyed at exit
  return *g;
}

OwnerId owner_locked(GlobalHooks& g) {
  if (g.owner == 0) g.owner = create_owner(OwnerKind::kUser, "global module hooks");
  return g.owner;
}

template <class List, class Fn>
HookKey add(List HookLists::*list, HookKind kind, Fn fn, HookOptions options = {},
            bool with_kwargs = false) {
  GlobalHooks& g = globals();
  std::lock_guard<std::mutex> lock(g.mu);
  const OwnerId owner = owner_locked(g);
  HookKey key = (g.lists.*list)
                    .add({HookKey{}, owner, kind, std::move(fn), with_kwargs, options.always_call},
                         options.prepend);
  g.issued.emplace(key.value, kind);
  g.count.store(g.lists.size(), std::memory_order_release);
  trace::emit_hook_added(0, key.value, kind, owner);
  return key;
}

std::mutex g_warn_mu;
WarningHandler& warning_handler() {
  // Python's default warning filter shows a warning once per place; here
  // once per text (g_warn_mu is held).
  static WarningHandler h = [](const std::string& m) {
    static std::unordered_set<std::string> shown;
    if (shown.insert(m).second) std::cerr << "Warning: " << m << "\n";
  };
  return h;
}

}  // namespace

OwnerId global_module_hooks_owner() {
  GlobalHooks& g = globals();
  std::lock_guard<std::mutex> lock(g.mu);
  return owner_locked(g);
}

HookKey register_module_forward_pre_hook(Module::ArgsForwardPreHookFn fn) {
  Module::KwargsForwardPreHookFn adapted =
      [fn = std::move(fn)](Module& m, const Args& args,
                           const Kwargs& kwargs) -> std::optional<std::pair<Args, Kwargs>> {
    std::optional<Args> r = fn(m, args);
    if (!r) return std::nullopt;
    return std::make_pair(std::move(*r), kwargs);
  };
  return add(&HookLists::forward_pre, HookKind::kModuleForwardPre, std::move(adapted));
}

HookKey register_module_forward_hook(Module::ArgsForwardHookFn fn, HookOptions options) {
  Module::KwargsForwardHookFn adapted = [fn = std::move(fn)](Module& m, const Args& args,
                                                             const Kwargs&, const Args& out) {
    return fn(m, args, out);
  };
  options.prepend = false;  // PyTorch's global forward hook has no prepend
  return add(&HookLists::forward, HookKind::kModuleForward, std::move(adapted), options);
}

HookKey register_module_forward_hook(Module::KwargsForwardHookFn fn, HookOptions options) {
  options.prepend = false;
  return add(&HookLists::forward, HookKind::kModuleForward, std::move(fn), options, true);
}

HookKey register_module_full_backward_pre_hook(Module::GradsBackwardPreHookFn fn) {
  return add(&HookLists::backward_pre, HookKind::kModuleBackwardPre, std::move(fn));
}

HookKey register_module_full_backward_hook(Module::GradsBackwardHookFn fn) {
  return add(&HookLists::backward, HookKind::kModuleBackward, std::move(fn));
}

bool remove_module_hook(HookKey key) {
  GlobalHooks& g = globals();
  std::lock_guard<std::mutex> lock(g.mu);
  const OwnerId owner = owner_locked(g);
  auto it = g.issued.find(key.value);
  const HookKind kind = it == g.issued.end() ? HookKind::kModuleForward : it->second;
  const bool removed = remove_from(g.lists, kind, key);
  g.count.store(g.lists.size(), std::memory_order_release);
  if (!removed) {
    trace::emit_hook_remove_failed(0, key.value, kind, owner);
    return false;
  }
  trace::emit_hook_removed(0, key.value, kind, owner, owner, trace::RemoveCause::kByKey);
  return true;
}

bool global_module_hooks_active() {
  return globals().count.load(std::memory_order_acquire) != 0;
}

void take_global_hooks(CallHooks& out) {
  GlobalHooks& g = globals();
  std::lock_guard<std::mutex> lock(g.mu);
  const auto& fp = g.lists.forward_pre.hooks();
  out.forward_pre.insert(out.forward_pre.end(), fp.begin(), fp.end());
  const auto& bp = g.lists.backward_pre.hooks();
  out.backward_pre.insert(out.backward_pre.end(), bp.begin(), bp.end());
  const auto& b = g.lists.backward.hooks();
  out.full_backward.insert(out.full_backward.end(), b.begin(), b.end());
}

std::vector<ModuleHookPtr<Module::KwargsForwardHookFn>> global_forward_hooks() {
  GlobalHooks& g = globals();
  std::lock_guard<std::mutex> lock(g.mu);
  return g.lists.forward.hooks();
}

WarningHandler set_warning_handler(WarningHandler handler) {
  std::lock_guard<std::mutex> lock(g_warn_mu);
  WarningHandler old = std::move(warning_handler());
  warning_handler() = std::move(handler);
  return old;
}

void warn(const std::string& message) {
  std::lock_guard<std::mutex> lock(g_warn_mu);
  if (warning_handler()) warning_handler()(message);
}

std::string python_type(const Value& v) {
  static const char* const names[] = {"NoneType", "torch.Tensor", "bool", "int", "float", "str"};
  return std::string("<class '") + names[v.index()] + "'>";
}

}  // namespace hookscope::nn
