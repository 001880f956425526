#pragma once
// Hook keys, hook owners and the per-Function hook list (autograd/hooks_list.h).

#include <cstdint>
#include <string>
#include <memory>
#include <utility>
#include <vector>

#include "trace/event.h"
#include "trace/hook_key.h"
#include "autograd/hooks_list.h"

namespace hookscope {

using trace::HookKind;
using trace::OwnerKind;

// Note [Hook keys]
// ~~~~~~~~~~~~~~~~
// Every add_*_hook returns a HookKey that carries a serial number from one
// process-wide counter (handed out in per-thread batches: Note [Hook key
// serials] in autograd/hooks_list.h), so a key is never handed out twice,
// whatever Function or hook kind it names (its low bits name the hook's slot
// in its list, which makes removal O(1) without a hash map).
// PyTorch (#21591) used the hook's address as key; an address is reused once
// the hook is freed, so a stale key kept by a dead Reducer could remove a
// newer Reducer's hook (ABA). With counter keys a stale key matches nothing:
// del_*_hook returns false, removes nothing, and emits kHookRemoveFailed.
// (HookKey itself is declared in trace/hook_key.h.)

// A key names the slot its hook occupies in its list and carries a
// process-wide serial number (Note [Hook key layout] in trace/hook_key.h), so
// it is unique in the process and removal needs no search.
// next_hook_key_for_slot(slot) and slot_of(key): autograd/hooks_list.h.

// Who added a hook (a user, a Reducer, retain_grad). Owners are recorded in
// the trace with a kind and a label, and their end of life is an event, so
// the analysis can tell a live owner's hooks from a leaked one's.
// OwnerId: trace/hook_key.h.

struct HookOwner {
  OwnerKind kind = OwnerKind::kUser;
  OwnerId id = 0;
  std::string label;
};

// Registers a new owner and emits kOwnerCreated. Thread-safe.
OwnerId create_owner(OwnerKind kind, std::string label);
// Marks the owner destroyed (emits kOwnerDestroyed); its hooks stay where they are.
void destroy_owner(OwnerId id);
// The owner's description; label "?" for an unknown id.
HookOwner owner_info(OwnerId id);
// The default owner of hooks added without one: kind user, label "user".
OwnerId user_owner();
// `owner`, or user_owner() for kDefaultHookOwner.
inline OwnerId resolve_owner(OwnerId owner) { return owner == kDefaultHookOwner ? user_owner() : owner; }

}  // namespace hookscope
