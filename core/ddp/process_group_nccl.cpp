// ProcessGroup on NCCL: one GPU per rank, collectives on a communication
// stream, timeouts and failures abort the communicator. Compiled only when
// the build found NCCL (HOOKSCOPE_WITH_NCCL); see make_nccl_process_group.
#ifdef HOOKSCOPE_WITH_NCCL

#include <cuda_runtime.h>
#include <gloo/rendezvous/store.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "ddp/nccl_api.h"
#include "ddp/process_group.h"
#include "tensor/cuda/cuda_context.h"
#include "trace/emit.h"

namespace hookscope::ddp {

using trace::CollectiveStatus;
using Clock = std::chrono::steady_clock;

bool nccl_compiled() { return true; }

bool nccl_usable(int world_size, std::string* why) {
  std::string reason;
  if (!cuda_available(&reason)) {
    if (why) *why = reason;
    return false;
  }
  const int n = cuda_device_count();
  if (world_size > n) {
    if (why) {
      *why = "NCCL needs one GPU per rank, but " + std::to_string(world_size) +
             " ranks would share " + std::to_string(n) + " GPU(s) on this host";
    }
    return false;
  }
  try {
    nccl();  // the library is opened by the first group (Note [GPU libraries opened on first use])
  } catch (const std::exception& e) {
    if (why) *why = e.what();
    return false;
  }
  return true;
}

namespace {

std::string nccl_message(ncclResult_t r, ncclComm_t comm) {
  std::string s = nccl().get_error_string(r);
  if (comm != nullptr) {
    const char* last = nccl().get_last_error(comm);
    if (last != nullptr && *last != '\0') s += std::string(" (") + last + ")";
  }
  return s;
}

// The communicator and what every Work of the group needs to abort it.
struct NcclComm {
  std::mutex mutex;  // every use of comm; abort from another thread waits for it
  ncclComm_t comm = nullptr;
  bool aborted = false;
  bool broken = false;
  std::string first_error;
  int rank = 0;
  int device = 0;
  cudaStream_t stream = nullptr;
  int stream_number = 0;
  std::chrono::milliseconds timeout{0};

  std::string where() const {
    return "rank " + std::to_string(rank) + " (" + device_string(Device::kCUDA, device) + ")";
  }

