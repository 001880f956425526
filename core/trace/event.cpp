#include "trace/event.h"

#include <charconv>
#include <cstdio>
#include <cstdlib>

#include "trace/hook_key.h"

namespace hookscope::trace {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kNone: return "none";
#define HOOKSCOPE_EVENT_KIND_NAME(Name, value, text) \
  case EventKind::k##Name: return #text;
    HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_EVENT_KIND_NAME)
#undef HOOKSCOPE_EVENT_KIND_NAME
    default: return "unknown";
  }
}

const std::vector<EventKindInfo>& event_table() {
#define HOOKSCOPE_EVENT_FIELD_REQ(type, name, slot) EventFieldInfo{#name, #type, #slot, true, true},
#define HOOKSCOPE_EVENT_FIELD_OPT(type, name, slot) EventFieldInfo{#name, #type, #slot, false, false},
#define HOOKSCOPE_EVENT_FIELD_GIVEN(type, name, slot) EventFieldInfo{#name, #type, #slot, false, true},
#define HOOKSCOPE_EVENT_KIND_INFO(Name, value, text)                                            \
  EventKindInfo{EventKind::k##Name, #text, #Name,                                               \
                {HOOKSCOPE_EVENT_FIELDS_##Name(HOOKSCOPE_EVENT_FIELD_REQ, HOOKSCOPE_EVENT_FIELD_OPT,              \
                                                HOOKSCOPE_EVENT_FIELD_GIVEN)}},
  static const std::vector<EventKindInfo> table = {HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_EVENT_KIND_INFO)};
#undef HOOKSCOPE_EVENT_KIND_INFO
#undef HOOKSCOPE_EVENT_FIELD_GIVEN
#undef HOOKSCOPE_EVENT_FIELD_OPT
#undef HOOKSCOPE_EVENT_FIELD_REQ
  return table;
}

const EventKindInfo* event_kind_info(EventKind kind) {
  static const std::vector<const EventKindInfo*> by_kind = [] {
    std::vector<const EventKindInfo*> v(256, nullptr);
    for (const EventKindInfo& k : event_table()) v[static_cast<uint8_t>(k.kind)] = &k;
    return v;
  }();
  return by_kind[static_cast<uint8_t>(kind)];
}

uint64_t slot_value(const Event& e, std::string_view slot) {
  if (slot == "node") return e.node;
  if (slot == "key") return e.key;
  if (slot == "arg") return e.arg;
  if (slot == "owner") return e.owner;
  if (slot == "actor") return e.actor;
  if (slot == "sub") return e.sub;
  return 0;
}

namespace detail {
void wrong_event_kind(EventKind have, EventKind want) {
  std::fprintf(stderr, "hookscope: internal error: a %s event read as %s (Note [Typed events])\n",
               std::string(to_string(have)).c_str(), std::string(to_string(want)).c_str());
  std::abort();
}
}  // namespace detail

std::string_view to_string(HookKind kind) {
  switch (kind) {
    case HookKind::kTensorPre: return "tensor_pre";
    case HookKind::kRetainGrad: return "retain_grad";
    case HookKind::kPre: return "pre";
    case HookKind::kPost: return "post";
    case HookKind::kPostAccumulate: return "post_accumulate";
    case HookKind::kModuleForwardPre: return "module_forward_pre";
    case HookKind::kModuleForward: return "module_forward";
    case HookKind::kModuleBackwardPre: return "module_backward_pre";
    case HookKind::kModuleBackward: return "module_backward";
    case HookKind::kModuleLegacyBackward: return "module_legacy_backward";
    case HookKind::kCommHook: return "comm_hook";
  }
  return "unknown";
}

std::string_view to_string(OwnerKind kind) {
  switch (kind) {
    case OwnerKind::kUser: return "user";
    case OwnerKind::kRetainGrad: return "retain_grad";
    case OwnerKind::kReducer: return "reducer";
    case OwnerKind::kEngine: return "engine";
    case OwnerKind::kModule: return "module";
    case OwnerKind::kCallSite: return "call_site";
  }
  return "unknown";
}

