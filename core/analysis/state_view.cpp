// Note [Lazy state]: per-Function state at an event, and the whole State
// built off the caller's thread.

#include "analysis/state_view.h"

namespace hookscope::analysis {

StateView::StateView(const Model& model, size_t index) : model_(&model), index_(index) {
  if (index >= model.num_events()) (void)model.state_at(index);  // throws, naming the bad index
}

bool StateView::live(FunctionIndex function) const {
  if (!model_ || function >= model_->functions().size()) return false;
  const FunctionInfo& info = model_->functions()[function];
  return info.created_at <= index_ && index_ < info.released_at;
}

bool StateView::function_at(FunctionIndex function, FunctionAt& out) const {
  for (auto& list : out.hooks) list.clear();
  out.function = kNoIndex;
  if (!live(function)) return false;
  out.function = function;
  const auto e = static_cast<EventIndex>(index_);
  for (uint32_t s : model_->segments_of(function)) {
    const HookSegment& seg = model_->segments()[s];
    if (seg.on_tensor || seg.from > e || e >= seg.to) continue;
    const HookInfo& hook = model_->hooks()[seg.hook];
    out.hooks[static_cast<size_t>(hook.kind)].push_back(
        HookAt{seg.hook, seg.function, model_->fires_until(seg.hook, e), seg.from});
  }
  return true;
}

void StateView::tensor_hooks_of(FunctionIndex function, std::vector<HookAt>& out) const {
  out.clear();
  if (!model_ || function >= model_->functions().size()) return;
  const auto e = static_cast<EventIndex>(index_);
  for (uint32_t s : model_->segments_of(function)) {
    const HookSegment& seg = model_->segments()[s];
    if (!seg.on_tensor || seg.from > e || e >= seg.to) continue;
    out.push_back(HookAt{seg.hook, seg.function, model_->fires_until(seg.hook, e), seg.from});
  }
}

StateWorker::StateWorker(const Model& model) : model_(model), thread_([this] { run(); }) {}

StateWorker::~StateWorker() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  changed_.notify_all();
  thread_.join();
}

void StateWorker::request(size_t index) {
  if (index >= model_.num_events()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (wanted_set_ && wanted_ == index) return;
    wanted_ = index;
    wanted_set_ = true;
  }
  changed_.notify_all();
}

std::shared_ptr<const State> StateWorker::get(size_t index) const {
  std::lock_guard<std::mutex> lock(mutex_);
  return built_ && built_->index == index ? built_ : nullptr;
}

std::shared_ptr<const State> StateWorker::wait(size_t index) const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return stop_ || (built_ && built_->index == index); });
  return built_ && built_->index == index ? built_ : nullptr;
}

std::shared_ptr<State> StateWorker::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!built_) return nullptr;
  if (wanted_set_ && wanted_ == built_->index) wanted_set_ = false;
  return std::move(built_);
}

void StateWorker::discard(std::shared_ptr<State> state) {
  if (!state) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    trash_.push_back(std::move(state));
  }
  changed_.notify_all();
}

// One state at a time, the latest asked: a request made while one is being
// built waits for it, then the built one is replaced.
void StateWorker::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    changed_.wait(lock, [&] {
      return stop_ || !trash_.empty() || (wanted_set_ && (!built_ || built_->index != wanted_));
    });
    if (stop_) return;
    if (!trash_.empty()) {
      std::vector<std::shared_ptr<State>> trash = std::move(trash_);
      trash_.clear();
      lock.unlock();
      trash.clear();
      lock.lock();
      continue;
    }
    const size_t index = wanted_;
    lock.unlock();
    auto state = std::make_shared<State>(model_.state_at(index));
    lock.lock();
    built_ = std::move(state);
    changed_.notify_all();
  }
}

}  // namespace hookscope::analysis
