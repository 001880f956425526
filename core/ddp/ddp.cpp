#include "ddp/ddp.h"

#include <atomic>

#include "trace/emitters_ddp.h"

namespace hookscope::ddp {

using trace::EventKind;

namespace {
std::atomic<uint64_t> g_next_collective{1ULL << 62};  // disjoint from the Reducer's ids
}

DistributedDataParallel::DistributedDataParallel(std::shared_ptr<nn::Module> module,
                                                 std::shared_ptr<ProcessGroup> group,
                                                 DdpOptions options)
    : module_(std::move(module)), group_(std::move(group)) {
  if (options.broadcast_parameters && group_->size() > 1) {
    NoGradGuard no_grad;
    for (auto& p : module_->named_parameters()) {
      const uint64_t id = g_next_collective.fetch_add(1);
      const size_t n = static_cast<size_t>(p.tensor.numel());
      trace::emit_collective_begin(0, trace::CollectiveOp::kBroadcast, id, n * sizeof(float),
                                   trace::kNoBucket);
      auto work = group_->broadcast_tensor(p.tensor, options.broadcast_root);
      try {
        work->wait();
      } catch (const CollectiveError& e) {
        trace::emit_collective_end(0, e.status(), id, work->duration_ns(), work->placement());
        throw;
      }
      trace::emit_collective_end(0, trace::CollectiveStatus::kOk, id, work->duration_ns(),
                                 work->placement());
    }
  }
  reducer_ = std::make_unique<Reducer>(module_->named_parameters(), group_,
                                       std::move(options.reducer));
}

Tensor DistributedDataParallel::forward(const Tensor& x) {
  // Through the module's call, as PyTorch's DDP calls self.module(...): the
  // module's own hooks (and the global module hooks) run under DDP too.
  Tensor out = (*module_)(x);
  if (GradMode::is_enabled()) {
    if (require_sync_) {
      reducer_->prepare_for_backward({out});
    } else {
      reducer_->skip_sync_for_backward();
    }
  }
  return out;
}

}  // namespace hookscope::ddp
