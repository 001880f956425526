#include "render/layout/layout_job.h"

#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

namespace hookscope::render {

struct LayoutJob::State {
  LayoutInput input;
  LayoutOptions options;
  std::optional<LayoutSeed> seed;
  std::atomic<bool> cancel{false};
  std::atomic<bool> finished{false};
  std::atomic<double> seconds{0.0};
};

namespace {

std::atomic<int> g_running{0};

// Note [Layout jobs]: threads of dropped jobs, joined once they finish (by
// the next drop) or at exit.
class Graveyard {
 public:
  ~Graveyard() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto& [thread, state] : threads_) {
      state->cancel = true;
      thread.join();
    }
  }
  void bury(std::thread thread, std::shared_ptr<LayoutJob::State> state) {
    std::lock_guard<std::mutex> lock(mutex_);
    for (size_t i = 0; i < threads_.size();) {
      if (threads_[i].second->finished) {
        threads_[i].first.join();
        threads_[i] = std::move(threads_.back());
        threads_.pop_back();
      } else {
        ++i;
      }
    }
    threads_.emplace_back(std::move(thread), std::move(state));
  }

 private:
  std::mutex mutex_;
  std::vector<std::pair<std::thread, std::shared_ptr<LayoutJob::State>>> threads_;
};

Graveyard& graveyard() {
  static Graveyard g;
  return g;
}

}  // namespace

LayoutJob::LayoutJob(LayoutInput input, LayoutOptions options, std::optional<LayoutSeed> seed)
    : LayoutJob(
          [in = std::make_shared<LayoutInput>(std::move(input))] {
            LayoutInput i = std::move(*in);
            i.seed = nullptr;  // the job's own `seed`, if any
            return i;
          },
          options, std::move(seed)) {}

LayoutJob::LayoutJob(std::function<LayoutInput()> prepare, LayoutOptions options, std::optional<LayoutSeed> seed)
    : state_(std::make_shared<State>()) {
  graveyard();  // constructed before any job thread, so destroyed after them
  state_->options = options;
  state_->seed = std::move(seed);
  std::promise<Layout> promise;
  result_ = promise.get_future();
  ++g_running;
  std::thread thread([state = state_, promise = std::move(promise), prepare = std::move(prepare)]() mutable {
    try {
      if (!state->cancel) state->input = prepare();  // a cancelled job's result is never read
      if (state->seed) state->input.seed = &*state->seed;  // else prepare's (it owns it)
      const auto start = std::chrono::steady_clock::now();
      Layout l = compute_layout(state->input, state->options, &state->cancel);
      state->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      promise.set_value(std::move(l));
      state->seed.reset();  // the input is not needed any more; free it now
      state->input = {};
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
    state->finished = true;
    --g_running;
  });
  graveyard().bury(std::move(thread), state_);
}

LayoutJob::~LayoutJob() { cancel(); }

void LayoutJob::cancel() { state_->cancel.store(true, std::memory_order_relaxed); }

bool LayoutJob::cancelled() const { return state_->cancel.load(std::memory_order_relaxed); }

bool LayoutJob::done() const {
  return result_.valid() &&
         result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

Layout LayoutJob::get() { return result_.get(); }

double LayoutJob::seconds() const { return state_->seconds.load(); }

int LayoutJob::running_jobs() { return g_running.load(); }

}  // namespace hookscope::render
