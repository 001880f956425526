#pragma once
// The event record every part of the runtime emits. See Note [Event record].

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <type_traits>

#include "trace/event_table.h"

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
// per-thread order is preserved). What node/key/arg/owner/actor/sub hold per
// kind is declared once, in the table of trace/event_table.h (Note [Typed
// events]); unused fields are zero.
enum class EventKind : uint8_t {
  kNone = 0,
#define HOOKSCOPE_EVENT_KIND_VALUE(Name, value, text) k##Name = value,
  HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_EVENT_KIND_VALUE)
#undef HOOKSCOPE_EVENT_KIND_VALUE
  kCount = 64,
};

enum class DestroyPolicy : uint8_t { kByKey = 0, kNone = 1, kByType = 2 };
// How a backward pass ended (kBackwardEnd's ending).
enum class BackwardEnding : uint8_t { kCompleted = 0, kThrew = 2 };
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
  kCommHook = 10,  // DistributedDataParallel::register_comm_hook (format 1.2; Note [Comm hooks in traces])
};
constexpr int kNumHookKinds = 11;
constexpr bool is_module_hook(HookKind kind) {
  return static_cast<uint8_t>(kind) >= static_cast<uint8_t>(HookKind::kModuleForwardPre) &&
         static_cast<uint8_t>(kind) <= static_cast<uint8_t>(HookKind::kModuleLegacyBackward);
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

// Note [Comm hooks in traces]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A DDP comm hook (register_comm_hook: it gets each bucket and returns the
// reduced gradient in place of DDP's allreduce) belongs to the Reducer, not
// to a Function: its events carry node = 0 and owner = the Reducer's owner,
// like a module hook but it is not one (is_module_hook is false, so nothing
// anchors it to a module's Functions). It fires once per bucket the Reducer
// hands it, with the bucket's index and bytes (HookFired's `bucket`, `bytes`).
// It is attached as long as its Reducer lives: the Reducer's destructor
// removes it with its other hooks, and a kept (lingering) Reducer keeps it.
// The runtime (core/ddp/reducer.h, Note [Comm hooks]) and the torch bridge
// (python/hookscope/_ddp.py) write the same events, and the same collectives
// for what the hook runs (Note [A comm hook's collectives] in
// core/ddp/process_group.h).

// Whether a hook event of `event` kind (kHookAdded, kHookFired, kHookRemoved,
// kHookRemoveFailed) for a hook of `hook` kind is on no Function, so that its
// `node` is 0 (Note [Hooks on no Function] in trace/event_table.h).
constexpr bool hook_on_no_function(EventKind event, HookKind hook) {
  if (hook == HookKind::kCommHook) return true;
  if (!is_module_hook(hook)) return false;
  // Module hooks: backward (pre) hooks fire from their BackwardHookFunction Node.
  if (event != EventKind::kHookFired) return true;
  return hook == HookKind::kModuleForwardPre || hook == HookKind::kModuleForward;
}

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

// The bucket index of a collective that belongs to no bucket (a broadcast).
constexpr uint32_t kNoBucket = UINT32_MAX;
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

  // The fields of this event as its kind names them (Note [Typed events]):
  // e.as<ev::MarkReady>().param. Stops the program when the event is of
  // another kind (a reader's bug, never the file's): switch on `kind` first.
  template <class View> View as() const;
  template <class View> bool is() const { return kind == View::kKind; }
};
static_assert(sizeof(Event) == 48, "Event is written to disk as is");
static_assert(std::is_trivially_copyable_v<Event>);

// An interned string (trace/strings.h); in a Model, the Model's id (Model::str).
using StringId = uint32_t;

// ---- typed views, one struct per row of the table (Note [Typed events]) ----
namespace ev {
#define HOOKSCOPE_EVENT_FIELD_DECL(type, name, slot) type name{};
#define HOOKSCOPE_EVENT_VIEW(Name, value, text)                        \
  struct Name {                                                        \
    static constexpr EventKind kKind = EventKind::k##Name;             \
    HOOKSCOPE_EVENT_FIELDS_##Name(HOOKSCOPE_EVENT_FIELD_DECL, HOOKSCOPE_EVENT_FIELD_DECL, HOOKSCOPE_EVENT_FIELD_DECL) \
  };
HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_EVENT_VIEW)
#undef HOOKSCOPE_EVENT_VIEW
#undef HOOKSCOPE_EVENT_FIELD_DECL
}  // namespace ev

namespace detail {
// A slot's value as a field's type: integers saturate (a corrupt file's huge
// value stays out of range instead of wrapping into range), enums saturate
// to 0xff (no such value), bool is "not zero".
template <class T>
constexpr T from_slot(uint64_t raw) {
  if constexpr (std::is_same_v<T, bool>) {
    return raw != 0;
  } else if constexpr (std::is_enum_v<T>) {
    return static_cast<T>(raw > 0xffu ? 0xffu : raw);
  } else {
    constexpr uint64_t kMax = static_cast<uint64_t>(static_cast<T>(~T{}));
    return static_cast<T>(raw > kMax ? kMax : raw);
  }
}
template <class Slot, class T>
constexpr Slot to_slot(T value) {
  static_assert(sizeof(T) <= sizeof(Slot), "a field is wider than its slot (trace/event_table.h)");
  if constexpr (std::is_enum_v<T>) {
    return static_cast<Slot>(static_cast<std::underlying_type_t<T>>(value));
  } else {
    return static_cast<Slot>(value);
  }
}
[[noreturn]] void wrong_event_kind(EventKind have, EventKind want);
}  // namespace detail

