#pragma once
// Typed emitters for the DDP runtime and the scenarios: one function per
// event kind, whose parameters name its fields. The runtime calls these,
// never trace::emit with positional fields; the table (trace/event_table.h,
// Note [Typed events]) declares each field once, for writers and readers. Each is
// emit() inlined: free when nothing records (Note [Cost of emission]).

#include <cstdint>

#include "trace/emit.h"
#include "trace/event.h"

namespace hookscope::trace {

// ---- Reducer lifecycle (owner = the Reducer's owner id) ----
inline void emit_reducer_constructed(uint32_t owner, uint64_t num_params, uint32_t num_buckets) noexcept {
  emit(ev::ReducerConstructed{.owner = owner, .num_params = num_params, .num_buckets = num_buckets});
}
inline void emit_reducer_destroyed(uint32_t owner, DestroyPolicy policy, uint32_t hooks_removed) noexcept {
  emit(ev::ReducerDestroyed{.owner = owner, .policy = policy, .hooks_removed = hooks_removed});
}
inline void emit_prepare_for_backward(uint32_t owner, uint64_t backward_index) noexcept {
  emit(ev::PrepareForBackward{.owner = owner, .backward_index = backward_index});
}
inline void emit_buckets_finalized(uint32_t owner, uint64_t backward_index) noexcept {
  emit(ev::BucketsFinalized{.owner = owner, .backward_index = backward_index});
}

// ---- a Reducer's comm hook (Note [Comm hooks in traces]) ----
// The Reducer hands bucket `bucket_index` (`bytes` of gradients) to its comm
// hook `hook_key`, now. Added and removed through emit_hook_added/_removed
// (emitters_autograd.h) with node 0 and HookKind::kCommHook.
inline void emit_comm_hook_fired(uint32_t owner, uint64_t hook_key, uint32_t bucket_index,
                                 uint64_t bytes) noexcept {
  emit(ev::HookFired{
      .node = 0, .key = hook_key, .owner = owner, .hook_kind = HookKind::kCommHook, .bucket = bucket_index,
      .bytes = bytes});
}

// ---- a Reducer's autograd hook ----
// The Reducer's hook on `accumulate_grad` fired and it did nothing; `reason`
// says why (not prepared for this backward, inside no_sync, owner gone).
inline void emit_autograd_hook_noop(uint32_t owner, NoopReason reason, uint64_t accumulate_grad,
                                    uint64_t hook_key, uint64_t param_index) noexcept {
  emit(ev::AutogradHookNoop{
      .owner = owner, .reason = reason, .node = accumulate_grad, .key = hook_key, .param = param_index});
}
inline void emit_mark_ready(uint32_t owner, uint64_t accumulate_grad, uint64_t param_index,
                            uint32_t bucket_index) noexcept {
  emit(ev::MarkReady{.owner = owner, .node = accumulate_grad, .param = param_index, .bucket = bucket_index});
}
inline void emit_marked_twice(uint32_t owner, uint64_t accumulate_grad, uint64_t param_name_id,
                              uint32_t param_index) noexcept {
  emit(ev::MarkedTwice{.owner = owner,
                       .node = accumulate_grad,
                       .param_name = static_cast<StringId>(param_name_id),
                       .param = param_index});
}
// accumulate_grad: 0 when the parameter has none.
inline void emit_unused_parameter(uint32_t owner, uint64_t accumulate_grad, uint64_t param_name_id,
                                  uint32_t param_index) noexcept {
  emit(ev::UnusedParameter{.owner = owner,
                           .node = accumulate_grad,
                           .param_name = static_cast<StringId>(param_name_id),
                           .param = param_index});
}

// ---- buckets and collectives ----
inline void emit_bucket_ready(uint32_t owner, uint64_t collective_id, uint64_t bucket_index,
                              uint32_t num_params) noexcept {
  emit(ev::BucketReady{
      .owner = owner, .collective_id = collective_id, .bucket = bucket_index, .num_params = num_params});
}
// owner: 0 for a collective of no Reducer (DDP's initial broadcast).
inline void emit_collective_begin(uint32_t owner, CollectiveOp op, uint64_t collective_id,
                                  uint64_t bytes, uint32_t bucket_index) noexcept {
  emit(ev::CollectiveBegin{
      .owner = owner, .op = op, .collective_id = collective_id, .bytes = bytes, .bucket = bucket_index});
}
// duration_ns as the backend measured it; placement: Note [Collective placement].
inline void emit_collective_end(uint32_t owner, CollectiveStatus status, uint64_t collective_id,
                                uint64_t duration_ns, uint32_t placement) noexcept {
  emit(ev::CollectiveEnd{.owner = owner,
                         .status = status,
                         .collective_id = collective_id,
                         .duration_ns = duration_ns,
                         .placement = placement});
}

// ---- failures, recovery, process groups, training (the scenarios) ----
inline void emit_failure(FailureMode mode, uint32_t failed_rank, uint64_t description_id) noexcept {
  emit(ev::Failure{.mode = mode, .failed_rank = failed_rank, .description = static_cast<StringId>(description_id)});
}
inline void emit_recovery_step(RecoveryStep step, uint64_t description_id) noexcept {
  emit(ev::RecoveryStep{.step = step, .description = static_cast<StringId>(description_id)});
}
inline void emit_process_group_created(uint64_t group_id, uint64_t world_size, uint32_t generation) noexcept {
  emit(ev::ProcessGroupCreated{.group_id = group_id, .world_size = world_size, .generation = generation});
}
inline void emit_process_group_destroyed(uint64_t group_id, bool aborted) noexcept {
  emit(ev::ProcessGroupDestroyed{.group_id = group_id, .aborted = aborted});
}
// loss_bits: the loss as float bits.
inline void emit_train_step(uint64_t step, uint32_t loss_bits) noexcept {
  emit(ev::TrainStep{.step = step, .loss_bits = loss_bits});
}

}  // namespace hookscope::trace
