#pragma once
// What the user is looking at, without any GUI: the open model, the current
// event every panel follows, the selection, bookmarks, stepping by kind and
// by Reducer lifecycle, and playback. The App draws it; tests drive it
// directly (tests/app/test_session.cpp).

#include <array>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"

namespace hookscope::app {

// Note [Reducer lifecycle events]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// PgUp/PgDn walk the moments of the PR #21591 story: a Reducer constructed,
// a failure, a Reducer destroyed, DDP rebuilt after a failure (the recovery
// step kDdpRebuilt). Other recovery steps (group destroyed/formed, resumed)
// are left out: they are between those and would only add key presses.
bool is_lifecycle_event(const trace::Event& e);

// Note [Lazy seeks in the GUI]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Above kLazyStateFunctions Functions a far seek (one the Cursor would not
// step, Note [Seeking by steps]) costs state_at(), ~380 ms at 1M live
// Functions: too long for the UI thread. There the Session moves the current
// event at once, keeps a StateView for it (O(1), Note [Lazy state]) and asks
// a StateWorker for the full State; until poll() finds it built,
// full_state() is nullptr and a panel that needs it says "computing the
// state at #N..." (state_pending() in panel_common.h), never the old event's
// content. Near moves step the Cursor as before. Below the threshold (every
// sample, every GUI test but the one that lowers it) nothing changes: a seek
// is synchronous and full_state() is never nullptr while a trace is open.
// The UI thread steps at most kLazyStepEvents there (~0.7 us each); farther
// waits for the worker, and catches up from an older built state by steps.
constexpr size_t kLazyStateFunctions = 200000;
constexpr size_t kLazyStepEvents = 4096;

class Session {
 public:
  Session();
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  static constexpr size_t kMaxBookmarks = 9;  // Ctrl+1..9

  // A new model (nullptr: nothing open). `keep_position`: a grown live
  // model or a reload, keeping the current event (and following the end if
  // it was at the end); otherwise the current event goes to `at` (clamped),
  // selection and bookmarks are cleared.
  void set_model(std::shared_ptr<const analysis::Model> model, bool keep_position = false,
                 size_t at = 0);
  const analysis::Model* model() const { return model_.get(); }
  const std::shared_ptr<const analysis::Model>& shared_model() const { return model_; }
  bool empty() const { return !model_ || model_->num_events() == 0; }
  size_t num_events() const { return model_ ? model_->num_events() : 0; }

  // ---- the current event ----
  size_t current() const { return pending_ ? *pending_ : cursor_ ? cursor_->index() : 0; }
  // State right after the current event; an empty State when nothing is open.
  // While the full state is pending (Note [Lazy seeks in the GUI]) an empty
  // State at the current index: use full_state() where that matters.
  const analysis::State& state() const;
  // The full State right after the current event; nullptr while it is being
  // built off the UI thread (only above the lazy threshold). Never the State
  // of another event.
  const analysis::State* full_state() const;
  bool state_pending() const { return pending_.has_value(); }
  bool lazy() const { return worker_ != nullptr; }  // above the threshold
  // The current event's state per Function, O(1) to make (Note [Lazy state]).
  const analysis::StateView& view() const { return view_; }
  // Takes the full State once the worker has built it; once a frame.
  void poll();
  // Blocks until the pending full State is built and taken (tests, benches).
  void wait_state();
  // Models with more Functions than `functions` seek lazily, stepping the
  // Cursor at most `step_events` on the UI thread (kLazyStateFunctions,
  // kLazyStepEvents unless a test lowers them; applies to the next set_model).
  static void set_lazy_threshold(size_t functions, size_t step_events = kLazyStepEvents);
  static size_t lazy_threshold();
  static size_t lazy_step_events();
  void go_to(size_t index);  // clamped to the last event
  void step(long delta);     // clamped at both ends
  void go_first() { go_to(0); }
  void go_last() { go_to(num_events() ? num_events() - 1 : 0); }

  // ---- stepping by kind (Ctrl+Left/Right) ----
  // The kind Ctrl+arrows step through; kNone until the user picks one.
  trace::EventKind step_kind() const { return step_kind_; }
  void set_step_kind(trace::EventKind kind) { step_kind_ = kind; }
  // Moves to the next (dir > 0) or previous event of step_kind(); when no
  // kind is chosen, of the current event's kind. False (and no move) when
  // there is none that way.
  bool step_kind(int dir);
  // ---- Reducer lifecycle (PgUp/PgDn), Note [Reducer lifecycle events] ----
  bool step_lifecycle(int dir);
  const std::vector<analysis::EventIndex>& lifecycle_events() const { return lifecycle_; }

  // ---- selection ----
  analysis::FunctionIndex selected_function() const { return selected_function_; }
  analysis::OwnerIndex selected_owner() const { return selected_owner_; }
  void select_function(analysis::FunctionIndex f) { selected_function_ = f; }
  void select_owner(analysis::OwnerIndex o) { selected_owner_ = o; }
  // The Function an event is about (its node), kNoIndex when none.
  analysis::FunctionIndex function_of_event(size_t index) const;

  // ---- bookmarks (Ctrl+B toggles at the current event, Ctrl+1..9 jump) ----
  // Sorted by event; at most kMaxBookmarks (the oldest is dropped past that).
  bool toggle_bookmark();  // true: added, false: removed
  const std::vector<size_t>& bookmarks() const { return bookmarks_; }
  bool jump_to_bookmark(size_t n);  // n: 0-based; false when there is no such bookmark

  // ---- playback (Space) ----
  bool playing() const { return playing_; }
  void set_playing(bool on);
  double speed() const { return speed_; }  // events per second
  void set_speed(double events_per_second);
  // Called once a frame with the time since the last; steps while playing and
  // stops at the last event.
  void advance(double seconds);

 private:
  const std::vector<analysis::EventIndex>& kind_index(trace::EventKind kind);
  bool steps_lazily(size_t index) const;  // Note [Lazy seeks in the GUI]

  std::shared_ptr<const analysis::Model> model_;
  std::optional<analysis::Cursor> cursor_;
  // Note [Lazy seeks in the GUI]: worker_ only above the threshold; pending_
  // is the current event while the cursor is still elsewhere.
  std::unique_ptr<analysis::StateWorker> worker_;
  std::optional<size_t> pending_;
  analysis::StateView view_;
  analysis::State pending_state_;  // empty, at the pending index (state())
  // The worker's State, taken, while its owners' hooks are counted off the
  // UI thread (a scan of every live Function: ~14 ms at 1M).
  std::shared_ptr<analysis::State> taken_;
  std::future<std::vector<uint32_t>> counting_;
  trace::EventKind step_kind_ = trace::EventKind::kNone;
  std::vector<analysis::EventIndex> lifecycle_;
  // Per kind, its events, built on first use (the bulk kinds have no index
  // in the model; a scan of 10M events takes tens of ms once).
  std::array<std::optional<std::vector<analysis::EventIndex>>, 64> kind_events_;
  analysis::FunctionIndex selected_function_ = analysis::kNoIndex;
  analysis::OwnerIndex selected_owner_ = analysis::kNoIndex;
  std::vector<size_t> bookmarks_;
  bool playing_ = false;
  double speed_ = 20.0;
  double play_debt_ = 0.0;  // fractional events owed to playback
};

}  // namespace hookscope::app
