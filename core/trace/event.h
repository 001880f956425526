#pragma once
// The event record every part of the runtime emits. See Note [Event record].

#include <cstdint>
#include <string_view>
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
  // hooks live on the tensor])
  kNodeCreated = 1,
  // node = Function id, arg = next Function id, actor = input_nr on the next Function
  kNodeEdge = 2,
  // node = Function id, arg = label string id (parameter name and shape for AccumulateGrad)
  kNodeLabel = 3,
  // node = Function id
  kNodeReleased = 4,
  // owner = owner id, sub = OwnerKind, arg = label string id
  kOwnerCreated = 5,
  // owner = owner id
  kOwnerDestroyed = 6,
  // node, key, owner = hook's owner, sub = HookKind, arg = input_nr for tensor pre hooks
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
  // Reserved for the DDP runtime, collectives and failures (see the DDP issue).
  kFirstDistributed = 32,
  kCount = 64,
};

enum class HookKind : uint8_t {
  kTensorPre = 0,       // Tensor::register_hook / Node::add_tensor_pre_hook
  kRetainGrad = 1,      // Tensor::retain_grad on a non-leaf
  kPre = 2,             // Node::add_pre_hook
  kPost = 3,            // Node::add_post_hook
  kPostAccumulate = 4,  // Tensor::register_post_accumulate_grad_hook (leaves)
};
constexpr int kNumHookKinds = 5;

enum class OwnerKind : uint8_t {
  kUser = 0,
  kRetainGrad = 1,
  kReducer = 2,
  kEngine = 3,
};

// Why a hook went away (arg of kHookRemoved).
enum class RemoveCause : uint8_t {
  kByKey = 0,          // del_*_hook(key)
  kByType = 1,         // the legacy by-type sweep (DDP policy `by-type`)
  kNodeReleased = 2,   // its Function was destroyed with the hook still on it
  kTensorReleased = 3, // its leaf tensor was destroyed
};

constexpr uint8_t kNodeIsLeafAccumulator = 1;

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

}  // namespace hookscope::trace
