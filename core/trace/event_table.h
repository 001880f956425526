#pragma once
// The table of event kinds and their fields: the one home of what each field
// of an Event means. See Note [Typed events]. Included by trace/event.h only.

// Note [Typed events]
// ~~~~~~~~~~~~~~~~~~~
// Every event kind is one row of HOOKSCOPE_EVENT_KINDS (its C++ name, its
// value in the file, the name to_string gives, which is also the torch
// bridge's `_C.EV_<name>`), and one HOOKSCOPE_EVENT_FIELDS_<Name> list: each
// field's type, its name, the slot of the 48-byte record it lives in
// (node/key/arg/owner/actor/sub; Note [Event record]) and whether every
// writer must fill it (REQ: zero there is only ever a value, such as index
// 0 or an enum's first), must pass it though zero there may mean "none" in
// the cases the comment names, which readers handle (GIVEN: a hook's
// Function, 0 for a hook on no Function; Note [Hooks on no Function]), or
// may leave it zero, which says something true that the comment names
// (OPT). From the table trace/event.h makes one struct per kind
// (trace::ev::MarkReady, ...): readers take `e.as<ev::MarkReady>().param` (which stops the program when
// `e` is another kind: a switch on e.kind first), writers
// `emit(ev::MarkReady{...})` through the typed emitters (trace/emitters_*.h).
// Nothing outside core/trace reads or writes a slot by its raw name
// (tests/check_event_fields.py). The layout of the record
// and of the file does not change: a view is a copy of the slots it names,
// which the compiler folds away.
//
// To add a kind: a row below with the next free value (kCount bounds it), a
// fields list, a typed emitter, then the steps in docs/architecture.md
// ("an event kind": the minor format version, the analysis, the views).
// To add a field to a kind: a slot that kind leaves zero today, as OPT
// (older traces hold zero there), and say what zero means. The torch
// bridge's `_C.emit(...)` calls pass slots by name; tests/check_bridge_emits.py
// checks each call against this table (every REQ and GIVEN slot given, no
// slot the kind does not have), so a field one writer fills and another does
// not fails a test. A field's type may be an enum of trace/event.h, bool
// (written as 1), an unsigned integer no wider than its slot, or StringId (an
// interned string, only in `arg`: trace/strings.h; the reader checks those ids).
//
// Keep one field per line: tests/event_table_dump.cpp prints this table for
// the Python check, and the macros are the only reader of these lines.

#define HOOKSCOPE_EVENT_KINDS(X)                        \
  X(NodeCreated, 1, node_created)                       \
  X(NodeEdge, 2, node_edge)                             \
  X(NodeLabel, 3, node_label)                           \
  X(NodeReleased, 4, node_released)                     \
  X(OwnerCreated, 5, owner_created)                     \
  X(OwnerDestroyed, 6, owner_destroyed)                 \
  X(HookAdded, 7, hook_add)                             \
  X(HookFired, 8, hook_fire)                            \
  X(HookRemoved, 9, hook_remove)                        \
  X(HookRemoveFailed, 10, hook_remove_failed)           \
  X(BackwardBegin, 11, backward_begin)                  \
  X(BackwardEnd, 12, backward_end)                      \
  X(ApplyBegin, 13, apply_begin)                        \
  X(ApplyEnd, 14, apply_end)                            \
  X(SavedTensorPacked, 15, saved_tensor_packed)         \
  X(SavedTensorUnpacked, 16, saved_tensor_unpacked)     \
  X(ReducerConstructed, 32, reducer_constructed)        \
  X(ReducerDestroyed, 33, reducer_destroyed)            \
  X(PrepareForBackward, 34, prepare_for_backward)       \
  X(AutogradHookNoop, 35, autograd_hook_noop)           \
  X(MarkReady, 36, mark_ready)                          \
  X(MarkedTwice, 37, marked_twice)                      \
  X(UnusedParameter, 38, unused_parameter)              \
  X(BucketReady, 39, bucket_ready)                      \
  X(CollectiveBegin, 40, collective_begin)              \
  X(CollectiveEnd, 41, collective_end)                  \
  X(BucketsFinalized, 42, buckets_finalized)            \
  X(Failure, 43, failure)                               \
  X(RecoveryStep, 44, recovery_step)                    \
  X(ProcessGroupCreated, 45, process_group_created)     \
  X(ProcessGroupDestroyed, 46, process_group_destroyed) \
  X(TrainStep, 47, train_step)

