#include "autograd/multi_grad_hook.h"

#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "autograd/engine.h"
#include "autograd/hooks.h"
#include "autograd/node.h"
#include "trace/emitters_autograd.h"

namespace hookscope::autograd {

// Note [Multi-grad hooks]
// ~~~~~~~~~~~~~~~~~~~~~~~
// As torch/autograd/graph.py register_multi_grad_hook (PyTorch 2.x): a
// tensor hook on each tensor, sharing state keyed by the running pass
// (current_graph_task_id):
//  * "all": the first of its hooks to fire in a pass counts the tensors whose
//    Node (grad_fn, or a leaf's AccumulateGrad) the pass will run or capture
//    at (will_engine_execute_node); each hook stores its gradient; the one
//    that completes the count calls fn with all of them, undefined for those
//    the pass does not compute (a tensor outside the graph, or not needed for
//    backward(inputs=) / grad()).
//  * "any": the first hook to fire in a pass calls fn with its gradient; the
//    others do nothing in that pass.
// The hooks never change a gradient. In the trace they are tensor_pre hooks
// owned by the multi-grad hook's owner, added and removed together; a fire is
// written per call of fn, not per tensor hook call (as the torch bridge
// writes PyTorch's): on the Node of the tensor whose hook calls fn, under
// that hook's key. The Node firing the tensor hooks skips their fires
// (fire_written_by_hook).

namespace {

// The keys of every multi-grad hook's tensor hooks (never reused: Note [Hook
// keys]); `g_quiet_count` lets the firing path skip the lock while there are none.
std::atomic<size_t> g_quiet_count{0};
std::mutex g_quiet_mutex;
std::unordered_set<uint64_t>& quiet_keys() {
  static auto* keys = new std::unordered_set<uint64_t>();
  return *keys;
}

// A tensor's Node, found when a pass asks: a leaf's AccumulateGrad is held
// weakly by its leaf and may be made anew, so it is looked up, not kept.
struct Target {
  std::weak_ptr<TensorImpl> leaf;
  std::weak_ptr<Node> grad_fn;
  std::shared_ptr<Node> node() const {
    if (auto impl = leaf.lock()) return Tensor(impl).grad_accumulator();
    return grad_fn.lock();
  }
};

struct AllState {
  std::mutex mu;
  std::vector<Target> targets;
  std::unordered_map<int64_t, size_t> count;
  std::unordered_map<int64_t, variable_list> buffer;
  size_t nb_calls = 0;
  MultiGradAllFn fn;
};

struct AnyState {
  std::mutex mu;
  std::unordered_set<int64_t> ran;
  MultiGradAnyFn fn;
};

int64_t task_id() {
  const int64_t id = current_graph_task_id();
  if (id == -1) throw std::logic_error("expected this hook to be called inside a backward call");
  return id;
}

OwnerId owner_for(OwnerId owner, const char* label) {
  return owner == kDefaultHookOwner ? create_owner(OwnerKind::kUser, label) : owner;
}

void check_tensors(const variable_list& tensors) {
  if (tensors.empty()) throw std::invalid_argument("register_multi_grad_hook: no tensors");
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!tensors[i].defined() || !tensors[i].requires_grad()) {
      throw std::invalid_argument("register_multi_grad_hook: tensor " + std::to_string(i) +
                                  " does not require grad (a hook on it could never run)");
    }
  }
}

// What a tensor hook needs to write the fire of fn's call: its key (known
// once registered), its tensor's Node, and the owner.
struct Fires {
  std::vector<uint64_t> keys;
  std::vector<Target> targets;
  OwnerId owner = 0;
  void write(size_t idx) const {
    auto node = targets[idx].node();
    trace::emit_hook_fired(node ? node->id() : 0, keys[idx], HookKind::kTensorPre, owner);
  }
};

std::shared_ptr<Fires> fires_for(const variable_list& tensors, OwnerId owner) {
  auto f = std::make_shared<Fires>();
  f->owner = owner;
  for (const Tensor& t : tensors) {
    f->targets.push_back(t.is_leaf() ? Target{t.impl_ptr(), {}} : Target{{}, t.grad_fn()});
  }
  return f;
}