// The record of a view, and a view of a record (no kind check: Event::as).
#define HOOKSCOPE_EVENT_PACK(type, name, slot) r.slot = detail::to_slot<decltype(r.slot)>(v.name);
#define HOOKSCOPE_EVENT_UNPACK(type, name, slot) v.name = detail::from_slot<type>(r.slot);
#define HOOKSCOPE_EVENT_CODEC(Name, value, text)                                         \
  constexpr Event to_event(const ev::Name& v) {                                          \
    Event r;                                                                             \
    r.kind = EventKind::k##Name;                                                         \
    HOOKSCOPE_EVENT_FIELDS_##Name(HOOKSCOPE_EVENT_PACK, HOOKSCOPE_EVENT_PACK, HOOKSCOPE_EVENT_PACK) return r;  \
  }                                                                                      \
  constexpr void from_event(const Event& r, ev::Name& v) {                               \
    HOOKSCOPE_EVENT_FIELDS_##Name(HOOKSCOPE_EVENT_UNPACK, HOOKSCOPE_EVENT_UNPACK, HOOKSCOPE_EVENT_UNPACK)        \
  }
HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_EVENT_CODEC)
#undef HOOKSCOPE_EVENT_CODEC
#undef HOOKSCOPE_EVENT_UNPACK
#undef HOOKSCOPE_EVENT_PACK

template <class View>
View Event::as() const {
  if (__builtin_expect(kind != View::kKind, 0)) detail::wrong_event_kind(kind, View::kKind);
  View v;
  from_event(*this, v);
  return v;
}

// The table as data, for checks and tools: each kind's fields, in order.
struct EventFieldInfo {
  std::string_view name;  // the view's member
  std::string_view type;  // as written in the table
  std::string_view slot;  // node, key, arg, owner, actor or sub
  bool required;          // REQ: every writer fills it (zero only as a value: index 0, an enum's first)
  bool given;             // REQ or GIVEN: every writer passes it (GIVEN: zero may mean "none")
};
struct EventKindInfo {
  EventKind kind;
  std::string_view name;  // to_string(kind)
  std::string_view view;  // the struct in trace::ev
  std::vector<EventFieldInfo> fields;
};
const std::vector<EventKindInfo>& event_table();
// The row of a kind; nullptr for a kind this build does not define.
const EventKindInfo* event_kind_info(EventKind kind);
// The raw value of a field's slot (EventFieldInfo::slot), for generic views
// that print every field by name (the Chrome exporter).
uint64_t slot_value(const Event& e, std::string_view slot);

// A kMarkedTwice or a kUnusedParameter: the two name a parameter alike.
// (The helpers below are inline: readers call them per event, Note [Typed events].)
inline ev::MarkedTwice parameter_named(const Event& e) {
  if (e.kind != EventKind::kUnusedParameter) return e.as<ev::MarkedTwice>();
  const auto unused = e.as<ev::UnusedParameter>();
  return {.owner = unused.owner, .node = unused.node, .param_name = unused.param_name, .param = unused.param};
}

// Whether this build defines the kind (a row of the table).
constexpr bool event_kind_defined(EventKind kind) {
  switch (kind) {
#define HOOKSCOPE_EVENT_KIND_CASE(Name, value, text) case EventKind::k##Name:
    HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_EVENT_KIND_CASE)
#undef HOOKSCOPE_EVENT_KIND_CASE
      return true;
    default: return false;
  }
}

// Fields every hook event (added, fired, removed, remove failed) has.
inline bool is_hook_event(EventKind kind) {
  return kind == EventKind::kHookAdded || kind == EventKind::kHookFired || kind == EventKind::kHookRemoved ||
         kind == EventKind::kHookRemoveFailed;
}
// Only for a hook event.
inline HookKind hook_kind_of(const Event& e) {
  switch (e.kind) {
    case EventKind::kHookAdded: return e.as<ev::HookAdded>().hook_kind;
    case EventKind::kHookFired: return e.as<ev::HookFired>().hook_kind;
    case EventKind::kHookRemoved: return e.as<ev::HookRemoved>().hook_kind;
    case EventKind::kHookRemoveFailed: return e.as<ev::HookRemoveFailed>().hook_kind;
    default: detail::wrong_event_kind(e.kind, EventKind::kHookAdded);
  }
}
// Who removed a hook (kHookRemoved) or asked to (kHookRemoveFailed); 0 for
// every other kind.
inline uint32_t remover_of(const Event& e) {
  if (e.kind == EventKind::kHookRemoved) return e.as<ev::HookRemoved>().remover;
  if (e.kind == EventKind::kHookRemoveFailed) return e.as<ev::HookRemoveFailed>().remover;
  return 0;
}
// hook_kind_of, a malformed trace's value wrapped into range (what views print).
inline HookKind shown_hook_kind(const Event& e) {
  return static_cast<HookKind>(static_cast<uint8_t>(hook_kind_of(e)) % kNumHookKinds);
}

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