// ---- graph ----
// A Function was created and wired.
#define HOOKSCOPE_EVENT_FIELDS_NodeCreated(REQ, OPT, GIVEN)                          \
  REQ(uint64_t, node, node)             /* its Function id */                        \
  REQ(StringId, name, arg)              /* its name */                               \
  OPT(uint8_t, flags, sub)              /* kNodeIsLeafAccumulator, or 0 */           \
  OPT(uint64_t, previous_accumulator, key) /* the AccumulateGrad of the same leaf it \
    replaces (Note [Leaf hooks live on the tensor]); 0: none */                      \
  OPT(uint32_t, sequence_nr, actor) /* PyTorch's sequence number + 1 in the torch    \
    bridge's traces (Note [Torch bridge node ids]); 0: none */
// `node`'s next edge leads to input `input_nr` of Function `next`.
#define HOOKSCOPE_EVENT_FIELDS_NodeEdge(REQ, OPT, GIVEN) \
  REQ(uint64_t, node, node)                              \
  REQ(uint64_t, next, arg)                               \
  OPT(uint32_t, input_nr, actor)
// What the views show for a Function: a leaf's parameter name and shape.
#define HOOKSCOPE_EVENT_FIELDS_NodeLabel(REQ, OPT, GIVEN) \
  REQ(uint64_t, node, node)                               \
  REQ(StringId, label, arg)
#define HOOKSCOPE_EVENT_FIELDS_NodeReleased(REQ, OPT, GIVEN) REQ(uint64_t, node, node)

// ---- hook owners and hooks ----
#define HOOKSCOPE_EVENT_FIELDS_OwnerCreated(REQ, OPT, GIVEN)                 \
  REQ(uint32_t, owner, owner)                                                \
  REQ(OwnerKind, owner_kind, sub)                                            \
  REQ(StringId, label, arg)                                                  \
  OPT(bool, from_snapshot, actor) /* it predates the recording (announced at \
    start); written as kOwnerFromSnapshot */
#define HOOKSCOPE_EVENT_FIELDS_OwnerDestroyed(REQ, OPT, GIVEN) REQ(uint32_t, owner, owner)
// Note [Hooks on no Function]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A hook event's `node` is the Function the hook is on, and zero where the
// hook is on none: a module hook's add, remove and forward (pre) fires (Note
// [Module hooks in traces]) and a comm hook's every event (Note [Comm hooks
// in traces]). trace::hook_on_no_function(event kind, hook kind) says which;
// tensor, Node and Reducer hooks always name their Function. So `node` is
// GIVEN: every writer passes it, and zero is true only for those.
#define HOOKSCOPE_EVENT_FIELDS_HookAdded(REQ, OPT, GIVEN)                                   \
  GIVEN(uint64_t, node, node) /* 0: on no Function (Note [Hooks on no Function]) */         \
  REQ(uint64_t, key, key)                                                                   \
  REQ(uint32_t, owner, owner)                                                               \
  REQ(HookKind, hook_kind, sub)                                                             \
  OPT(uint32_t, input_nr, arg) /* the gradient a tensor pre hook sees; 0 for other kinds */ \
  OPT(bool, from_snapshot, actor) /* it predates the recording (Note [Hooks present at start]) */
