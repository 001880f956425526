// Note [Differences off the UI thread]: one worker, the latest pair first, an LRU of results.

#include "analysis/compare_points.h"

#include <exception>
#include <optional>

#include "analysis/diff_match.h"

namespace hookscope::analysis {

PointDiffs::PointDiffs(std::shared_ptr<const Model> a, std::vector<Finding> findings_a,
                       std::shared_ptr<const Model> b, std::vector<Finding> findings_b, size_t capacity)
    : a_(std::move(a)),
      b_(std::move(b)),
      findings_a_(std::move(findings_a)),
      findings_b_(std::move(findings_b)),
      capacity_(capacity < 1 ? 1 : capacity) {
  worker_ = std::thread([this] { run(); });
}

PointDiffs::~PointDiffs() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  worker_.join();
}

std::shared_ptr<const PointDiff> PointDiffs::find_locked(size_t at_a, size_t at_b) {
  for (auto it = cache_.begin(); it != cache_.end(); ++it) {
    if ((*it)->at_a == at_a && (*it)->at_b == at_b) {
      cache_.splice(cache_.begin(), cache_, it);  // most recently used first
      return cache_.front();
    }
  }
  return nullptr;
}

std::shared_ptr<const PointDiff> PointDiffs::get(size_t at_a, size_t at_b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto hit = find_locked(at_a, at_b)) return hit;
  if (!wanted_ || want_a_ != at_a || want_b_ != at_b) {
    wanted_ = true;
    want_a_ = at_a, want_b_ = at_b;
    cv_.notify_all();
  }
  return nullptr;
}

std::shared_ptr<const PointDiff> PointDiffs::wait(size_t at_a, size_t at_b) {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    if (auto hit = find_locked(at_a, at_b)) return hit;
    if (!wanted_ || want_a_ != at_a || want_b_ != at_b) {
      wanted_ = true;
      want_a_ = at_a, want_b_ = at_b;
      cv_.notify_all();
    }
    cv_.wait(lock);
  }
}

size_t PointDiffs::computed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return computed_;
}

void PointDiffs::run() {
  std::optional<FunctionMatch> match_a, match_b;  // built on the worker, on first use
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || wanted_; });
    if (stop_) return;
    const size_t at_a = want_a_, at_b = want_b_;
    wanted_ = false;
    lock.unlock();
    if (!match_a) match_a.emplace(*a_), match_b.emplace(*b_);
    auto result = std::make_shared<PointDiff>();
    result->at_a = at_a, result->at_b = at_b;
    try {
      result->diff = diff_models_at(*a_, *match_a, findings_a_, at_a, *b_, *match_b, findings_b_, at_b);
      result->order = hook_order_diff(*a_, *match_a, at_a, *b_, *match_b, at_b);
    } catch (const std::exception& e) {  // shown instead of the differences, never a hang
      result->error = e.what();
    }
    lock.lock();
    cache_.push_front(std::move(result));
    if (cache_.size() > capacity_) cache_.pop_back();
    ++computed_;
    cv_.notify_all();
  }
}

}  // namespace hookscope::analysis