  // Non-blocking communicator: polls until the last call's work is settled.
  // Caller holds mutex. Returns ncclInProgress if `deadline` passed first.
  ncclResult_t settle_locked(Clock::time_point deadline) {
    for (;;) {
      ncclResult_t state = ncclSuccess;
      const ncclResult_t r = nccl().comm_get_async_error(comm, &state);
      if (r != ncclSuccess) return r;
      if (state != ncclInProgress) return state;
      if (Clock::now() >= deadline) return ncclInProgress;
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  // ncclCommAbort: collectives blocked on a dead peer return, the
  // communicator is freed. Caller holds mutex.
  void abort_locked(const std::string& why) {
    if (!broken) first_error = why;
    broken = true;
    if (aborted || comm == nullptr) return;
    aborted = true;
    nccl().comm_abort(comm);  // nothing useful to do if it reports an error: the comm is gone
    comm = nullptr;
  }
  void abort(const std::string& why) {
    std::lock_guard<std::mutex> lock(mutex);
    abort_locked(why);
  }
};

class NcclWork : public Work {
 public:
  NcclWork(std::shared_ptr<NcclComm> comm, std::string what, std::shared_ptr<Storage> keep)
      : comm_(std::move(comm)), what_(std::move(what)), keep_(std::move(keep)),
        deadline_(Clock::now() + comm_->timeout) {
    cuda::DeviceGuard guard(comm_->device);
    HOOKSCOPE_CUDA_CHECK(cudaEventCreate(&start_));
    HOOKSCOPE_CUDA_CHECK(cudaEventCreate(&end_));
  }
  ~NcclWork() override {
    cudaEventDestroy(start_);  // destroying a pending event is allowed: it is released later
    cudaEventDestroy(end_);
  }

  // Before the collective was queued.
  void fail(CollectiveStatus status, std::string error) {
    std::lock_guard<std::mutex> lock(mutex_);
    failed_ = true;
    status_ = status;
    error_ = std::move(error);
  }

  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    if (failed_) throw CollectiveError(status_, error_);
    if (done_) return;
    cuda::DeviceGuard guard(comm_->device);
    for (;;) {
      const cudaError_t q = cudaEventQuery(end_);
      if (q == cudaSuccess) break;
      if (q != cudaErrorNotReady) {
        cudaGetLastError();
        fail_locked(CollectiveStatus::kError,
                    comm_->where() + ": CUDA error while waiting for NCCL " + what_ + ": " +
                        cudaGetErrorString(q) + "; the communicator was aborted");
        comm_->abort(error_);  // as the message says (lock order: this work's, then the comm's)
        throw CollectiveError(status_, error_);
      }
      CollectiveStatus status = CollectiveStatus::kOk;
      std::string error;
      {
        std::lock_guard<std::mutex> comm_lock(comm_->mutex);
        if (comm_->aborted) {
          status = CollectiveStatus::kAborted;
          error = comm_->where() + ": NCCL " + what_ +
                  " did not complete: the process group was aborted (" + comm_->first_error + ")";
        } else {
          ncclResult_t state = ncclSuccess;
          const ncclResult_t r = nccl().comm_get_async_error(comm_->comm, &state);
          if (r != ncclSuccess || (state != ncclSuccess && state != ncclInProgress)) {
            status = CollectiveStatus::kError;
            error = comm_->where() + ": NCCL " + what_ + " failed (a peer rank may have died): " +
                    nccl_message(r != ncclSuccess ? r : state, comm_->comm) +
                    "; the communicator was aborted (ncclCommAbort)";
          } else if (Clock::now() >= deadline_) {
            status = CollectiveStatus::kTimeout;
            error = comm_->where() + ": NCCL " + what_ + " timed out after " +
                    std::to_string(comm_->timeout.count()) +
                    " ms (a peer rank may have died or hung); the communicator was aborted "
                    "(ncclCommAbort)";
          }
          if (status != CollectiveStatus::kOk) comm_->abort_locked(error);
        }
      }
      if (status != CollectiveStatus::kOk) {
        fail_locked(status, error);
        throw CollectiveError(status_, error_);
      }
      std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    // An abort from another thread also ends the kernel and completes the
    // end event: the data is then incomplete, not reduced.
    {
      std::lock_guard<std::mutex> comm_lock(comm_->mutex);
      if (comm_->aborted) {
        fail_locked(CollectiveStatus::kAborted,
                    comm_->where() + ": NCCL " + what_ + " did not complete: the process group was aborted (" +
                        comm_->first_error + ")");
        throw CollectiveError(status_, error_);
      }
    }
    // The compute stream reads the result only after the collective wrote it.
    HOOKSCOPE_CUDA_CHECK(cudaStreamWaitEvent(cuda::compute_stream(comm_->device), end_, 0));
    float ms = 0.f;
    HOOKSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, end_));
    duration_ns_ = static_cast<uint64_t>(static_cast<double>(ms) * 1e6);
    done_ = true;
  }

  bool completed() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (failed_ || done_) return true;
    const cudaError_t q = cudaEventQuery(end_);
    if (q != cudaSuccess && q != cudaErrorNotReady) cudaGetLastError();
    return q != cudaErrorNotReady;
  }
  uint64_t duration_ns() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return duration_ns_;
  }
  uint32_t placement() const override {
    return trace::cuda_placement(comm_->device, comm_->stream_number);
  }

  cudaEvent_t start_event() const { return start_; }
  cudaEvent_t end_event() const { return end_; }

 private:
  void fail_locked(CollectiveStatus status, std::string error) {
    failed_ = true;
    status_ = status;
    error_ = std::move(error);
  }

  std::shared_ptr<NcclComm> comm_;
  std::string what_;
  std::shared_ptr<Storage> keep_;  // the tensor's memory, while the comm stream may use it
  Clock::time_point deadline_;     // from when it was queued, as collectives complete in order
  cudaEvent_t start_ = nullptr, end_ = nullptr;
  mutable std::mutex mutex_;
  bool failed_ = false, done_ = false;
  CollectiveStatus status_ = CollectiveStatus::kOk;
  std::string error_;
  uint64_t duration_ns_ = 0;
};