// Emitted right before the call (Note [Hook fire events]).
#define HOOKSCOPE_EVENT_FIELDS_HookFired(REQ, OPT, GIVEN)                                   \
  GIVEN(uint64_t, node, node) /* 0: on no Function (Note [Hooks on no Function]) */         \
  REQ(uint64_t, key, key)                                                                   \
  REQ(uint32_t, owner, owner)                                                               \
  REQ(HookKind, hook_kind, sub)                                                             \
  OPT(uint32_t, bucket, actor) /* a comm hook's bucket index (Note [Comm hooks in traces]); \
    0 for other kinds */                                                                    \
  OPT(uint64_t, bytes, arg) /* a comm hook's bucket size in bytes; 0 for other kinds */
#define HOOKSCOPE_EVENT_FIELDS_HookRemoved(REQ, OPT, GIVEN)                         \
  GIVEN(uint64_t, node, node) /* 0: on no Function (Note [Hooks on no Function]) */ \
  REQ(uint64_t, key, key)                                                           \
  REQ(uint32_t, owner, owner) /* the hook's owner */                                \
  REQ(HookKind, hook_kind, sub)                                                     \
  REQ(uint32_t, remover, actor) /* who removed it */                                \
  REQ(RemoveCause, cause, arg)
// `remover` asked to remove `key`, which names no live hook of `hook_kind` there.
#define HOOKSCOPE_EVENT_FIELDS_HookRemoveFailed(REQ, OPT, GIVEN)                    \
  GIVEN(uint64_t, node, node) /* 0: on no Function (Note [Hooks on no Function]) */ \
  REQ(uint64_t, key, key)                                                           \
  REQ(HookKind, hook_kind, sub)                                                     \
  REQ(uint32_t, remover, actor)

// ---- backward ----
#define HOOKSCOPE_EVENT_FIELDS_BackwardBegin(REQ, OPT, GIVEN) \
  REQ(uint64_t, roots, arg)                                   \
  OPT(bool, grad, sub) /* autograd::grad: no AccumulateGrad runs; 0: backward() */
#define HOOKSCOPE_EVENT_FIELDS_BackwardEnd(REQ, OPT, GIVEN) \
  REQ(BackwardEnding, ending, sub)                          \
  OPT(uint64_t, executed, arg) /* Functions executed; 0: not counted (torch bridge) */
#define HOOKSCOPE_EVENT_FIELDS_ApplyBegin(REQ, OPT, GIVEN) REQ(uint64_t, node, node)
#define HOOKSCOPE_EVENT_FIELDS_ApplyEnd(REQ, OPT, GIVEN) REQ(uint64_t, node, node)
// A saved_tensors_hooks pack (unpack) hook of the context `owner` owns is
// called for saved slot `slot` of Function `node` (format 1.1).
#define HOOKSCOPE_EVENT_FIELDS_SavedTensorPacked(REQ, OPT, GIVEN) \
  REQ(uint64_t, node, node)                                       \
  REQ(uint32_t, slot, arg)                                        \
  REQ(uint32_t, owner, owner)
#define HOOKSCOPE_EVENT_FIELDS_SavedTensorUnpacked(REQ, OPT, GIVEN) \
  REQ(uint64_t, node, node)                                         \
  REQ(uint32_t, slot, arg)                                          \
  REQ(uint32_t, owner, owner)

// ---- DDP (owner: the Reducer's owner id) ----
#define HOOKSCOPE_EVENT_FIELDS_ReducerConstructed(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                                      \
  REQ(uint64_t, num_params, arg)                                   \
  REQ(uint32_t, num_buckets, actor)
#define HOOKSCOPE_EVENT_FIELDS_ReducerDestroyed(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                                    \
  REQ(DestroyPolicy, policy, arg)                                \
  REQ(uint32_t, hooks_removed, actor)
#define HOOKSCOPE_EVENT_FIELDS_PrepareForBackward(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                                      \
  REQ(uint64_t, backward_index, arg)
// The Reducer's hook on AccumulateGrad `node` fired and it did nothing.
#define HOOKSCOPE_EVENT_FIELDS_AutogradHookNoop(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                                    \
  REQ(NoopReason, reason, sub)                                   \
  REQ(uint64_t, node, node)                                      \
  REQ(uint64_t, key, key)                                        \
  REQ(uint64_t, param, arg)
