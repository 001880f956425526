#pragma once
// Typed emitters for the events the autograd runtime (tensor, autograd, nn)
// writes, over the typed views of trace/event.h: each field's meaning and
// slot is declared once, in trace/event_table.h (Note [Typed events]). Every function costs what emit() costs
// when recording is off (Note [Cost of emission]).

#include <cstdint>

#include "trace/emit.h"

namespace hookscope::trace {

// A Function was created and wired. `name` is an interned string id,
// `flags` kNodeIsLeafAccumulator or 0, `previous_accumulator` the id of the
// AccumulateGrad this one replaces for the same leaf (0: none).
inline void emit_node_created(uint64_t node, uint64_t name, uint8_t flags,
                              uint64_t previous_accumulator) noexcept {
  emit(ev::NodeCreated{.node = node, .name = static_cast<StringId>(name), .flags = flags,
                       .previous_accumulator = previous_accumulator});
}
// `node`'s next edge leads to input `input_nr` of Function `next`.
inline void emit_node_edge(uint64_t node, uint64_t next, uint32_t input_nr) noexcept {
  emit(ev::NodeEdge{.node = node, .next = next, .input_nr = input_nr});
}
// A label (interned string id) shown for `node`: the leaf's name and shape.
inline void emit_node_label(uint64_t node, uint64_t label) noexcept {
  emit(ev::NodeLabel{.node = node, .label = static_cast<StringId>(label)});
}
inline void emit_node_released(uint64_t node) noexcept {
  emit(ev::NodeReleased{.node = node});
}

// A hook owner came to be; `from_snapshot` when it predates the recording.
inline void emit_owner_created(uint32_t owner, OwnerKind kind, uint64_t label,
                               bool from_snapshot = false) noexcept {
  emit(ev::OwnerCreated{.owner = owner, .owner_kind = kind, .label = static_cast<StringId>(label),
                        .from_snapshot = from_snapshot});
}
inline void emit_owner_destroyed(uint32_t owner) noexcept {
  emit(ev::OwnerDestroyed{.owner = owner});
}

// A hook of `kind` was added to `node` (0 for module hooks, Note [Module
// hooks in traces]) under `key` by `owner`; `input_nr` is the gradient a
// tensor pre hook sees (0 for other kinds).
inline void emit_hook_added(uint64_t node, uint64_t key, HookKind kind, uint32_t owner,
                            uint32_t input_nr = 0) noexcept {
  emit(ev::HookAdded{.node = node, .key = key, .owner = owner, .hook_kind = kind, .input_nr = input_nr});
}
// The hook is being called, now (emitted right before the call, and only
// for a call that happens: Note [Hook fire events]).
inline void emit_hook_fired(uint64_t node, uint64_t key, HookKind kind, uint32_t owner) noexcept {
  emit(ev::HookFired{.node = node, .key = key, .owner = owner, .hook_kind = kind});
}
// The hook was removed: `owner` owned it, `remover` asked, `cause` says why.
inline void emit_hook_removed(uint64_t node, uint64_t key, HookKind kind, uint32_t owner,
                              uint32_t remover, RemoveCause cause) noexcept {
  emit(ev::HookRemoved{
      .node = node, .key = key, .owner = owner, .hook_kind = kind, .remover = remover, .cause = cause});
}
// `remover` asked to remove `key`, which names no live hook of `kind` there.
inline void emit_hook_remove_failed(uint64_t node, uint64_t key, HookKind kind,
                                    uint32_t remover) noexcept {
  emit(ev::HookRemoveFailed{.node = node, .key = key, .hook_kind = kind, .remover = remover});
}

// A backward pass from `roots` roots begins; `grad_mode` for autograd::grad.
inline void emit_backward_begin(uint64_t roots, bool grad_mode) noexcept {
  emit(ev::BackwardBegin{.roots = roots, .grad = grad_mode});
}
// It ended after executing `executed` Functions; `completed` false when it threw.
inline void emit_backward_end(uint64_t executed, bool completed) noexcept {
  emit(ev::BackwardEnd{.ending = completed ? BackwardEnding::kCompleted : BackwardEnding::kThrew,
                       .executed = executed});
}
inline void emit_apply_begin(uint64_t node) noexcept { emit(ev::ApplyBegin{.node = node}); }
inline void emit_apply_end(uint64_t node) noexcept { emit(ev::ApplyEnd{.node = node}); }

// A saved_tensors_hooks pack (or unpack) hook of the context owned by `owner`
// is being called for saved slot `slot` of Function `node`.
inline void emit_saved_tensor_packed(uint64_t node, uint32_t slot, uint32_t owner) noexcept {
  emit(ev::SavedTensorPacked{.node = node, .slot = slot, .owner = owner});
}
inline void emit_saved_tensor_unpacked(uint64_t node, uint32_t slot, uint32_t owner) noexcept {
  emit(ev::SavedTensorUnpacked{.node = node, .slot = slot, .owner = owner});
}

}  // namespace hookscope::trace
