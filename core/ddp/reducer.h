#pragma once
// DDP's Reducer, with the semantics of PyTorch's c10d Reducer: one post hook
// on every parameter's AccumulateGrad, buckets reduced in order as their
// gradients become ready, gradients averaged over the world. After a backward
// every parameter's .grad is a view of its bucket (Note [Gradients as bucket
// views] in reducer.cpp): keep a copy, not the tensor, across backward passes.

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/hooks.h"
#include "ddp/process_group.h"
#include "nn/nn.h"
#include "trace/event.h"

namespace hookscope::ddp {

using trace::DestroyPolicy;

// Where a scenario may inject a failure (the callback throws, or sleeps to
// make the peers time out).
enum class FaultPoint { kInHook, kBeforeCollective };

struct ReducerOptions {
  size_t first_bucket_bytes = 1u << 20;  // PyTorch: 1 MiB first bucket
  size_t bucket_cap_bytes = 25u << 20;   // then 25 MiB
  bool find_unused_parameters = false;
  DestroyPolicy policy = DestroyPolicy::kByKey;
  // Called at each FaultPoint with this Reducer's backward index.
  std::function<void(FaultPoint, size_t backward_index)> fault;
};

// Note [Comm hooks]
// ~~~~~~~~~~~~~~~~~
// As PyTorch's Reducer::register_comm_hook (reducer.cpp, CommHookInterface in
// comm.hpp): a comm hook replaces the Reducer's allreduce of each bucket. It
// gets the bucket (its index, its flat gradients, its parameters) when the
// bucket is ready, in bucket order, and returns the reduced gradients; the
// Reducer writes them back as it does its own allreduce's result, but does
// not divide by the world size (the hook does what it wants: average,
// compress, skip). One hook per Reducer (a second register_comm_hook is a
// user error, as in PyTorch). PyTorch's hook returns a Future; here it returns
// the tensor (waiting for its own collectives). Recorded as a hook of kind
// kCommHook on no Function, owned by the Reducer, fired once per bucket with
// the bucket's index and bytes, removed by the Reducer's destructor whatever
// its policy: it lives in the Reducer, not on a Function, so nothing keeps it
// (Note [Comm hooks in traces] in trace/event.h). Its allreduce of the
// bucket is the bucket's collective (Note [A comm hook's collectives] in
// ddp/process_group.h), as the torch bridge records PyTorch's.
struct GradBucket {
  size_t index = 0;            // in reduction order
  Tensor buffer;               // the bucket's gradients, flat, on the parameters' device
  std::vector<size_t> params;  // parameter indices, in buffer order
  bool is_last = false;        // the last bucket of this backward
  size_t bytes() const { return static_cast<size_t>(buffer.numel()) * sizeof(float); }
};
// Returns the reduced gradients: `bucket.buffer` itself (reduced in place) or
// a tensor of its size on its device.
using CommHook = std::function<Tensor(GradBucket& bucket)>;

// Note [Reducer destruction]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// The Reducer keeps a (HookKey, AccumulateGrad) pair per parameter; holding
// the AccumulateGrad keeps it (and the hook on it) alive as long as the key
// matters. Its destructor removes hooks according to the policy:
//  * by-key (the fix of PyTorch #21591): del_post_hook(key) for exactly its
//    own keys; each removal is checked (a false return is a broken invariant
//    and is recorded as a failed removal).
//  * none (before the fix): removes nothing. The pre-fix Reducer lingered
//    until Python's GC ran, so its hooks, and the accumulators they sit on,
//    stayed; hookscope keeps its pairs in a process-wide list to reproduce
//    that. Those hooks keep firing; they are recorded as no-op fires of a
//    destroyed owner (Note [Stale hooks are harmless no-ops]).
//  * by-type (the rejected "solution 1"): removes every Reducer-owned post
//    hook on its accumulators, whoever owns it, so a second DDP on the same
//    module silently loses its hooks.
// Every removal is an event naming the hook's owner and the remover.
//
// Note [Stale hooks are harmless no-ops]
// A Reducer's hooks reach it through a weak reference. A hook that outlives
// its Reducer (policy none) fires, finds nothing, and emits
// kAutogradHookNoop with sub = NoopReason::kOwnerDestroyed; it never touches
// freed memory.
class Reducer {
 public:
  Reducer(std::vector<nn::NamedParameter> params, std::shared_ptr<ProcessGroup> group,
          ReducerOptions options = {});
  ~Reducer();
  Reducer(const Reducer&) = delete;
  Reducer& operator=(const Reducer&) = delete;

  // Arms the Reducer for the coming backward of `outputs`; with
  // find_unused_parameters, marks parameters the outputs do not reach ready.
  void prepare_for_backward(const variable_list& outputs);
  // The coming backward runs inside DDP's no_sync(): its fires do nothing
  // and say so (NoopReason::kNoSync), until the next prepare_for_backward.
  void skip_sync_for_backward();

  OwnerId owner() const;
  const std::string& label() const;
  size_t num_buckets() const;
  // Parameter indices per bucket, in reduction order.
  std::vector<std::vector<size_t>> bucket_assignment() const;
  size_t hooks_added() const;
  // Note [Comm hooks]. Throws std::logic_error when one is registered already.
  HookKey register_comm_hook(CommHook hook);

  struct Core;  // shared with the hooks through weak references

 private:
  std::shared_ptr<Core> core_;
};

// Owner-kind label for Reducers on this rank: "Reducer 1", "Reducer 2", ...
// (Note [Reducer labels per recording]); each label taken is released once.
std::string next_reducer_label();
void release_reducer_label();

}  // namespace hookscope::ddp