#define HOOKSCOPE_EVENT_FIELDS_MarkReady(REQ, OPT, GIVEN)                        \
  REQ(uint32_t, owner, owner)                                                    \
  REQ(uint64_t, node, node) /* the parameter's AccumulateGrad */                 \
  REQ(uint64_t, param, arg)                                                      \
  OPT(uint32_t, bucket, actor) /* kNoBucket where the writer cannot know it: the \
    torch bridge before DDP logs its bucket assignment (python/hookscope/_buckets.py) */
#define HOOKSCOPE_EVENT_FIELDS_MarkedTwice(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                               \
  REQ(uint64_t, node, node)                                 \
  REQ(StringId, param_name, arg)                            \
  REQ(uint32_t, param, actor)
#define HOOKSCOPE_EVENT_FIELDS_UnusedParameter(REQ, OPT, GIVEN)          \
  REQ(uint32_t, owner, owner)                                            \
  OPT(uint64_t, node, node) /* 0: the parameter has no AccumulateGrad */ \
  REQ(StringId, param_name, arg)                                         \
  REQ(uint32_t, param, actor)
#define HOOKSCOPE_EVENT_FIELDS_BucketReady(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                               \
  REQ(uint64_t, collective_id, key)                         \
  REQ(uint64_t, bucket, arg)                                \
  REQ(uint32_t, num_params, actor)
#define HOOKSCOPE_EVENT_FIELDS_CollectiveBegin(REQ, OPT, GIVEN)               \
  OPT(uint32_t, owner, owner) /* 0: no Reducer's (DDP's initial broadcast) */ \
  REQ(CollectiveOp, op, sub)                                                  \
  REQ(uint64_t, collective_id, key)                                           \
  REQ(uint64_t, bytes, arg)                                                   \
  REQ(uint32_t, bucket, actor) /* kNoBucket: none */
#define HOOKSCOPE_EVENT_FIELDS_CollectiveEnd(REQ, OPT, GIVEN)      \
  OPT(uint32_t, owner, owner)                                      \
  REQ(CollectiveStatus, status, sub)                               \
  REQ(uint64_t, collective_id, key)                                \
  REQ(uint64_t, duration_ns, arg) /* as the backend measured it */ \
  OPT(uint32_t, placement, actor) /* Note [Collective placement]; 0: host memory */
// All buckets reduced and the averaged gradients written back.
#define HOOKSCOPE_EVENT_FIELDS_BucketsFinalized(REQ, OPT, GIVEN) \
  REQ(uint32_t, owner, owner)                                    \
  REQ(uint64_t, backward_index, arg)

// ---- failures, recovery, process groups, training ----
#define HOOKSCOPE_EVENT_FIELDS_Failure(REQ, OPT, GIVEN) \
  REQ(FailureMode, mode, sub)                           \
  REQ(uint32_t, failed_rank, actor)                     \
  REQ(StringId, description, arg)
#define HOOKSCOPE_EVENT_FIELDS_RecoveryStep(REQ, OPT, GIVEN) \
  REQ(trace::RecoveryStep, step, sub)                        \
  OPT(StringId, description, arg)
#define HOOKSCOPE_EVENT_FIELDS_ProcessGroupCreated(REQ, OPT, GIVEN) \
  REQ(uint64_t, group_id, key)                                      \
  REQ(uint64_t, world_size, arg)                                    \
  REQ(uint32_t, generation, actor)
#define HOOKSCOPE_EVENT_FIELDS_ProcessGroupDestroyed(REQ, OPT, GIVEN) \
  REQ(uint64_t, group_id, key)                                        \
  OPT(bool, aborted, sub)
#define HOOKSCOPE_EVENT_FIELDS_TrainStep(REQ, OPT, GIVEN) \
  REQ(uint64_t, step, arg)                                \
  REQ(uint32_t, loss_bits, key) /* the loss as float bits */
