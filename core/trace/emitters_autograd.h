#pragma once
// Typed emitters for the events the autograd runtime (tensor, autograd, nn)
// writes. Each field's meaning is declared here, once; the raw layout per
// EventKind is listed in trace/event.h. Every function costs what emit() costs
// when recording is off (Note [Cost of emission]).

#include <cstdint>

#include "trace/emit.h"

namespace hookscope::trace {

// A Function was created and wired. `name` is an interned string id,
// `flags` kNodeIsLeafAccumulator or 0, `previous_accumulator` the id of the
// AccumulateGrad this one replaces for the same leaf (0: none).
inline void emit_node_created(uint64_t node, uint64_t name, uint8_t flags,
                              uint64_t previous_accumulator) noexcept {
  emit(EventKind::kNodeCreated, flags, node, previous_accumulator, name);
}
// `node`'s next edge leads to input `input_nr` of Function `next`.
inline void emit_node_edge(uint64_t node, uint64_t next, uint32_t input_nr) noexcept {
  emit(EventKind::kNodeEdge, 0, node, 0, next, 0, input_nr);
}
// A label (interned string id) shown for `node`: the leaf's name and shape.
inline void emit_node_label(uint64_t node, uint64_t label) noexcept {
  emit(EventKind::kNodeLabel, 0, node, 0, label);
}
inline void emit_node_released(uint64_t node) noexcept {
  emit(EventKind::kNodeReleased, 0, node);
}

// A hook owner came to be; `from_snapshot` when it predates the recording.
inline void emit_owner_created(uint32_t owner, OwnerKind kind, uint64_t label,
                               bool from_snapshot = false) noexcept {
  emit(EventKind::kOwnerCreated, static_cast<uint8_t>(kind), 0, 0, label, owner,
       from_snapshot ? kOwnerFromSnapshot : 0);
}
inline void emit_owner_destroyed(uint32_t owner) noexcept {
  emit(EventKind::kOwnerDestroyed, 0, 0, 0, 0, owner);
}

// A hook of `kind` was added to `node` (0 for module hooks, Note [Module
// hooks in traces]) under `key` by `owner`; `input_nr` is the gradient a
// tensor pre hook sees (0 for other kinds).
inline void emit_hook_added(uint64_t node, uint64_t key, HookKind kind, uint32_t owner,
                            uint32_t input_nr = 0) noexcept {
  emit(EventKind::kHookAdded, static_cast<uint8_t>(kind), node, key, input_nr, owner);
}
// The hook is being called, now (emitted right before the call, and only
// for a call that happens: Note [Hook fire events]).
inline void emit_hook_fired(uint64_t node, uint64_t key, HookKind kind, uint32_t owner) noexcept {
  emit(EventKind::kHookFired, static_cast<uint8_t>(kind), node, key, 0, owner);
}
// The hook was removed: `owner` owned it, `remover` asked, `cause` says why.
inline void emit_hook_removed(uint64_t node, uint64_t key, HookKind kind, uint32_t owner,
                              uint32_t remover, RemoveCause cause) noexcept {
  emit(EventKind::kHookRemoved, static_cast<uint8_t>(kind), node, key,
       static_cast<uint64_t>(cause), owner, remover);
}
// `remover` asked to remove `key`, which names no live hook of `kind` there.
inline void emit_hook_remove_failed(uint64_t node, uint64_t key, HookKind kind,
                                    uint32_t remover) noexcept {
  emit(EventKind::kHookRemoveFailed, static_cast<uint8_t>(kind), node, key, 0, 0, remover);
}

// A backward pass from `roots` roots begins; `grad_mode` for autograd::grad.
inline void emit_backward_begin(uint64_t roots, bool grad_mode) noexcept {
  emit(EventKind::kBackwardBegin, grad_mode ? 1 : 0, 0, 0, roots);
}
// It ended after executing `executed` Functions; `completed` false when it threw.
inline void emit_backward_end(uint64_t executed, bool completed) noexcept {
  emit(EventKind::kBackwardEnd, completed ? 0 : 2, 0, 0, executed);
}
inline void emit_apply_begin(uint64_t node) noexcept { emit(EventKind::kApplyBegin, 0, node); }
inline void emit_apply_end(uint64_t node) noexcept { emit(EventKind::kApplyEnd, 0, node); }

// A saved_tensors_hooks pack (or unpack) hook of the context owned by `owner`
// is being called for saved slot `slot` of Function `node`.
inline void emit_saved_tensor_packed(uint64_t node, uint32_t slot, uint32_t owner) noexcept {
  emit(EventKind::kSavedTensorPacked, 0, node, 0, slot, owner);
}
inline void emit_saved_tensor_unpacked(uint64_t node, uint32_t slot, uint32_t owner) noexcept {
  emit(EventKind::kSavedTensorUnpacked, 0, node, 0, slot, owner);
}

}  // namespace hookscope::trace