template <class MakeHook>
MultiGradHookHandle register_each(const variable_list& tensors, Fires& fires, MakeHook make) {
  std::vector<std::pair<std::weak_ptr<TensorImpl>, HookKey>> hooks;
  std::lock_guard<std::mutex> lock(g_quiet_mutex);  // quiet before any can fire
  for (size_t i = 0; i < tensors.size(); ++i) {
    Tensor t = tensors[i];
    const HookKey key = t.register_hook(make(i), fires.owner);
    hooks.emplace_back(t.impl_ptr(), key);
    fires.keys.push_back(key.value);
    quiet_keys().insert(key.value);
  }
  g_quiet_count.store(quiet_keys().size(), std::memory_order_relaxed);
  return MultiGradHookHandle(std::move(hooks), fires.owner);
}

}  // namespace

bool fire_written_by_hook(uint64_t key) noexcept {
  if (g_quiet_count.load(std::memory_order_relaxed) == 0) return false;
  std::lock_guard<std::mutex> lock(g_quiet_mutex);
  return quiet_keys().count(key) != 0;
}

bool MultiGradHookHandle::remove() {
  if (removed_) return false;
  removed_ = true;
  bool any = false;
  for (auto& [impl, key] : hooks_) {
    if (auto p = impl.lock()) any = Tensor(p).remove_hook(key, owner_) || any;
  }
  std::lock_guard<std::mutex> lock(g_quiet_mutex);
  for (auto& [impl, key] : hooks_) quiet_keys().erase(key.value);
  g_quiet_count.store(quiet_keys().size(), std::memory_order_relaxed);
  return any;
}

MultiGradHookHandle register_multi_grad_hook(const variable_list& tensors, MultiGradAllFn fn,
                                             MultiGradMode mode, OwnerId owner) {
  if (mode != MultiGradMode::kAll) {
    throw std::invalid_argument(
        "register_multi_grad_hook: mode \"any\" calls its function with one gradient; pass a "
        "function of a Tensor");
  }
  check_tensors(tensors);
  auto state = std::make_shared<AllState>();
  state->fn = std::move(fn);
  auto fires = fires_for(tensors, owner_for(owner, "multi_grad_hook (all)"));
  state->targets = fires->targets;
  const size_t n = tensors.size();
  return register_each(tensors, *fires, [state, fires, n](size_t idx) {
    return [state, fires, n, idx](const Tensor& grad) -> Tensor {
      const int64_t id = task_id();
      MultiGradAllFn call;
      variable_list grads;
      {
        std::lock_guard<std::mutex> lock(state->mu);
        const size_t current = state->count[id]++;
        if (current == 0) {
          state->nb_calls = 0;
          for (const Target& target : state->targets) {
            auto node = target.node();
            if (node && will_engine_execute_node(*node)) ++state->nb_calls;
          }
        }
        auto& buffer = state->buffer[id];
        if (buffer.empty()) buffer.resize(n);
        buffer[idx] = grad;
        if (current + 1 == state->nb_calls) {
          grads = std::move(buffer);
          state->buffer.erase(id);
          state->count.erase(id);
          call = state->fn;
        }
      }
      if (call) {
        fires->write(idx);
        call(grads);
      }
      return Tensor();
    };
  });
}

MultiGradHookHandle register_multi_grad_hook(const variable_list& tensors, MultiGradAnyFn fn,
                                             MultiGradMode mode, OwnerId owner) {
  if (mode != MultiGradMode::kAny) {
    throw std::invalid_argument(
        "register_multi_grad_hook: mode \"all\" calls its function with every gradient; pass a "
        "function of a variable_list");
  }
  check_tensors(tensors);
  auto state = std::make_shared<AnyState>();
  state->fn = std::move(fn);
  auto fires = fires_for(tensors, owner_for(owner, "multi_grad_hook (any)"));
  return register_each(tensors, *fires, [state, fires](size_t idx) {
    return [state, fires, idx](const Tensor& grad) -> Tensor {
      const int64_t id = task_id();
      {
        std::lock_guard<std::mutex> lock(state->mu);
        if (!state->ran.insert(id).second) return Tensor();
      }
      fires->write(idx);
      state->fn(grad);
      return Tensor();
    };
  });
}

}  // namespace hookscope::autograd
