#include "trace/event.h"

namespace hookscope::trace {

std::string_view to_string(EventKind kind) {
  switch (kind) {
    case EventKind::kNone: return "none";
    case EventKind::kNodeCreated: return "node_created";
    case EventKind::kNodeEdge: return "node_edge";
    case EventKind::kNodeLabel: return "node_label";
    case EventKind::kNodeReleased: return "node_released";
    case EventKind::kOwnerCreated: return "owner_created";
    case EventKind::kOwnerDestroyed: return "owner_destroyed";
    case EventKind::kHookAdded: return "hook_add";
    case EventKind::kHookFired: return "hook_fire";
    case EventKind::kHookRemoved: return "hook_remove";
    case EventKind::kHookRemoveFailed: return "hook_remove_failed";
    case EventKind::kBackwardBegin: return "backward_begin";
    case EventKind::kBackwardEnd: return "backward_end";
    case EventKind::kApplyBegin: return "apply_begin";
    case EventKind::kApplyEnd: return "apply_end";
    default: return "unknown";
  }
}

std::string_view to_string(HookKind kind) {
  switch (kind) {
    case HookKind::kTensorPre: return "tensor_pre";
    case HookKind::kRetainGrad: return "retain_grad";
    case HookKind::kPre: return "pre";
    case HookKind::kPost: return "post";
    case HookKind::kPostAccumulate: return "post_accumulate";
  }
  return "unknown";
}

std::string_view to_string(OwnerKind kind) {
  switch (kind) {
    case OwnerKind::kUser: return "user";
    case OwnerKind::kRetainGrad: return "retain_grad";
    case OwnerKind::kReducer: return "reducer";
    case OwnerKind::kEngine: return "engine";
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

}  // namespace hookscope::trace
