#pragma once
// The state of everything the traces describe right after one event:
// Model::state_at() to jump anywhere, Cursor to step one event at a time.
// See Note [Replay by intervals].

#include <array>
#include <cstdint>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

struct HookAt {
  HookIndex hook = kNoIndex;
  FunctionIndex function = kNoIndex;  // for tensor_hooks: the leaf's last AccumulateGrad
  uint32_t fires = 0;                 // fires so far, across re-created AccumulateGrads
  EventIndex since = 0;               // on this Function since (its segment's start)
  friend bool operator==(const HookAt&, const HookAt&) = default;
};

struct FunctionAt {
  FunctionIndex function = kNoIndex;
  // Per trace::HookKind, in firing (registration) order.
  std::array<std::vector<HookAt>, trace::kNumHookKinds> hooks;
  size_t num_hooks() const;
  friend bool operator==(const FunctionAt&, const FunctionAt&) = default;
};

struct OwnerAt {
  OwnerIndex owner = kNoIndex;
  bool live = true;        // not destroyed yet
  uint32_t hooks = 0;      // hooks it owns that are attached (on a Function or a tensor)
  friend bool operator==(const OwnerAt&, const OwnerAt&) = default;
};

enum class BucketStatus : uint8_t {
  kPending = 0,   // waiting for gradients
  kReady = 1,     // every gradient in, collective not finished
  kReduced = 2,   // collective finished
  kFailed = 3,    // collective ended with an error, timeout or abort
};

struct BucketAt {
  uint32_t index = 0;
  uint32_t size = 0;     // parameters in the bucket
  uint32_t pending = 0;  // of them not yet marked ready in this backward
  BucketStatus status = BucketStatus::kPending;
  friend bool operator==(const BucketAt&, const BucketAt&) = default;
};

// A Reducer's progress in its current backward. A destroyed Reducer has none:
// only `backward` (its last) is kept.
struct ReducerAt {
  ReducerIndex reducer = kNoIndex;
  bool live = true;
  int64_t backward = -1;        // backward index of the last prepare_for_backward, -1: none
  bool finalized = false;       // that backward's buckets were all reduced and written back
  uint32_t noops = 0;           // its hooks fired without a prepared backward, in this backward
  std::vector<uint32_t> ready_order;  // parameter indices, in the order marked ready
  std::vector<BucketAt> buckets;
  friend bool operator==(const ReducerAt&, const ReducerAt&) = default;
};

struct State {
  size_t index = 0;                      // right after this event
  std::vector<FunctionAt> functions;     // live Functions, by FunctionIndex
  // A leaf's tensor pre and post-accumulate hooks while it has no
  // AccumulateGrad (Note [Leaf hooks live on the tensor]), by since then hook.
  std::vector<HookAt> tensor_hooks;
  // Hooks on no Function (module hooks, Note [Module hooks in traces]),
  // attached right after this event, by since then hook; `function` is kNoIndex.
  std::vector<HookAt> module_hooks;
  std::vector<OwnerAt> owners;           // created so far and live or still holding hooks
  std::vector<ReducerAt> reducers;       // constructed so far
  const FunctionAt* find(FunctionIndex function) const;
  size_t num_hooks() const;
  friend bool operator==(const State&, const State&) = default;
};

// Steps through a model one event at a time; each step costs about the
// number of things that event changes, not a seek. seek() to a near event
// steps there (Note [Seeking by steps]).
class Cursor {
 public:
  explicit Cursor(const Model& model, size_t index = 0);
  size_t index() const { return state_.index; }
  const State& state() const { return state_; }
  void seek(size_t index);  // throws std::out_of_range past the last event
  bool next();  // false (and no move) at the last event
  bool prev();  // false (and no move) at event 0
  // Whether seek(index) would step there rather than call state_at()
  // (Note [Seeking by steps]).
  bool steps_to(size_t index) const;
  // Moves to `state`, which must be this model's state_at(state.index) built
  // elsewhere (a StateWorker, Note [Lazy state]); costs the model's hooks.
  // The state it had is left in `state`, for the caller to free.
  void adopt(State&& state);
  // The same with count_owner_hooks(model, state) counted elsewhere: O(1).
  void adopt(State&& state, std::vector<uint32_t>&& owner_hooks);
  // Per owner of `model`, its hooks attached in `state` (what a Cursor keeps).
  static std::vector<uint32_t> count_owner_hooks(const Model& model, const State& state);

 private:
  // What the events stepped over change besides Functions and hooks.
  struct Changes {
    bool module_hooks = false, owners = false, reducers = false;
  };
  // seek() steps when the move is at most 256 events + one per this many
  // live Functions (Note [Seeking by steps]: a hook fire's step costs ~0.7 µs,
  // state_at at 20k Functions ~5 ms of CPU, bench_playback).
  static constexpr size_t kLiveFunctionsPerSeekStep = 4;
  size_t step_budget() const;
  bool forward_one(Changes& changes);
  bool back_one(Changes& changes);
  void note_changes(EventIndex event, bool hooks_changed, Changes& changes) const;
  void apply_changes(const Changes& changes);
  void insert_hook(uint32_t segment, EventIndex at);
  void erase_hook(uint32_t segment);
  void insert_function(FunctionIndex f);
  void erase_function(FunctionIndex f);
  void refresh_fires(EventIndex event, EventIndex at);
  FunctionAt* find_mut(FunctionIndex f);
  void recount_owner_hooks();

  const Model* model_;
  State state_;
  std::vector<uint32_t> owner_hooks_;  // per owner: attached hooks now
  std::vector<EventIndex> module_hook_changes_;  // events where a module hook comes or goes, sorted
};

}  // namespace hookscope::analysis
