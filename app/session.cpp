#include "session.h"

#include "event_filter.h"

#include <algorithm>
#include <chrono>
#include <cmath>

namespace hookscope::app {

using trace::EventKind;

bool is_lifecycle_event(const trace::Event& e) {
  switch (e.kind) {
    case EventKind::kReducerConstructed:
    case EventKind::kReducerDestroyed:
    case EventKind::kFailure:
      return true;
    case EventKind::kRecoveryStep:
      return e.as<trace::ev::RecoveryStep>().step == trace::RecoveryStep::kDdpRebuilt;
    default:
      return false;
  }
}

namespace {

const analysis::State& empty_state() {
  static const analysis::State state;
  return state;
}

bool indexed_by_model(EventKind kind) {
  // Model::events_of_kind: kHookRemoveFailed and every later kind but apply.
  return static_cast<int>(kind) >= static_cast<int>(EventKind::kHookRemoveFailed) &&
         kind != EventKind::kApplyBegin && kind != EventKind::kApplyEnd;
}

size_t& lazy_threshold_value() {
  static size_t functions = kLazyStateFunctions;
  return functions;
}
size_t& lazy_step_value() {
  static size_t events = kLazyStepEvents;
  return events;
}

}  // namespace

Session::Session() = default;
Session::~Session() = default;

void Session::set_lazy_threshold(size_t functions, size_t step_events) {
  lazy_threshold_value() = functions;
  lazy_step_value() = step_events;
}
size_t Session::lazy_threshold() { return lazy_threshold_value(); }
size_t Session::lazy_step_events() { return lazy_step_value(); }

void Session::set_model(std::shared_ptr<const analysis::Model> model, bool keep_position,
                        size_t at) {
  const size_t old_current = current();
  const bool was_at_end = num_events() > 0 && old_current + 1 == num_events();
  counting_ = {};  // waits for the count, which reads the old model
  taken_.reset();
  worker_.reset();  // it reads the old model: stop it first
  pending_.reset();
  view_ = {};
  model_ = std::move(model);
  cursor_.reset();
  for (auto& k : kind_events_) k.reset();
  lifecycle_.clear();
  if (!keep_position) {
    selected_function_ = analysis::kNoIndex;
    selected_owner_ = analysis::kNoIndex;
    bookmarks_.clear();
    playing_ = false;
  }
  if (!model_ || model_->num_events() == 0) return;
  for (EventKind k : {EventKind::kReducerConstructed, EventKind::kReducerDestroyed,
                      EventKind::kFailure, EventKind::kRecoveryStep}) {
    for (analysis::EventIndex i : model_->events_of_kind(k)) {
      if (is_lifecycle_event(model_->event(i))) lifecycle_.push_back(i);
    }
  }
  std::sort(lifecycle_.begin(), lifecycle_.end());
  const size_t last = model_->num_events() - 1;
  size_t target = keep_position ? (was_at_end ? last : old_current) : at;
  cursor_.emplace(*model_, std::min(target, last));
  view_ = analysis::StateView(*model_, cursor_->index());
  if (model_->functions().size() > lazy_threshold()) worker_ = std::make_unique<analysis::StateWorker>(*model_);
  // A grown model keeps ids (Note [Analysis ids] are positional), so the
  // selection stays meaningful; drop it only if it no longer exists.
  if (selected_function_ != analysis::kNoIndex && selected_function_ >= model_->functions().size()) {
    selected_function_ = analysis::kNoIndex;
  }
  if (selected_owner_ != analysis::kNoIndex && selected_owner_ >= model_->owners().size()) {
    selected_owner_ = analysis::kNoIndex;
  }
  std::erase_if(bookmarks_, [&](size_t b) { return b > last; });
}

const analysis::State& Session::state() const {
  if (pending_) return pending_state_;
  return cursor_ ? cursor_->state() : empty_state();
}

const analysis::State* Session::full_state() const {
  if (pending_) return nullptr;
  return cursor_ ? &cursor_->state() : &empty_state();
}

bool Session::steps_lazily(size_t index) const {
  const size_t cur = cursor_->index();
  return (index > cur ? index - cur : cur - index) <= lazy_step_events() && cursor_->steps_to(index);
}

void Session::poll() {
  if (!pending_ || !worker_) return;
  if (!taken_) {
    taken_ = worker_->take();
    if (!taken_) return;
    counting_ = std::async(std::launch::async, [model = model_.get(), state = taken_] {
      return analysis::Cursor::count_owner_hooks(*model, *state);
    });
  }
  if (counting_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return;
  cursor_->adopt(std::move(*taken_), counting_.get());  // *taken_ now holds the old state
  worker_->discard(std::move(taken_));                 // freed off the UI thread
  taken_.reset();
  // Built for an earlier request: step on from it when that is near.
  if (cursor_->index() == *pending_ || steps_lazily(*pending_)) {
    cursor_->seek(*pending_);
    pending_.reset();
  }
}

void Session::wait_state() {
  while (pending_ && worker_) {
    if (taken_) {
      counting_.wait();
    } else {
      (void)worker_->wait(*pending_);
    }
    poll();
  }
}

void Session::go_to(size_t index) {
  if (!cursor_) return;
  index = std::min(index, num_events() - 1);
  if (worker_) {
    // Note [Lazy seeks in the GUI]: step only from where the cursor is.
    if (steps_lazily(index)) {
      pending_.reset();
    } else {
      if (pending_ != index) {
        pending_ = index;
        pending_state_.index = index;
        worker_->request(index);
      }
      view_ = analysis::StateView(*model_, index);
      return;
    }
  }
  const size_t cur = cursor_->index();
  // Stepping costs what the events change; a seek costs a checkpoint replay.
  // Near moves step (Note [Replay by intervals]).
  if (index > cur && index - cur <= 64) {
    while (cursor_->index() < index) cursor_->next();
  } else if (index < cur && cur - index <= 64) {
    while (cursor_->index() > index) cursor_->prev();
  } else if (index != cur) {
    cursor_->seek(index);
  }
  if (model_) view_ = analysis::StateView(*model_, cursor_->index());
}

void Session::step(long delta) {
  if (!cursor_) return;
  const long target = static_cast<long>(current()) + delta;
  go_to(static_cast<size_t>(std::max(0L, target)));
}

const std::vector<analysis::EventIndex>& Session::kind_index(EventKind kind) {
  if (indexed_by_model(kind)) return model_->events_of_kind(kind);
  auto& slot = kind_events_[static_cast<size_t>(kind) % kind_events_.size()];
  if (!slot) {
    slot.emplace();
    const size_t n = model_->num_events();
    for (size_t i = 0; i < n; ++i) {
      if (model_->event(i).kind == kind) slot->push_back(static_cast<analysis::EventIndex>(i));
    }
  }
  return *slot;
}

namespace {

// The first element after `cur` (dir > 0) or the last before it (dir < 0).
std::optional<size_t> neighbour(const std::vector<analysis::EventIndex>& sorted, size_t cur,
                                int dir) {
  if (dir > 0) {
    auto it = std::upper_bound(sorted.begin(), sorted.end(), cur);
    if (it == sorted.end()) return std::nullopt;
    return *it;
  }
  auto it = std::lower_bound(sorted.begin(), sorted.end(), cur);
  if (it == sorted.begin()) return std::nullopt;
  return *(it - 1);
}

}  // namespace

bool Session::step_kind(int dir) {
  if (empty()) return false;
  EventKind kind = step_kind_;
  if (kind == EventKind::kNone) kind = model_->event(current()).kind;
  const auto next = neighbour(kind_index(kind), current(), dir);
  if (!next) return false;
  go_to(*next);
  return true;
}

bool Session::step_lifecycle(int dir) {
  if (empty()) return false;
  const auto next = neighbour(lifecycle_, current(), dir);
  if (!next) return false;
  go_to(*next);
  return true;
}

analysis::FunctionIndex Session::function_of_event(size_t index) const {
  if (empty() || index >= num_events()) return analysis::kNoIndex;
  const trace::Event e = model_->event(index);
  if (e.node == 0 || !event_names_function(e.kind)) return analysis::kNoIndex;
  return model_->find_function(model_->source(index), e.node);
}

bool Session::toggle_bookmark() {
  if (empty()) return false;
  const size_t cur = current();
  auto it = std::lower_bound(bookmarks_.begin(), bookmarks_.end(), cur);
  if (it != bookmarks_.end() && *it == cur) {
    bookmarks_.erase(it);
    return false;
  }
  if (bookmarks_.size() >= kMaxBookmarks) {
    // Drop the one farthest from here: the user is working around `cur`.
    auto far = std::max_element(bookmarks_.begin(), bookmarks_.end(), [&](size_t a, size_t b) {
      return (a > cur ? a - cur : cur - a) < (b > cur ? b - cur : cur - b);
    });
    bookmarks_.erase(far);
  }
  bookmarks_.insert(std::lower_bound(bookmarks_.begin(), bookmarks_.end(), cur), cur);
  return true;
}

bool Session::jump_to_bookmark(size_t n) {
  if (n >= bookmarks_.size()) return false;
  go_to(bookmarks_[n]);
  return true;
}

void Session::set_playing(bool on) {
  playing_ = on && !empty();
  play_debt_ = 0.0;
  // Play from the start when at the end, as a media player does.
  if (playing_ && current() + 1 >= num_events()) go_first();
}

void Session::set_speed(double events_per_second) {
  speed_ = std::clamp(events_per_second, 0.5, 1e6);
}

void Session::advance(double seconds) {
  if (!playing_ || empty()) return;
  play_debt_ += std::max(0.0, seconds) * speed_;
  const double whole = std::floor(play_debt_);
  if (whole < 1.0) return;
  play_debt_ -= whole;
  const size_t last = num_events() - 1;
  const size_t target = std::min<size_t>(last, current() + static_cast<size_t>(whole));
  go_to(target);
  if (target == last) playing_ = false;
}

}  // namespace hookscope::app
