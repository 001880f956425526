#include "render/layout/layout_job.h"

#include <chrono>

namespace hookscope::render {

LayoutJob::LayoutJob(LayoutInput input, LayoutOptions options, std::optional<LayoutSeed> seed)
    : input_(std::move(input)), options_(options), seed_(std::move(seed)) {
  input_.seed = seed_ ? &*seed_ : nullptr;
  std::promise<Layout> promise;
  result_ = promise.get_future();
  thread_ = std::thread([this, promise = std::move(promise)]() mutable {
    try {
      promise.set_value(compute_layout(input_, options_, &cancel_));
    } catch (...) {
      promise.set_exception(std::current_exception());
    }
  });
}

LayoutJob::~LayoutJob() {
  cancel();
  if (thread_.joinable()) thread_.join();
}

bool LayoutJob::done() const {
  return result_.valid() &&
         result_.wait_for(std::chrono::seconds(0)) == std::future_status::ready;
}

Layout LayoutJob::get() { return result_.get(); }

}  // namespace hookscope::render
