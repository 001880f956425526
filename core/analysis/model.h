#pragma once
// The analysis model, hookscope's "Tracy Worker": one or several traces (one
// per rank/process) loaded onto one timeline and indexed so that the state
// at any event (analysis/state.h), the diagnostics (analysis/diagnostics.h),
// diffs and statistics are cheap. No GUI code: the CLI and the GUI share it.
// See Note [Analysis ids] and Note [Replay by intervals].

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/interval_index.h"
#include "trace/event.h"
#include "trace/file_format.h"
#include "trace/trace_data.h"

namespace hookscope::analysis {

// Note [Analysis ids]
// ~~~~~~~~~~~~~~~~~~~
// Node ids, hook keys and owner ids are unique only within one process, so
// two traces may both name "Function 7". The model never keys anything by a
// raw id: every Function, hook, owner and Reducer gets a dense index into the
// model's tables (FunctionIndex, HookIndex, ...), and the raw id and the
// trace it came from (`source`, the position in the vector given to the
// Model) are kept in the record. find_function(source, id) etc. go the other
// way. A raw id reused within one trace (an id seen again after its Function
// was released) gets a new index. String ids are remapped into the model's
// own table (Model::str). A rank is an attribute (header.rank when >= 0,
// else the event's `rank`), not part of any key: ranks run as threads of one
// process share one id space.
//
// Things referenced but never announced (a Function created before the
// recording started, an owner or hook key never seen) are created on first
// reference as existing since event 0, with `announced` false; their names
// read "unknown Function #id", "owner #id".

// The typed views of events (Note [Typed events]): e.as<ev::MarkReady>().param.
namespace ev = trace::ev;

using EventIndex = uint32_t;  // position in the merged timeline
using FunctionIndex = uint32_t;
using HookIndex = uint32_t;
using OwnerIndex = uint32_t;
using ReducerIndex = uint32_t;
constexpr uint32_t kNoIndex = UINT32_MAX;

struct FunctionInfo {
  uint64_t id = 0;       // the raw node id in its trace
  uint32_t source = 0;   // which trace
  uint16_t rank = 0;
  uint8_t flags = 0;     // kNodeCreated's sub (trace::kNodeIsLeafAccumulator)
  bool announced = true;
  uint32_t name = 0;     // model string ids
  uint32_t label = 0;
  EventIndex created_at = 0;
  EventIndex released_at = kNever;
  // The same leaf's previous and next AccumulateGrad (Note [Leaf hooks live on the tensor]).
  FunctionIndex previous = kNoIndex;
  FunctionIndex next = kNoIndex;
  uint32_t edges_begin = 0;  // next edges: Model::edges()[edges_begin, edges_end)
  uint32_t edges_end = 0;
  bool is_leaf_accumulator() const { return flags & trace::kNodeIsLeafAccumulator; }
};

struct EdgeInfo {
  FunctionIndex from = kNoIndex;
  FunctionIndex to = kNoIndex;
  uint32_t input_nr = 0;
  EventIndex at = 0;  // its kNodeEdge
};

struct OwnerInfo {
  uint32_t id = 0;  // raw owner id
  uint32_t source = 0;
  uint16_t rank = 0;
  trace::OwnerKind kind = trace::OwnerKind::kUser;
  bool announced = true;
  uint32_t label = 0;
  EventIndex created_at = 0;
  // The first of kOwnerDestroyed and, for a Reducer's owner, kReducerDestroyed.
  EventIndex destroyed_at = kNever;
  // Note [Lingering owners] (analysis/owner_status.h): a Reducer's owner
  // replaced while alive, at the first prepare of the newer Reducer that
  // took over its parameters (kNever: never, or destroyed first), and that
  // Reducer's owner.
  EventIndex replaced_at = kNever;
  OwnerIndex replaced_by = kNoIndex;
};

struct HookInfo {
  uint64_t key = 0;
  uint32_t source = 0;
  uint16_t rank = 0;
  trace::HookKind kind = trace::HookKind::kPost;
  bool announced = true;
  OwnerIndex owner = kNoIndex;
  uint32_t input_nr = 0;
  FunctionIndex function = kNoIndex;  // where it was added
  EventIndex added_at = 0;
  EventIndex ended_at = kNever;       // kNever: still attached at the end
  trace::RemoveCause cause = trace::RemoveCause::kByKey;
  OwnerIndex removed_by = kNoIndex;   // the remover (actor), when one was recorded
  bool implicit_end = false;          // dropped with its Function, no kHookRemoved
  uint32_t fires_begin = 0;           // Model::fires(hook)
  uint32_t fires_end = 0;
};

// Where a hook lives for a while: on a Function, or (a leaf's tensor pre and
// post-accumulate hooks while the leaf has no AccumulateGrad) on the tensor,
// `function` then naming the leaf's last AccumulateGrad.
struct HookSegment {
  HookIndex hook = kNoIndex;
  FunctionIndex function = kNoIndex;
  EventIndex from = 0;
  EventIndex to = kNever;
  bool on_tensor = false;
};

struct ParameterInfo {
  FunctionIndex accumulator = kNoIndex;  // the last AccumulateGrad seen for it
  uint32_t name = 0;                     // from kMarkedTwice / kUnusedParameter
  uint32_t bucket = kNoIndex;            // from kMarkReady
};

struct ReducerInfo {
  OwnerIndex owner = kNoIndex;
  uint32_t source = 0;
  uint16_t rank = 0;
  EventIndex constructed_at = 0;
  EventIndex destroyed_at = kNever;
  uint32_t num_parameters = 0;
  uint32_t num_buckets = 0;
  trace::DestroyPolicy policy = trace::DestroyPolicy::kByKey;
  uint32_t hooks_removed = 0;  // as the Reducer reported it
  std::vector<ParameterInfo> parameters;
  std::vector<uint32_t> bucket_sizes;
  std::vector<EventIndex> prepares;  // kPrepareForBackward, in order
  // Each prepare's backward index (its event's arg), by the prepare's place
  // in `prepares`: replay reads it without decoding the event (Note [Reducers
  // in a step]).
  std::vector<uint64_t> prepare_backwards;
  std::vector<EventIndex> events;    // every event naming this Reducer, in order
};

struct CollectiveInfo {
  uint64_t id = 0;  // the collective id (kCollectiveBegin key)
  uint32_t source = 0;
  uint16_t rank = 0;
  ReducerIndex reducer = kNoIndex;
  uint32_t bucket = kNoIndex;
  EventIndex begin_at = kNever;
  EventIndex end_at = kNever;
  trace::CollectiveStatus status = trace::CollectiveStatus::kOk;
};

// Note [Malformed traces]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A well-formed file (checksums fine) can still describe things that cannot
// happen. The load pass never trusts it: every loop is bounded, every id is
// looked up (never used as a size), and what cannot be true is recorded as a
// Malformation (the event that proves it, and a related earlier one) instead
// of being acted on. diagnose() reports them as `malformed_trace` findings,
// one per kind (docs/trace-format.md, "What analysis refuses to believe"):
//  * unknown_event_kind: an event kind this hookscope does not define.
//  * bad_value: a field outside its range (hook kind, owner kind, removal
//    cause, status, ...) or a parameter/bucket index past what the trace can
//    hold (Note [Model memory bound]).
//  * unknown_hook: a hook fired or removed whose key was never added, on a
//    Function created (or by an owner created) during the recording, so the
//    hook cannot predate it.
//  * duplicate_creation: a Function, hook key or owner created again while
//    the first is alive.
//  * removed_twice: kHookRemoved for a key already removed (a second removal
//    is recorded as kHookRemoveFailed by the runtime).
//  * time_backwards: a thread's timestamps decrease.
//  * rank_out_of_range: a rank >= the header's world size.
//  * edge_cycle: next-edges of live Functions form a cycle.
//  * leaf_link: a kNodeCreated names a previous AccumulateGrad that already
//    has a successor, or one that would close a loop.
//  * unbalanced_backward: a backward or apply end without its begin.
//  * unbalanced_collective: a collective ended without a begin, or begun or
//    ended twice.
// A hook fired after its own removal is NOT malformed: PyTorch snapshots hook
// lists (Note [Module hooks in traces]); it is a stale_fire finding (info).
enum class MalformedKind : uint8_t {
  kUnknownEventKind = 0,
  kBadValue,
  kUnknownHook,
  kDuplicateCreation,
  kRemovedTwice,
  kTimeBackwards,
  kRankOutOfRange,
  kEdgeCycle,
  kLeafLink,
  kUnbalancedBackward,
  kUnbalancedCollective,
};
constexpr int kNumMalformedKinds = 11;
std::string_view to_string(MalformedKind kind);  // "unknown_event_kind", ...

struct Malformation {
  MalformedKind kind = MalformedKind::kBadValue;
  EventIndex at = 0;             // the event that cannot be true
  EventIndex related = kNever;   // an earlier event it contradicts, if any
  const char* what = "";         // static text: which field or what happened
};

// Note [Model memory bound]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Besides the events themselves (packed, at most 82 bytes per event for the
// wildest values: Note [Packed events]), the model's tables
// grow by at most a constant per event: each event adds at most one Function,
// hook, segment per hook it moves, owner, edge, collective, malformation and
// index entry. Ids from the file are never used as sizes; parameter and
// bucket indices (the only dense tables keyed by a file value) share a budget
// of 4 slots per event (+ 4096). Measured (tests/core/analysis/test_hostile_traces.cpp):
// model memory_bytes() <= 1 KiB per event on every crafted trace.

struct ModelOptions {
  // Note [Replay by intervals]: a checkpoint is taken after at least this
  // many events, and only once the events since the last one would pay for
  // its size at `checkpoint_bytes_per_event`, so checkpoints never take more
  // than that many bytes per event of the trace.
  uint32_t checkpoint_min_events = 4096;
  double checkpoint_bytes_per_event = 2.0;
  // Threads the load pass may use (Note [Finishing on two threads]): 1 keeps
  // it all on the caller's thread; more than 2 use 2.
  uint32_t threads = 2;
};

struct State;

// Whether an event of `kind` names a string id in `arg` (Note [Event record]);
// one definition, in trace/file_format.h, shared with the reader.
using trace::event_arg_is_string;

// A loaded model never changes: its const methods may run on several threads
// at once (a GUI frame and a background diagnose, say).
class Model {
 public:
  // Loads traces (one per rank/process) onto one timeline, taking them over.
  // Throws std::invalid_argument for an input that cannot be analysed.
  explicit Model(std::vector<trace::TraceData> traces, ModelOptions options = {});
  explicit Model(trace::TraceData trace, ModelOptions options = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  // ---- timeline ----
  size_t num_events() const { return num_events_; }
  size_t num_traces() const { return traces_.size(); }
  // A loaded trace's header, strings and reader notes; its events are in
  // trace(s).packed (Note [Packed events]), never in trace(s).events.
  const trace::TraceData& trace(size_t source) const { return traces_.at(source); }
  // The event at `index`, with its string ids (arg) remapped into str() and
  // its rank resolved.
  trace::Event event(size_t index) const;
  // event(i) for every i in [begin, end), into out[0..): a block of the
  // packed events decoded at a time, much faster than event(i) per event
  // for walks over many events; times[k] = time_ns(begin + k) when given.
  // Only `fields` (trace::PackedEvents::kTime | kKind ...) need be decoded;
  // the others may be left 0 (kArg brings kKind, `times` kTime).
  void events(size_t begin, size_t end, trace::Event* out, int64_t* times = nullptr,
              uint32_t fields = trace::PackedEvents::kAllFields) const;
  uint32_t source(size_t index) const;
  const std::string& str(uint32_t id) const;
  // Time of an event on the common clock (ns; Note [Merging traces] in model_build.cpp).
  int64_t time_ns(size_t index) const;
  // Indices of events of `kind`, for kHookRemoveFailed and every later kind
  // but apply; empty for the bulk ones (Function, owner and hook lifecycle).
  const std::vector<EventIndex>& events_of_kind(trace::EventKind kind) const;

  // ---- tables (Note [Analysis ids]) ----
  const std::vector<FunctionInfo>& functions() const { return functions_; }
  const std::vector<EdgeInfo>& edges() const { return edges_; }
  const std::vector<HookInfo>& hooks() const { return hooks_; }
  const std::vector<HookSegment>& segments() const { return segments_; }
  const std::vector<OwnerInfo>& owners() const { return owners_; }
  const std::vector<ReducerInfo>& reducers() const { return reducers_; }
  const std::vector<CollectiveInfo>& collectives() const { return collectives_; }
  // What the traces claim that cannot be true (Note [Malformed traces]), by event.
  const std::vector<Malformation>& malformations() const { return malformations_; }
  // Hooks not on any Function (module hooks, Note [Module hooks in traces]), by HookIndex.
  const std::vector<HookIndex>& detached_hooks() const { return detached_hooks_; }
  // Indices of the events where `hook` fired, ascending.
  std::span<const EventIndex> fires(HookIndex hook) const;
  // The hook that fired at event `index` (a kHookFired), kNoIndex for other
  // events. Not find_hook(): a key added again names a newer hook.
  HookIndex hook_fired_at(size_t index) const;
  // Fires of `hook` up to and including event `index`.
  uint32_t fires_until(HookIndex hook, size_t index) const;
  // Segments (indices into segments()) that ever put a hook on `function`,
  // ordered by start, then by hook (registration order).
  std::span<const uint32_t> segments_of(FunctionIndex function) const;

  FunctionIndex find_function(uint32_t source, uint64_t id) const;  // the latest with that id
  HookIndex find_hook(uint32_t source, uint64_t key) const;
  OwnerIndex find_owner(uint32_t source, uint32_t id) const;
  ReducerIndex reducer_of(OwnerIndex owner) const;
  uint32_t find_collective(uint32_t source, uint16_t rank, uint64_t id) const;

  // "AccumulateGrad (0.weight [256, 784])", "unknown Function #12".
  std::string function_name(FunctionIndex function) const;
  // "Reducer 2", "owner #5" when unlabelled.
  std::string owner_name(OwnerIndex owner) const;
  // One line a person reads: "#12 r0 hook_fire post key 7 on ... by ...".
  std::string describe(size_t index) const;

  // ---- replay (analysis/state.h) ----
  State state_at(size_t index) const;
  size_t num_checkpoints() const { return block_starts_.size(); }
  size_t checkpoint_bytes() const;
  // Everything the model holds besides the events themselves (not included:
  // see event_bytes()).
  size_t memory_bytes() const;
  // The events, kept packed (Note [Packed events]): bytes of all traces'
  // packed stores.
  size_t event_bytes() const;

 private:
  friend class ModelBuilder;
  friend class Cursor;
  void check_index(size_t index, const char* what) const;

  std::vector<trace::TraceData> traces_;
  ModelOptions options_;
  size_t num_events_ = 0;
  // Merged order, (source << 40 | index in source); empty with a single trace.
  std::vector<uint64_t> order_;
  std::vector<int64_t> clock_offset_;  // per source, added to t_ns
  std::vector<std::vector<uint32_t>> string_map_;  // per source: trace id -> model id
  std::vector<std::string> strings_;
  uint32_t unknown_string_ = 0;  // id of "?"
  std::vector<std::vector<EventIndex>> kind_events_;

  std::vector<FunctionInfo> functions_;
  std::vector<EdgeInfo> edges_;
  std::vector<HookInfo> hooks_;
  std::vector<HookSegment> segments_;
  std::vector<OwnerInfo> owners_;
  std::vector<ReducerInfo> reducers_;
  std::vector<CollectiveInfo> collectives_;
  std::vector<Malformation> malformations_;
  std::vector<HookIndex> detached_hooks_;
  std::vector<EventIndex> fires_;                // CSR, see HookInfo::fires_begin
  // Note [Fires by event]
  // ~~~~~~~~~~~~~~~~~~~~~~
  // hook_fired_at() needs, for a kHookFired event, its place among all fires:
  // a bit per event (set for fires) with the count of fires before every
  // kFireRankWords words, so a place is one count plus a few popcounts in one
  // cache line. 0.13 bytes per event, where a list of the fires' events took
  // 4 bytes per fire.
  static constexpr size_t kFireRankWords = 8;
  std::vector<uint64_t> fire_bits_;
  std::vector<uint32_t> fire_rank_;              // fires before word w * kFireRankWords
  std::vector<HookIndex> fire_hook_;             // every fire's hook, in timeline order
  std::vector<uint32_t> segments_by_function_;   // CSR values
  std::vector<uint32_t> segments_by_function_begin_;

  // find_*()'s tables: indices of functions_, hooks_, owners_, collectives_
  // sorted by their (source, id), the latest record for each id.
  std::vector<uint32_t> function_lookup_, hook_lookup_, owner_lookup_, collective_lookup_;
  std::vector<ReducerIndex> reducer_of_owner_;

  std::vector<EventIndex> block_starts_;
  IntervalIndex live_functions_;  // over functions_
  IntervalIndex live_segments_;   // over segments_
};

}  // namespace hookscope::analysis
