#pragma once
// The event record every part of the runtime emits. See Note [Event record].

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <type_traits>

namespace hookscope::trace {

// Note [Event record]
// ~~~~~~~~~~~~~~~~~~~
// One fixed-size, trivially copyable, 48-byte record per event, written to
// disk as it is (little-endian hosts only; the file header says so). Text
// (Function names, owner labels, parameter names) never lives in the record:
// it is interned once in the string table (trace/strings.h) and referred to
// by id in `arg`. Functions are referred to by their stable id, never by
// pointer. The global sequence number is not stored: it is the event's index
// in the merged stream (events are merged by timestamp, ties by thread, and
// per-thread order is preserved). The meaning of node/key/arg/owner/actor per
// kind is listed next to each EventKind below; unused fields are zero.
enum class EventKind : uint8_t {
  kNone = 0,
  // node = Function id, arg = name string id, sub = flags (kNodeIsLeafAccumulator),
  // key = the previous AccumulateGrad of the same leaf (0 if none; Note [Leaf
  // hooks live on the tensor]), actor = PyTorch's sequence number + 1 in
  // traces of the torch bridge (0: none; Note [Torch bridge node ids])
  kNodeCreated = 1,
  // node = Function id, arg = next Function id, actor = input_nr on the next Function
  kNodeEdge = 2,
  // node = Function id, arg = label string id (parameter name and shape for AccumulateGrad)
  kNodeLabel = 3,
  // node = Function id
  kNodeReleased = 4,
  // owner = owner id, sub = OwnerKind, arg = label string id, actor =
  // kOwnerFromSnapshot when the owner predates the recording (announced at start)
  kOwnerCreated = 5,
  // owner = owner id
  kOwnerDestroyed = 6,
  // node, key, owner = hook's owner, sub = HookKind, arg = input_nr for tensor pre hooks,
  // actor = kOwnerFromSnapshot when the hook predates the recording (Note [Hooks present at start])
  kHookAdded = 7,
  // node, key, owner, sub = HookKind
  kHookFired = 8,
  // node, key, owner = hook's owner, actor = who removed it, sub = HookKind,
  // arg = RemoveCause
  kHookRemoved = 9,
  // node, key = the unknown key, actor = who asked, sub = HookKind asked for
  kHookRemoveFailed = 10,
  // arg = number of roots, sub = 1 for autograd::grad (AccumulateGrad does not run)
  kBackwardBegin = 11,
  // arg = number of Functions executed
  kBackwardEnd = 12,
  // node
  kApplyBegin = 13,
  // node
  kApplyEnd = 14,
  // Saved-tensor hooks (saved_tensors_hooks pack / unpack); format 1.1.
  // node = the Function that saves (or unpacks) the tensor, arg = its saved
  // slot index, owner = the owner of the saved_tensors_hooks context, key = 0
  kSavedTensorPacked = 15,
  kSavedTensorUnpacked = 16,

