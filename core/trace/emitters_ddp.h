#pragma once
// Typed emitters for the DDP runtime and the scenarios: one function per
// event kind, whose parameters name what each field of the Event holds. The
// runtime calls these, never trace::emit with positional fields; EventKind's
// comments (trace/event.h) say the same for readers of traces. Each is
// emit() inlined: free when nothing records (Note [Cost of emission]).

#include <cstdint>

#include "trace/emit.h"
#include "trace/event.h"

namespace hookscope::trace {

// The bucket index of a collective that belongs to no bucket (a broadcast).
constexpr uint32_t kNoBucket = UINT32_MAX;

// ---- Reducer lifecycle (owner = the Reducer's owner id) ----
inline void emit_reducer_constructed(uint32_t owner, uint64_t num_params, uint32_t num_buckets) noexcept {
  emit(EventKind::kReducerConstructed, 0, 0, 0, num_params, owner, num_buckets);
}
inline void emit_reducer_destroyed(uint32_t owner, DestroyPolicy policy, uint32_t hooks_removed) noexcept {
  emit(EventKind::kReducerDestroyed, 0, 0, 0, static_cast<uint64_t>(policy), owner, hooks_removed);
}
inline void emit_prepare_for_backward(uint32_t owner, uint64_t backward_index) noexcept {
  emit(EventKind::kPrepareForBackward, 0, 0, 0, backward_index, owner);
}
inline void emit_buckets_finalized(uint32_t owner, uint64_t backward_index) noexcept {
  emit(EventKind::kBucketsFinalized, 0, 0, 0, backward_index, owner);
}

// ---- a Reducer's autograd hook ----
// The Reducer's hook on `accumulate_grad` fired and it did nothing; `reason`
// says why (not prepared for this backward, inside no_sync, owner gone).
inline void emit_autograd_hook_noop(uint32_t owner, NoopReason reason, uint64_t accumulate_grad,
                                    uint64_t hook_key, uint64_t param_index) noexcept {
  emit(EventKind::kAutogradHookNoop, static_cast<uint8_t>(reason), accumulate_grad, hook_key, param_index, owner);
}
inline void emit_mark_ready(uint32_t owner, uint64_t accumulate_grad, uint64_t param_index,
                            uint32_t bucket_index) noexcept {
  emit(EventKind::kMarkReady, 0, accumulate_grad, 0, param_index, owner, bucket_index);
}
inline void emit_marked_twice(uint32_t owner, uint64_t accumulate_grad, uint64_t param_name_id,
                              uint32_t param_index) noexcept {
  emit(EventKind::kMarkedTwice, 0, accumulate_grad, 0, param_name_id, owner, param_index);
}
// accumulate_grad: 0 when the parameter has none.
inline void emit_unused_parameter(uint32_t owner, uint64_t accumulate_grad, uint64_t param_name_id,
                                  uint32_t param_index) noexcept {
  emit(EventKind::kUnusedParameter, 0, accumulate_grad, 0, param_name_id, owner, param_index);
}

// ---- buckets and collectives ----
inline void emit_bucket_ready(uint32_t owner, uint64_t collective_id, uint64_t bucket_index,
                              uint32_t num_params) noexcept {
  emit(EventKind::kBucketReady, 0, 0, collective_id, bucket_index, owner, num_params);
}
// owner: 0 for a collective of no Reducer (DDP's initial broadcast).
inline void emit_collective_begin(uint32_t owner, CollectiveOp op, uint64_t collective_id,
                                  uint64_t bytes, uint32_t bucket_index) noexcept {
  emit(EventKind::kCollectiveBegin, static_cast<uint8_t>(op), 0, collective_id, bytes, owner,
       bucket_index);
}
// duration_ns as the backend measured it; placement: Note [Collective placement].
inline void emit_collective_end(uint32_t owner, CollectiveStatus status, uint64_t collective_id,
                                uint64_t duration_ns, uint32_t placement) noexcept {
  emit(EventKind::kCollectiveEnd, static_cast<uint8_t>(status), 0, collective_id, duration_ns, owner,
       placement);
}

// ---- failures, recovery, process groups, training (the scenarios) ----
inline void emit_failure(FailureMode mode, uint32_t failed_rank, uint64_t description_id) noexcept {
  emit(EventKind::kFailure, static_cast<uint8_t>(mode), 0, 0, description_id, 0, failed_rank);
}
inline void emit_recovery_step(RecoveryStep step, uint64_t description_id) noexcept {
  emit(EventKind::kRecoveryStep, static_cast<uint8_t>(step), 0, 0, description_id);
}
inline void emit_process_group_created(uint64_t group_id, uint64_t world_size, uint32_t generation) noexcept {
  emit(EventKind::kProcessGroupCreated, 0, 0, group_id, world_size, 0, generation);
}
inline void emit_process_group_destroyed(uint64_t group_id, bool aborted) noexcept {
  emit(EventKind::kProcessGroupDestroyed, aborted ? 1 : 0, 0, group_id);
}
// loss_bits: the loss as float bits.
inline void emit_train_step(uint64_t step, uint32_t loss_bits) noexcept {
  emit(EventKind::kTrainStep, 0, 0, loss_bits, step);
}

}  // namespace hookscope::trace
