#pragma once
// The torch side of the bridge (nodes.cpp, observers.cpp, compiled against
// libtorch 1.13), seen from the pybind11 module (module.cpp) through plain
// CPython types so that only those two translation units include torch's
// headers (compile time).
// See docs/torch-bridge.md and Note [Observer hooks].

#include <Python.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

namespace hookscope::bridge {

// A new hook key; keys are never reused within a process (Note [Hook keys]).
uint64_t new_key();

// Starts a fresh id space for a new recording (ids of the previous one are
// forgotten; their Nodes' observers go quiet).
void reset_registry();

// Note [Torch bridge node ids]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Node ids are the bridge's own (1, 2, ... per recording), never pointers.
// kNodeCreated carries PyTorch's sequence_nr() + 1 in `actor` (0: none) and
// no label for ordinary Functions, so that a diff matches them with the
// Functions of hookscope's runtime (Note [Matching Functions across traces]);
// AccumulateGrad's label is its parameter's qualified name and shape.

// Id of the autograd Node behind a Python grad_fn (C++ or Python-defined
// Function), registering it and every Node below it (kNodeCreated,
// kNodeEdge) if new. 0 when `obj` is not a Node.
uint64_t node_id(PyObject* obj);

// Id of a leaf tensor's AccumulateGrad: the live one, or (create) a new one as
// PyTorch's grad_accumulator() makes it, held until release_held(). 0 when
// there is none.
uint64_t accumulator_id(PyObject* tensor, bool create);
void release_held();

// Registers the graphs below `roots` (a sequence of grad_fns / None).
void observe_graph(PyObject* roots);

// Compares every live Node's C++ hooks (those Python cannot see, such as
// DDP's Reducer hooks) with the previous snapshot: new ones are announced as
// kHookAdded with `add_owner` (pre hooks with kind `pre_kind`), missing ones
// as kHookRemoved by `remove_actor`. Keeps each observer last. Returns how
// many hooks it found removed (a Reducer's destructor: its hooks_removed).
size_t snapshot(uint32_t add_owner, uint32_t remove_actor, int pre_kind);
// How many of `owner`'s hooks snapshots have found gone so far.
uint32_t removed_hooks_of(uint32_t owner);

// Keys of the C++ post hooks on a Node (or on a leaf tensor's live
// AccumulateGrad) in list order, and the length of its post_hooks() list
// without the bridge's own observer.
std::vector<uint64_t> cpp_post_hook_keys(PyObject* obj);
size_t post_hook_count(PyObject* obj);

// (node id, hook kind, dict) for the Python Node hook dicts on live Nodes
// (grad_fn.register_hook -> kPost, grad_fn.register_prehook -> kPre). New refs.
PyObject* python_hook_dicts();

// AccumulateGrads registered since the last call: (node id, leaf tensor). New ref.
PyObject* take_new_accumulators();

// DDP: `owner`'s Reducer hooks are on these AccumulateGrads (node ids in
// parameter index order; empty: forget the Reducer). A fire of its hook
// records kMarkReady when the Reducer prepared for this backward, else
// kAutogradHookNoop (it does nothing, as in DDP).
void set_reducer(uint32_t owner, const std::vector<uint64_t>& accumulators);
void set_prepared(uint32_t owner, bool prepared);
// `owner`'s DDP ran forward inside no_sync(): until it prepares again (or the
// backward ends), its fires are no-ops of reason NoopReason::kNoSync.
void set_no_sync(uint32_t owner);
// Parameters the prepared Reducer's hooks marked ready in this backward; -1
// when it was not prepared for it (Note [A bridge trace's finalized backward]).
int64_t ready_count(uint32_t owner);
void clear_prepared();  // at the end of every backward

// `owner`'s buckets (Note [Collectives through RecordFunction]): byte sizes
// in the Reducer's order, and each one's parameter indices (empty: not known;
// DDP exposes them only once it rebuilt its buckets). Its kMarkReady then
// name the bucket; bucket allreduces are matched by size.
void set_buckets(uint32_t owner, const std::vector<uint64_t>& bytes,
                 const std::vector<std::vector<uint32_t>>& params);
// c10d's collectives through a global RecordFunction callback (collectives.cpp).
void observe_collectives(bool on);
// Waits up to `limit` for the collectives in flight to end (Note [The last
// collective's end]).
void wait_collectives(std::chrono::milliseconds limit);
// Around every backward (nested ones count): bucket allreduces happen there.
void set_in_backward(bool in);

// In a child right after fork(): the registry's lock is made anew (a thread
// that no longer exists may have held it) and everything is forgotten, as
// for a new recording. Note [Recording across fork].
void after_fork();

// Rank stamped on events from threads the bridge observes (autograd threads).
void set_rank(int rank);

}  // namespace hookscope::bridge
