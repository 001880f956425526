#pragma once
// DistributedDataParallel: wraps a module, broadcasts its parameters from
// rank 0, and owns the Reducer that synchronises gradients.

#include <memory>

#include "ddp/process_group.h"
#include "ddp/reducer.h"
#include "nn/nn.h"

namespace hookscope::ddp {

struct DdpOptions {
  ReducerOptions reducer;
  bool broadcast_parameters = true;
  int broadcast_root = 0;  // the rank whose parameters everyone starts from
};

class DistributedDataParallel {
 public:
  DistributedDataParallel(std::shared_ptr<nn::Module> module,
                          std::shared_ptr<ProcessGroup> group, DdpOptions options = {});

  // Runs the module; in grad mode (and outside no_sync) arms the Reducer for
  // the backward of the result.
  Tensor forward(const Tensor& x);
  Tensor operator()(const Tensor& x) { return forward(x); }

  // Replaces the allreduce of each bucket (Note [Comm hooks] in ddp/reducer.h).
  HookKey register_comm_hook(CommHook hook) { return reducer_->register_comm_hook(std::move(hook)); }

  nn::Module& module() { return *module_; }
  Reducer& reducer() { return *reducer_; }
  ProcessGroup& process_group() { return *group_; }

  // While the guard lives, backward passes accumulate gradients locally
  // without synchronising (hook fires are recorded as no-ops).
  class NoSync {
   public:
    explicit NoSync(DistributedDataParallel& ddp) : ddp_(ddp) { ddp_.require_sync_ = false; }
    ~NoSync() { ddp_.require_sync_ = true; }

   private:
    DistributedDataParallel& ddp_;
  };
  NoSync no_sync() { return NoSync(*this); }

 private:
  std::shared_ptr<nn::Module> module_;
  std::shared_ptr<ProcessGroup> group_;
  std::unique_ptr<Reducer> reducer_;
  bool require_sync_ = true;
};

}  // namespace hookscope::ddp