// Works whose memory could not be shown to be idle after an abort: kept
// forever rather than handing memory the GPU may still write to the cache.
std::mutex g_leaked_mutex;
std::vector<std::shared_ptr<NcclWork>>& leaked_works() {
  static auto* v = new std::vector<std::shared_ptr<NcclWork>>();
  return *v;
}

class NcclProcessGroup : public ProcessGroup {
 public:
  NcclProcessGroup(std::shared_ptr<Store> store, int rank, int size,
                   const ProcessGroupOptions& options)
      : ProcessGroup(rank, size), store_(std::move(store)), c_(std::make_shared<NcclComm>()) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw std::invalid_argument("process group: rank " + std::to_string(rank) +
                                  " is not in a world of size " + std::to_string(size));
    }
    std::string why;
    if (!cuda_available(&why)) {
      throw std::runtime_error("cannot create an NCCL process group: " + why +
                               "; use --device cpu (gloo)");
    }
    try {
      nccl();  // a missing libnccl is said before any rank waits on the store for the unique id
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("cannot create an NCCL process group: ") + e.what() +
                               "; or use the gloo backend");
    }
    c_->rank = rank;
    c_->device = rank % cuda_device_count();
    c_->timeout = options.timeout;
    cuda_set_device(c_->device);  // Note [One CUDA device per thread]
    cuda::DeviceGuard guard(c_->device);
    HOOKSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&c_->stream, cudaStreamNonBlocking));
    c_->stream_number = cuda::next_stream_number();
    HOOKSCOPE_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    try {
      connect(exchange_unique_id(options), options);
    } catch (...) {
      cudaEventDestroy(ready_);
      cudaStreamDestroy(c_->stream);
      throw;
    }
  }

  ~NcclProcessGroup() override {
    {
      std::lock_guard<std::mutex> lock(c_->mutex);
      if (!c_->aborted && c_->comm != nullptr) {
        // Finish what was queued, then free the communicator; a peer that
        // never finishes its part makes this an abort after the timeout.
        const auto deadline = Clock::now() + c_->timeout;
        ncclResult_t r = nccl().comm_finalize(c_->comm);
        if (r == ncclSuccess || r == ncclInProgress) r = c_->settle_locked(deadline);
        if (r == ncclSuccess) {
          nccl().comm_destroy(c_->comm);
          c_->comm = nullptr;
        } else {
          c_->abort_locked("process group destroyed while a collective was pending");
        }
      }
    }
    release_in_flight();
    cudaEventDestroy(ready_);
    cudaStreamDestroy(c_->stream);  // returns at once; the driver frees it when idle
  }

  std::string backend() const override { return "nccl"; }
  Device device() const override { return Device::kCUDA; }
  int device_index() const override { return c_->device; }

  std::shared_ptr<Work> allreduce(float* data, size_t count) override {
    return enqueue("allreduce", nullptr, [=](ncclComm_t comm, cudaStream_t s) {
      return nccl().all_reduce(data, data, count, ncclFloat, ncclSum, comm, s);
    });
  }

  std::shared_ptr<Work> broadcast(float* data, size_t count, int root) override {
    return enqueue("broadcast", nullptr, [=](ncclComm_t comm, cudaStream_t s) {
      return nccl().broadcast(data, data, count, ncclFloat, root, comm, s);
    });
  }

  std::shared_ptr<Work> barrier() override {
    // An allreduce of one float, as PyTorch's NCCL barrier.
    if (!barrier_buffer_.defined()) {
      cuda::DeviceGuard guard(c_->device);
      barrier_buffer_ = Tensor::zeros({1}, Device::kCUDA);
    }
    return allreduce_on_device(barrier_buffer_);
  }

  // Small metadata goes through the store, not the GPUs.
  std::vector<std::string> allgather(const std::string& mine) override {
    const std::string base = "nccl/allgather/" + std::to_string(allgather_seq_++) + "/";
    std::vector<std::string> keys;
    try {
      store_->set(base + std::to_string(rank_), std::vector<char>(mine.begin(), mine.end()));
      for (int r = 0; r < size_; ++r) keys.push_back(base + std::to_string(r));
      store_->wait(keys, c_->timeout);
      std::vector<std::string> out;
      for (const auto& k : keys) {
        auto v = store_->get(k);
        out.emplace_back(v.begin(), v.end());
      }
      return out;
    } catch (const std::exception& e) {
      throw CollectiveError(CollectiveStatus::kTimeout,
                            c_->where() + ": allgather through the store did not complete within " +
                                std::to_string(c_->timeout.count()) + " ms: " + e.what());
    }
  }

  void abort() override {
    c_->abort("process group aborted");
    release_in_flight();
  }

 protected:
  std::shared_ptr<Work> allreduce_on_device(Tensor& t) override {
    check_on_my_gpu(t);
    float* data = t.data_ptr();
    const size_t count = static_cast<size_t>(t.numel());
    return enqueue("allreduce", t.impl()->storage, [=](ncclComm_t comm, cudaStream_t s) {
      return nccl().all_reduce(data, data, count, ncclFloat, ncclSum, comm, s);
    });
  }

  std::shared_ptr<Work> broadcast_on_device(Tensor& t, int root) override {
    check_on_my_gpu(t);
    float* data = t.data_ptr();
    const size_t count = static_cast<size_t>(t.numel());
    return enqueue("broadcast", t.impl()->storage, [=](ncclComm_t comm, cudaStream_t s) {
      return nccl().broadcast(data, data, count, ncclFloat, root, comm, s);
    });
  }

 private:
  void check_on_my_gpu(const Tensor& t) const {
    if (t.device() != Device::kCUDA || t.device_index() != c_->device) {
      throw std::invalid_argument(c_->where() + ": the NCCL process group got a tensor on " +
                                  t.device_str() + "; its collectives run on " +
                                  device_string(Device::kCUDA, c_->device));
    }
  }

  ncclUniqueId exchange_unique_id(const ProcessGroupOptions& options) {
    const std::string key = "nccl/unique_id";
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    if (rank_ == 0) {
      const ncclResult_t r = nccl().get_unique_id(&id);
      if (r != ncclSuccess) {
        throw std::runtime_error(c_->where() + ": ncclGetUniqueId failed: " +
                                 nccl_message(r, nullptr));
      }
      const char* p = reinterpret_cast<const char*>(&id);
      store_->set(key, std::vector<char>(p, p + sizeof(id)));
      return id;
    }
    std::vector<char> bytes;
    try {
      store_->wait({key}, options.rendezvous_timeout);
      bytes = store_->get(key);
    } catch (const std::exception& e) {
      throw CollectiveError(CollectiveStatus::kTimeout,
                            c_->where() + " could not join a group of " + std::to_string(size_) +
                                ": rank 0's NCCL unique id did not arrive in the store within " +
                                std::to_string(options.rendezvous_timeout.count()) +
                                " ms: " + e.what());
    }
    if (bytes.size() != sizeof(id)) {
      throw CollectiveError(CollectiveStatus::kError,
                            c_->where() + ": the NCCL unique id in the store has " +
                                std::to_string(bytes.size()) + " bytes, expected " +
                                std::to_string(sizeof(id)) +
                                " (another program uses the same store keys?)");
    }
    std::memcpy(&id, bytes.data(), sizeof(id));
    return id;
  }

  void connect(const ncclUniqueId& id, const ProcessGroupOptions& options) {
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;  // so that joining and collectives can time out
    std::lock_guard<std::mutex> lock(c_->mutex);
    ncclResult_t r = nccl().comm_init_rank_config(&c_->comm, size_, id, rank_, &config);
    const auto deadline = Clock::now() + std::max(options.timeout, options.rendezvous_timeout);
    if ((r == ncclSuccess || r == ncclInProgress) && c_->comm != nullptr) {
      r = c_->settle_locked(deadline);
    }
    if (r == ncclSuccess) return;
    const std::string detail = r == ncclInProgress
                                   ? "not every rank joined within " +
                                         std::to_string(std::max(options.timeout,
                                                                 options.rendezvous_timeout).count()) +
                                         " ms"
                                   : nccl_message(r, c_->comm);
    if (c_->comm != nullptr) {
      nccl().comm_abort(c_->comm);
      c_->comm = nullptr;
    }
    c_->aborted = true;
    throw CollectiveError(
        r == ncclInProgress ? CollectiveStatus::kTimeout : CollectiveStatus::kError,
        c_->where() + " could not join an NCCL group of " + std::to_string(size_) + ": " + detail +
            (r == ncclInvalidUsage ? " (two ranks on one GPU? NCCL needs one GPU per rank)" : ""));
  }

  template <typename Fn>
  std::shared_ptr<Work> enqueue(const char* what, std::shared_ptr<Storage> keep, Fn&& call) {
    reap();
    auto work = std::make_shared<NcclWork>(c_, what, std::move(keep));
    // Lock order: the comm's mutex is released before in_flight_mutex_ is
    // taken (reap holds in_flight_mutex_ and then a work's; a work's wait
    // holds its own and then the comm's).
    if (!queue(*work, what, std::forward<Fn>(call))) return work;
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    in_flight_.push_back(work);
    return work;
  }

  // False when the work failed before reaching the stream (fail() was called).
  template <typename Fn>
  bool queue(NcclWork& work, const char* what, Fn&& call) {
    std::lock_guard<std::mutex> lock(c_->mutex);
    if (c_->aborted || c_->broken) {
      work.fail(CollectiveStatus::kAborted,
                c_->aborted && c_->first_error == "process group aborted"
                    ? c_->where() + ": process group was aborted"
                    : c_->where() + ": process group is broken after an earlier failure: " +
                          c_->first_error);
      return false;
    }
    cuda::DeviceGuard guard(c_->device);
    // The communication stream starts after everything queued on the compute
    // stream so far, which wrote the data (Note [One stream per device]).
    HOOKSCOPE_CUDA_CHECK(cudaEventRecord(ready_, cuda::compute_stream(c_->device)));
    HOOKSCOPE_CUDA_CHECK(cudaStreamWaitEvent(c_->stream, ready_, 0));
    HOOKSCOPE_CUDA_CHECK(cudaEventRecord(work.start_event(), c_->stream));
    ncclResult_t r = call(c_->comm, c_->stream);
    if (r == ncclInProgress) r = c_->settle_locked(Clock::now() + c_->timeout);
    if (r != ncclSuccess) {
      const bool timeout = r == ncclInProgress;
      const std::string error =
          c_->where() + ": NCCL " + what +
          (timeout ? " could not be queued within " + std::to_string(c_->timeout.count()) +
                         " ms (a peer rank may have died or hung)"
                   : " failed: " + nccl_message(r, c_->comm)) +
          "; the communicator was aborted (ncclCommAbort)";
      c_->abort_locked(error);
      work.fail(timeout ? CollectiveStatus::kTimeout : CollectiveStatus::kError, error);
      return false;
    }
    HOOKSCOPE_CUDA_CHECK(cudaEventRecord(work.end_event(), c_->stream));
    return true;
  }

  // Drops the works whose collective is over (their tensors may be freed now).
  void reap() {
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    while (!in_flight_.empty() && in_flight_.front()->completed()) in_flight_.pop_front();
  }

  // After an abort or at destruction: wait (bounded) until the communication
  // stream is idle, then let the works' memory go.
  void release_in_flight() {
    const auto deadline = Clock::now() + std::chrono::seconds(5);
    bool idle = false;
    {
      cuda::DeviceGuard guard(c_->device);
      for (;;) {
        const cudaError_t q = cudaStreamQuery(c_->stream);
        if (q != cudaErrorNotReady) {
          if (q != cudaSuccess) cudaGetLastError();
          idle = q == cudaSuccess;
          break;
        }
        if (Clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::microseconds(100));
      }
    }
    std::lock_guard<std::mutex> lock(in_flight_mutex_);
    if (!idle) {
      std::lock_guard<std::mutex> leaked_lock(g_leaked_mutex);
      for (auto& w : in_flight_) leaked_works().push_back(w);
    }
    in_flight_.clear();
  }

  std::shared_ptr<Store> store_;
  std::shared_ptr<NcclComm> c_;
  cudaEvent_t ready_ = nullptr;
  std::mutex in_flight_mutex_;  // abort() may come from another thread
  std::deque<std::shared_ptr<NcclWork>> in_flight_;  // issue order = completion order
  Tensor barrier_buffer_;
  uint64_t allgather_seq_ = 0;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store> store, int rank,
                                                      int size,
                                                      const ProcessGroupOptions& options) {
  return std::make_shared<NcclProcessGroup>(std::move(store), rank, size, options);
}

}  // namespace hookscope::ddp

#endif  // HOOKSCOPE_WITH_NCCL