  // ---- DDP runtime, collectives, failures (owner = the Reducer's owner id) ----
  // arg = number of parameters, actor = number of buckets
  kReducerConstructed = 32,
  // arg = DestroyPolicy, actor = number of hooks it removed
  kReducerDestroyed = 33,
  // arg = backward index of this Reducer
  kPrepareForBackward = 34,
  // node = AccumulateGrad, key = hook key, sub = NoopReason, arg = parameter
  // index: this Reducer's hook fired but the Reducer did not prepare for this
  // backward, so it did nothing
  kAutogradHookNoop = 35,
  // node = AccumulateGrad, arg = parameter index, actor = bucket index
  kMarkReady = 36,
  // node = AccumulateGrad, arg = parameter name string id, actor = parameter index
  kMarkedTwice = 37,
  // node = AccumulateGrad (0 if none), arg = parameter name string id, actor = parameter index
  kUnusedParameter = 38,
  // arg = bucket index, actor = number of parameters in it, key = collective id
  kBucketReady = 39,
  // key = collective id, arg = bytes, actor = bucket index (UINT32_MAX: none),
  // sub = CollectiveOp
  kCollectiveBegin = 40,
  // key = collective id, sub = CollectiveStatus, arg = duration ns measured by
  // the backend, actor = where it ran (Note [Collective placement])
  kCollectiveEnd = 41,
  // all buckets reduced and averaged gradients written back; arg = backward index
  kBucketsFinalized = 42,
  // actor = the failed rank, sub = FailureMode, arg = description string id
  kFailure = 43,
  // sub = RecoveryStep, arg = description string id
  kRecoveryStep = 44,
  // arg = world size, actor = process group generation, key = group id
  kProcessGroupCreated = 45,
  // key = group id, sub = 1 when aborted
  kProcessGroupDestroyed = 46,
  // arg = training step, key = the loss as float bits
  kTrainStep = 47,
  kCount = 64,
};

enum class DestroyPolicy : uint8_t { kByKey = 0, kNone = 1, kByType = 2 };
// Why a Reducer's hook did nothing (kAutogradHookNoop's sub). kNoSync: the
// DDP's last forward ran inside no_sync() (gradient accumulation; expected,
// not an alarm: Note [Lingering owners] in analysis/owner_status.h). Traces
// before it say kNotPrepared for those too.
enum class NoopReason : uint8_t { kNotPrepared = 0, kNoSync = 1, kOwnerDestroyed = 2 };
enum class CollectiveOp : uint8_t { kAllreduce = 0, kBroadcast = 1, kBarrier = 2, kAllgather = 3 };
enum class CollectiveStatus : uint8_t { kOk = 0, kError = 1, kTimeout = 2, kAborted = 3 };
enum class FailureMode : uint8_t { kThrow = 0, kKill = 1, kTimeout = 2 };
enum class RecoveryStep : uint8_t {
  kDetected = 0,         // a survivor saw the failure
  kDdpDestroyed = 1,     // the DDP object (and its Reducer) is gone
  kGroupDestroyed = 2,   // the old process group is gone
  kGroupFormed = 3,      // a new process group exists
  kDdpRebuilt = 4,       // DDP built again on the same module
  kResumed = 5,          // training continues
};

enum class HookKind : uint8_t {
  kTensorPre = 0,       // Tensor::register_hook / Node::add_tensor_pre_hook
  kRetainGrad = 1,      // Tensor::retain_grad on a non-leaf
  kPre = 2,             // Node::add_pre_hook
  kPost = 3,            // Node::add_post_hook
  kPostAccumulate = 4,  // Tensor::register_post_accumulate_grad_hook (leaves)
  // Module hooks (format 1.1; Note [Module hooks in traces])
  kModuleForwardPre = 5,   // Module::register_forward_pre_hook
  kModuleForward = 6,      // Module::register_forward_hook
  kModuleBackwardPre = 7,  // Module::register_full_backward_pre_hook
  kModuleBackward = 8,     // Module::register_full_backward_hook
  kModuleLegacyBackward = 9,  // PyTorch's deprecated Module.register_backward_hook (torch bridge)
};
constexpr int kNumHookKinds = 10;
constexpr bool is_module_hook(HookKind kind) {
  return static_cast<uint8_t>(kind) >= static_cast<uint8_t>(HookKind::kModuleForwardPre);
}

// Note [Module hooks in traces]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A module hook belongs to a module, not to a Function: its kHookAdded and
// kHookRemoved carry node = 0 and owner = the module (OwnerKind::kModule,
// label = its qualified path such as "encoder.layers.3", "(root)" for the
// top module). Forward pre / forward hooks fire with node = 0. Full backward
// (pre) hooks run from inside backward, through the BackwardHookFunction
// Nodes that wrap the module's inputs and outputs (as in PyTorch): their
// kHookFired carries node = that Node. A fire whose key was removed earlier
// is a real event (PyTorch snapshots hook lists, Note [Extend Hook Lifetime]
// in python_hook.cpp; issue #25723): analysis reports it as a fire after
// removal, never as a malformed trace.

enum class OwnerKind : uint8_t {
  kUser = 0,
  kRetainGrad = 1,
  kReducer = 2,
  kEngine = 3,
  kModule = 4,    // an nn module; label = its qualified path (format 1.1)
  kCallSite = 5,  // no owning object found: label = "file.py:123" (format 1.1)
};

// Why a hook went away (arg of kHookRemoved).
enum class RemoveCause : uint8_t {
  kByKey = 0,          // del_*_hook(key)
  kByType = 1,         // the legacy by-type sweep (DDP policy `by-type`)
  kNodeReleased = 2,   // its Function was destroyed with the hook still on it
  kTensorReleased = 3, // its leaf tensor was destroyed
};

// Note [Collective placement]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// kCollectiveEnd's actor says where the collective ran: 0 (kPlacementHost)
// for host memory (Gloo, also traces older than this field, where actor was
// always 0); otherwise bits 0..7 hold the CUDA device index + 1 and bits
// 8..23 the stream's per-process number (1, 2, ...: Note [One stream per
// device]). For a GPU collective, arg (the duration) is measured with CUDA
// events on that stream.
constexpr uint32_t kPlacementHost = 0;
constexpr uint32_t cuda_placement(int device, int stream) {
  return (static_cast<uint32_t>(device + 1) & 0xffu) | ((static_cast<uint32_t>(stream) & 0xffffu) << 8);
}
constexpr int placement_device(uint32_t placement) { return static_cast<int>(placement & 0xffu) - 1; }
constexpr int placement_stream(uint32_t placement) {
  return static_cast<int>((placement >> 8) & 0xffffu);
}

constexpr uint8_t kNodeIsLeafAccumulator = 1;
constexpr uint32_t kOwnerFromSnapshot = 1;

struct Event {
  uint64_t t_ns = 0;   // monotonic clock, nanoseconds
  uint64_t node = 0;   // Function id (0 = none)
  uint64_t key = 0;    // hook key (0 = none)
  uint64_t arg = 0;    // kind-specific
  uint32_t owner = 0;  // owner id of the hook (or of the Reducer, ...)
  uint32_t actor = 0;  // who caused it (remover), or a small kind-specific value
  EventKind kind = EventKind::kNone;
  uint8_t sub = 0;     // HookKind for hook events, flags otherwise
  uint16_t rank = 0;
  uint32_t thread = 0; // small per-process thread index
};
static_assert(sizeof(Event) == 48, "Event is written to disk as is");
static_assert(std::is_trivially_copyable_v<Event>);

std::string_view to_string(EventKind kind);
std::string_view to_string(HookKind kind);
std::string_view to_string(OwnerKind kind);
std::string_view to_string(RemoveCause cause);
std::string_view to_string(DestroyPolicy policy);
std::string_view to_string(CollectiveOp op);
std::string_view to_string(CollectiveStatus status);
std::string_view to_string(FailureMode mode);
std::string_view to_string(RecoveryStep step);
// Inverse of to_string(EventKind); kNone when unknown.
EventKind event_kind_from_string(std::string_view name);
// The names of the policies and failure modes (to_string's spelling, in enum
// order: what the scenario options accept) and their inverses (nullopt when
// unknown).
std::vector<std::string> destroy_policy_names();
std::optional<DestroyPolicy> parse_destroy_policy(std::string_view name);
std::vector<std::string> failure_mode_names();
std::optional<FailureMode> parse_failure_mode(std::string_view name);

// Note [Hook keys in text]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A runtime hook key is serial << 24 | slot (Note [Hook keys] in
// autograd/hooks.h): as a number it reads 150994944. Text meant for people
// (CLI, GUI, findings) writes it as "serial.slot" (9.0); keys below 1 << 24
// (traces made by hand) stay plain numbers. JSON keeps the raw number.
std::string format_hook_key(uint64_t key);
// "9.0" or "150994944"; nullopt when it is neither.
std::optional<uint64_t> parse_hook_key(std::string_view text);

}  // namespace hookscope::trace
