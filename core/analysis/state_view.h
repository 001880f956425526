#pragma once
// The state at one event without building all of it (seeks at scale): at a
// million live Functions Model::state_at() costs hundreds of ms, while a view
// on screen needs the few thousand Functions it shows. StateView answers per
// Function, in the time of that Function's hooks; StateWorker builds the
// whole State on a thread of its own for the panels that need all of it.
// See Note [Lazy state].

#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "analysis/state.h"

namespace hookscope::analysis {

// Note [Lazy state]
// ~~~~~~~~~~~~~~~~~
// Everything state_at() says about one Function is a function of the event
// index and that Function's own records (Note [Replay by intervals]): it is
// live right after event e iff created_at <= e < released_at; its hooks are
// its HookSegments (Model::segments_of, already in registration order) with
// from <= e < to, each with the fires of its hook up to e. So a seek needs no
// work at all until something asks, and then only for what it asks: moving
// the cursor anywhere costs O(1), drawing a region O(its Functions' hooks).
// What needs every live Function (totals, the inspector's lists) asks a
// StateWorker, which builds the whole State off the UI thread and hands it
// over only for the event it was asked for: a caller shows "pending" until
// then, never the state of another event.
class StateView {
 public:
  StateView() = default;
  // Throws std::out_of_range past the last event, as state_at() does.
  StateView(const Model& model, size_t index);
  size_t index() const { return index_; }
  const Model* model() const { return model_; }
  // O(1).
  bool live(FunctionIndex function) const;
  // What state_at(index()).find(function) holds: false (and `out` cleared)
  // when the Function is not live. O(segments of the Function).
  bool function_at(FunctionIndex function, FunctionAt& out) const;
  // The leaf's hooks that live on its tensor while `function` (the leaf's
  // last AccumulateGrad) is not live, as in State::tensor_hooks, in order.
  void tensor_hooks_of(FunctionIndex function, std::vector<HookAt>& out) const;

 private:
  const Model* model_ = nullptr;
  size_t index_ = 0;
};

// Builds Model::state_at() for the latest event asked, on its own thread.
class StateWorker {
 public:
  explicit StateWorker(const Model& model);
  ~StateWorker();
  StateWorker(const StateWorker&) = delete;
  StateWorker& operator=(const StateWorker&) = delete;

  // Asks for the state at `index` (the latest request wins; an index past
  // the last event is ignored). Returns at once.
  void request(size_t index);
  // The state at `index` once built, nullptr while pending: never the state
  // of another event.
  std::shared_ptr<const State> get(size_t index) const;
  // Blocks until the state at `index` is built (it must have been requested).
  std::shared_ptr<const State> wait(size_t index) const;
  // Hands over the latest state built, whatever its event (nullptr when
  // none), for the caller to keep or move from: the worker forgets it (get()
  // then says pending) and does not build it again unless asked again. A
  // caller that moved on can catch up from an older state by steps.
  std::shared_ptr<State> take();
  // Frees `state` on the worker's thread (a million live Functions' State
  // takes tens of ms to free). Returns at once.
  void discard(std::shared_ptr<State> state);

 private:
  void run();

  const Model& model_;
  mutable std::mutex mutex_;
  mutable std::condition_variable changed_;
  bool stop_ = false;
  bool wanted_set_ = false;
  size_t wanted_ = 0;
  std::shared_ptr<State> built_;
  std::vector<std::shared_ptr<State>> trash_;  // discard()ed, freed by run()
  std::thread thread_;
};

}  // namespace hookscope::analysis