std::string_view to_string(RemoveCause cause) {
  switch (cause) {
    case RemoveCause::kByKey: return "by_key";
    case RemoveCause::kByType: return "by_type";
    case RemoveCause::kNodeReleased: return "node_released";
    case RemoveCause::kTensorReleased: return "tensor_released";
  }
  return "unknown";
}

std::string_view to_string(DestroyPolicy policy) {
  switch (policy) {
    case DestroyPolicy::kByKey: return "by-key";
    case DestroyPolicy::kNone: return "none";
    case DestroyPolicy::kByType: return "by-type";
  }
  return "unknown";
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllreduce: return "allreduce";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kBarrier: return "barrier";
    case CollectiveOp::kAllgather: return "allgather";
  }
  return "unknown";
}

std::string_view to_string(CollectiveStatus status) {
  switch (status) {
    case CollectiveStatus::kOk: return "ok";
    case CollectiveStatus::kError: return "error";
    case CollectiveStatus::kTimeout: return "timeout";
    case CollectiveStatus::kAborted: return "aborted";
  }
  return "unknown";
}

std::string_view to_string(FailureMode mode) {
  switch (mode) {
    case FailureMode::kThrow: return "throw";
    case FailureMode::kKill: return "kill";
    case FailureMode::kTimeout: return "timeout";
  }
  return "unknown";
}

std::string_view to_string(RecoveryStep step) {
  switch (step) {
    case RecoveryStep::kDetected: return "detected";
    case RecoveryStep::kDdpDestroyed: return "ddp_destroyed";
    case RecoveryStep::kGroupDestroyed: return "group_destroyed";
    case RecoveryStep::kGroupFormed: return "group_formed";
    case RecoveryStep::kDdpRebuilt: return "ddp_rebuilt";
    case RecoveryStep::kResumed: return "resumed";
  }
  return "unknown";
}

EventKind event_kind_from_string(std::string_view name) {
  for (int k = 1; k < static_cast<int>(EventKind::kCount); ++k) {
    auto kind = static_cast<EventKind>(k);
    if (to_string(kind) == name) return kind;
  }
  return EventKind::kNone;
}

std::string format_hook_key(uint64_t key) {
  // Note [Hook key layout]
  if (hook_key_serial(key) == 0) return std::to_string(key);
  return std::to_string(hook_key_serial(key)) + "." + std::to_string(hook_key_slot(key));
}

std::optional<uint64_t> parse_hook_key(std::string_view text) {
  auto number = [](std::string_view s) -> std::optional<uint64_t> {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || p != s.data() + s.size()) return std::nullopt;
    return v;
  };
  const size_t dot = text.find('.');
  if (dot == std::string_view::npos) return number(text);
  const auto serial = number(text.substr(0, dot));
  const auto slot = number(text.substr(dot + 1));
  if (!serial || !slot || *slot >= kMaxHookSlots || *serial >= (uint64_t{1} << (64 - kHookSlotBits))) {
    return std::nullopt;
  }
  return make_hook_key(*serial, static_cast<uint32_t>(*slot));
}

namespace {

constexpr DestroyPolicy kDestroyPolicies[] = {DestroyPolicy::kByKey, DestroyPolicy::kNone,
                                              DestroyPolicy::kByType};
constexpr FailureMode kFailureModes[] = {FailureMode::kThrow, FailureMode::kKill, FailureMode::kTimeout};

template <class E, size_t N>
std::vector<std::string> names_of(const E (&values)[N]) {
  std::vector<std::string> names;
  for (E v : values) names.emplace_back(to_string(v));
  return names;
}

template <class E, size_t N>
std::optional<E> parse_name(std::string_view name, const E (&values)[N]) {
  for (E v : values) {
    if (to_string(v) == name) return v;
  }
  return std::nullopt;
}

}  // namespace

std::vector<std::string> destroy_policy_names() { return names_of(kDestroyPolicies); }
std::optional<DestroyPolicy> parse_destroy_policy(std::string_view name) {
  return parse_name(name, kDestroyPolicies);
}
std::vector<std::string> failure_mode_names() { return names_of(kFailureModes); }
std::optional<FailureMode> parse_failure_mode(std::string_view name) {
  return parse_name(name, kFailureModes);
}

}  // namespace hookscope::trace
