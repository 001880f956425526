// ProcessGroup's tensor collectives: in place on the group's device, staged
// through a copy otherwise (a CUDA tensor on a Gloo group is reduced in host
// memory, as PyTorch's ProcessGroupGloo does for CUDA tensors).
#include <stdexcept>
#include <string>

#include "ddp/process_group.h"
#include "tensor/kernels.h"
#include "trace/emitters_ddp.h"

namespace hookscope::ddp {

namespace {

// The collective ran on `staged`; wait() copies the result back into `target`.
class StagedWork : public Work {
 public:
  StagedWork(std::shared_ptr<Work> inner, Tensor staged, Tensor target)
      : inner_(std::move(inner)), staged_(std::move(staged)), target_(std::move(target)) {}

  // The backend may still be writing into staged_ (it holds a raw pointer):
  // it must finish before staged_ is freed. Bounded by the group's timeout.
  ~StagedWork() override {
    if (inner_->completed()) return;
    try {
      inner_->wait();
    } catch (...) {  // the failure was (or will be) reported by whoever waits
    }
  }

  void wait() override {
    inner_->wait();
    if (copied_back_) return;
    std::vector<float> host = staged_.to_vector();
    kernels_for(target_.device()).copy_from_host(target_, host.data());
    copied_back_ = true;
  }
  bool completed() const override { return inner_->completed(); }
  uint64_t duration_ns() const override { return inner_->duration_ns(); }
  uint32_t placement() const override { return inner_->placement(); }

 private:
  std::shared_ptr<Work> inner_;
  Tensor staged_, target_;
  bool copied_back_ = false;
};

thread_local CollectiveWatch* t_watch = nullptr;  // Note [A comm hook's collectives]

// A watched collective: writes its end once, when wait() returns or throws.
class WatchedWork : public Work {
 public:
  WatchedWork(std::shared_ptr<Work> inner, CollectiveWatch::Begun begun)
      : inner_(std::move(inner)), begun_(begun) {}

  void wait() override {
    try {
      inner_->wait();
    } catch (const CollectiveError& e) {
      end(e.status());
      throw;
    }
    end(trace::CollectiveStatus::kOk);
  }
  bool completed() const override { return inner_->completed(); }
  uint64_t duration_ns() const override { return inner_->duration_ns(); }
  uint32_t placement() const override { return inner_->placement(); }

