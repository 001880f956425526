#pragma once
// Inside the torch side of the bridge: the per-Node state shared by the
// registry (nodes.cpp) and the observer hooks (observers.cpp). Includes
// torch's headers: only those two translation units include it.

#include <torch/csrc/autograd/function.h>
#include <torch/version.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <memory_resource>
#include <mutex>
#include <vector>

#include "trace/event.h"

namespace hookscope::bridge {

using torch::autograd::FunctionPostHook;
using torch::autograd::FunctionPreHook;
using torch::autograd::Node;
using torch::autograd::variable_list;
using trace::EventKind;
using trace::HookKind;

// A C++ hook the bridge found on a Node (not its own, not a Python one).
struct Foreign {
  uintptr_t addr;
  uint64_t key;
  uint32_t owner;
  HookKind kind;
};

// What the bridge knows of one registered Node.
struct NodeState {
  uint64_t id = 0;
  uint64_t epoch = 0;
  Node* node = nullptr;
  std::vector<Foreign> post, pre;  // C++ hooks seen at the last snapshot
  std::vector<Foreign> retain;     // 2.x: retains_grad_hooks() (Note [retain_grad on 2.x])
};

// Note [retain_grad on 2.x]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// PyTorch 1.13's Tensor.retain_grad() adds a C++ pre hook to the grad_fn
// (pre_hooks(), seen like any other). 2.x keeps it apart, one per output, in
// Node::retains_grad_hooks(), and the engine runs those after the tensor pre
// hooks and before pre_hooks(): snapshots read that map as retain_grad hooks,
// and the pre observer (last in pre_hooks()) records their fires first.
// An in-place op on the tensor moves its hook (the same object) to the new
// grad_fn: recorded as removed from the old Node by retain_grad itself and
// added to the new one under the same owner, not as a C++ hook's removal of
// someone else's hook (which `check` would call collateral).
#if TORCH_VERSION_MAJOR >= 2
#define HOOKSCOPE_RETAINS_GRAD_HOOKS 1
#else
#define HOOKSCOPE_RETAINS_GRAD_HOOKS 0
#endif

// Guards every registry and NodeState; recursive, because freeing a Node
// (its observer's destructor) can happen while it is held.
extern std::recursive_mutex g_mutex;
// Bumped by each new recording: observers of older Nodes go quiet.
extern std::atomic<uint64_t> g_epoch;
extern int g_rank;

// Note [Observer hooks]
// ~~~~~~~~~~~~~~~~~~~~~
// Every Node the bridge registers gets one pre hook and one post hook of its
// own, appended to PyTorch's lists; they never wrap or reorder the user's
// hooks (C++ hooks' addresses are their owners' removal keys, as DDP's
// Reducer uses them). Each observer records a kHookFired for every C++ hook
// before it in its list (the engine runs a list's hooks all, in order), then
// kApplyBegin (pre) or kApplyEnd (post); each snapshot moves the observers
// back to the ends, which changes no other hook's position relative to the
// others. (C++ pre hooks include 1.13's retain_grad hook; Note [retain_grad
// on 2.x] for 2.x's.)
// When the Node dies its post hook list is destroyed with it, so the post
// observer's destructor records kNodeReleased at the moment PyTorch frees the
// Node: the bridge holds Nodes only weakly. Observers are not hooks of the
// user: they are never reported, and post_hook_count() leaves them out.

// Note [Pooled bridge objects]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each step registers its Functions (a small transformer: ~75) and frees
// them at the end of its backward: a NodeState, two observers and a
// registry entry each. glibc's per-thread cache keeps 7 chunks of a size, so
// most of those went through malloc's bins and back: callgrind counted
// ~0.3 M instructions a step in malloc and free, the largest part of the
// bridge's own (bench/torch_bridge_instructions.py). They come from one
// pool instead, which keeps freed memory for the next step. It is never
// destroyed: PyTorch may free a Node (and its observers) while the process
// exits, after static objects are gone. Thread-safe: observers die on
// whichever thread frees their Node.
std::pmr::memory_resource& pool();

struct ObserverPre : FunctionPreHook {
  explicit ObserverPre(std::shared_ptr<NodeState> s) : state(std::move(s)) {}
  static void* operator new(size_t size) { return pool().allocate(size); }
  static void operator delete(void* p, size_t size) { pool().deallocate(p, size); }
  variable_list operator()(const variable_list& grads) override;
  std::shared_ptr<NodeState> state;
};

struct ObserverPost : FunctionPostHook {
  explicit ObserverPost(std::shared_ptr<NodeState> s) : state(std::move(s)) {}
  static void* operator new(size_t size) { return pool().allocate(size); }
  static void operator delete(void* p, size_t size) { pool().deallocate(p, size); }
  ~ObserverPost() override;
  variable_list operator()(const variable_list& outputs, const variable_list& inputs) override;
  std::shared_ptr<NodeState> state;
};

// The thread's events carry the recording's rank (autograd and Gloo threads).
void stamp_rank();

// A bucket's allreduce of the Reducer prepared for this backward
// (Note [Collectives through RecordFunction]).
struct BucketTurn {
  uint32_t owner = 0;
  uint32_t bucket = 0;
  uint32_t params = 0;  // parameters in it (0: not known)
};
// Whether an allreduce of `bytes` is the prepared Reducer's next bucket;
// if so, fills `turn` and moves on to the bucket after. Caller holds g_mutex.
bool next_bucket(uint64_t bytes, BucketTurn& turn);

// The Node died (its observer goes with it): drop it from the registry
// (nodes.cpp). Caller holds g_mutex.
void forget_node(const NodeState& state);
// Forget every Reducer (a new recording). Caller holds g_mutex.
void clear_reducers();

}  // namespace hookscope::bridge