 private:
  void end(trace::CollectiveStatus status) {
    if (ended_) return;
    ended_ = true;
    trace::emit_collective_end(begun_.owner, status, begun_.collective, inner_->duration_ns(), inner_->placement());
  }
  std::shared_ptr<Work> inner_;
  CollectiveWatch::Begun begun_;
  bool ended_ = false;
};

// `launch()`'s work, its begin and end written when this thread has a watch.
template <class Launch>
std::shared_ptr<Work> watched(trace::CollectiveOp op, const Tensor& tensor, Launch launch) {
  CollectiveWatch* watch = t_watch;
  if (watch == nullptr || !tensor.defined()) return launch();
  const CollectiveWatch::Begun begun = watch->begin(op, static_cast<uint64_t>(tensor.numel()) * sizeof(float));
  std::shared_ptr<Work> work;
  try {
    work = launch();
  } catch (const CollectiveError& e) {
    trace::emit_collective_end(begun.owner, e.status(), begun.collective, 0, trace::kPlacementHost);
    throw;
  }
  return std::make_shared<WatchedWork>(std::move(work), begun);
}

bool on_group_device(const ProcessGroup& g, const Tensor& t) {
  return t.device() == g.device() && (g.device() == Device::kCPU || t.device_index() == g.device_index());
}

Tensor stage(const ProcessGroup& g, const Tensor& t, const char* what) {
  if (!t.defined()) throw std::invalid_argument(std::string(what) + ": undefined tensor");
  if (t.device() == g.device()) {  // two GPUs: copying between them is not what the user meant
    throw std::invalid_argument(
        std::string(what) + ": rank " + std::to_string(g.rank()) + "'s " + g.backend() +
        " process group runs on " + device_string(g.device(), g.device_index()) +
        " but the tensor is on " + t.device_str() +
        " (one GPU per rank: rank r uses cuda:(r % device count); build the model after the "
        "process group, or call cuda_set_device first)");
  }
  if (g.device() != Device::kCUDA) return t.to(g.device());
  // Onto the group's GPU, whichever device the calling thread is on.
  struct Restore {
    int previous = cuda_current_device();
    ~Restore() {
      try {
        if (previous >= 0) cuda_set_device(previous);
      } catch (...) {  // it was valid a moment ago; nothing better to do in a destructor
      }
    }
  } restore;
  cuda_set_device(g.device_index());
  return t.to(g.device());
}

}  // namespace

WatchCollectives::WatchCollectives(CollectiveWatch& watch) : previous_(t_watch) { t_watch = &watch; }
WatchCollectives::~WatchCollectives() { t_watch = previous_; }

std::shared_ptr<Work> ProcessGroup::allreduce_tensor(Tensor& tensor) {
  return watched(trace::CollectiveOp::kAllreduce, tensor, [&]() -> std::shared_ptr<Work> {
    if (on_group_device(*this, tensor)) return allreduce_on_device(tensor);
    Tensor staged = stage(*this, tensor, "allreduce");
    return std::make_shared<StagedWork>(allreduce_on_device(staged), staged, tensor);
  });
}

std::shared_ptr<Work> ProcessGroup::broadcast_tensor(Tensor& tensor, int root) {
  return watched(trace::CollectiveOp::kBroadcast, tensor, [&]() -> std::shared_ptr<Work> {
    if (on_group_device(*this, tensor)) return broadcast_on_device(tensor, root);
    Tensor staged = stage(*this, tensor, "broadcast");
    return std::make_shared<StagedWork>(broadcast_on_device(staged, root), staged, tensor);
  });
}

size_t ProcessGroup::register_allreduce(const Tensor& tensor) {
  if (!tensor.defined()) throw std::invalid_argument("register_allreduce: undefined tensor");
  std::lock_guard<std::mutex> lock(registered_mutex_);
  registered_.push_back(tensor);
  return registered_.size() - 1;
}

std::shared_ptr<Work> ProcessGroup::allreduce_registered(size_t id) {
  Tensor tensor;
  {
    std::lock_guard<std::mutex> lock(registered_mutex_);
    if (id < registered_.size()) tensor = registered_[id];
  }
  if (!tensor.defined()) {
    throw std::logic_error("allreduce_registered: no buffer registered as " + std::to_string(id));
  }
  if (on_group_device(*this, tensor)) return allreduce_registered_on_device(id, tensor);
  return allreduce_tensor(tensor);
}

void ProcessGroup::unregister_allreduce(size_t id) {
  Tensor tensor;
  {
    std::lock_guard<std::mutex> lock(registered_mutex_);
    if (id >= registered_.size() || !registered_[id].defined()) return;
    tensor = std::move(registered_[id]);
    registered_[id] = Tensor();
  }
  release_registered(id, std::move(tensor));
}

std::shared_ptr<Work> ProcessGroup::allreduce_registered_on_device(size_t, Tensor& tensor) {
  return allreduce_on_device(tensor);
}

void ProcessGroup::release_registered(size_t, Tensor) {}

std::shared_ptr<Work> ProcessGroup::allreduce_on_device(Tensor& tensor) {
  return allreduce(tensor.data_ptr(), static_cast<size_t>(tensor.numel()));
}

std::shared_ptr<Work> ProcessGroup::broadcast_on_device(Tensor& tensor, int root) {
  return broadcast(tensor.data_ptr(), static_cast<size_t>(tensor.numel()), root);
}

#ifndef HOOKSCOPE_WITH_NCCL
bool nccl_compiled() { return false; }

bool nccl_usable(int, std::string* why) {
  if (why) {
    *why = cuda_compiled() ? "this build has no NCCL (nccl.h or libnccl was not found at "
                             "configure time, or HOOKSCOPE_NCCL=OFF)"
                           : "this build has no CUDA, hence no NCCL";
  }
  return false;
}

std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store>, int, int,
                                                      const ProcessGroupOptions&) {
  std::string why;
  nccl_usable(1, &why);
  throw std::runtime_error("cannot create an NCCL process group: " + why +
                           "; use the gloo backend");
}
#endif

}  // namespace hookscope::ddp
