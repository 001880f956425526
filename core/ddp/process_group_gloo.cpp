#define HIREDIS_NESTED_INCLUDE 1  // Debian installs hiredis.h under hiredis/
// ProcessGroup on Gloo (TCP). One worker thread per group runs the
// collectives in issue order, as PyTorch's ProcessGroupGloo does.
#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/allreduce_ring.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/common/error.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/rendezvous/redis_store.h>
#include <gloo/transport/tcp/device.h>

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <climits>
#include <atomic>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <mutex>
#include <thread>

#include "ddp/process_group.h"
#include "trace/emit.h"

namespace hookscope::ddp {

using trace::CollectiveStatus;

std::shared_ptr<Store> make_hash_store() {
  return std::make_shared<gloo::rendezvous::HashStore>();
}

std::shared_ptr<Store> make_file_store(const std::string& directory) {
  std::error_code ec;
  std::filesystem::create_directories(directory, ec);
  if (ec) {
    throw std::runtime_error("cannot create the rendezvous directory " + directory + ": " +
                             ec.message());
  }
  return std::make_shared<gloo::rendezvous::FileStore>(directory);
}

std::shared_ptr<Store> make_redis_store(const std::string& host, int port) {
  try {
    return std::make_shared<gloo::rendezvous::RedisStore>(host, port);
  } catch (const std::exception& e) {
    throw std::runtime_error("cannot reach the Redis rendezvous store at " + host + ":" +
                             std::to_string(port) + ": " + e.what());
  }
}

namespace {
// PrefixStore keeps a reference to its backing store; this keeps it alive too.
class OwningPrefixStore : public gloo::rendezvous::PrefixStore {
 public:
  OwningPrefixStore(const std::string& prefix, std::shared_ptr<Store> base)
      : PrefixStore(prefix, *base), base_(std::move(base)) {}

 private:
  std::shared_ptr<Store> base_;
};
}  // namespace

std::shared_ptr<Store> prefixed(std::shared_ptr<Store> store, const std::string& prefix) {
  return std::make_shared<OwningPrefixStore>(prefix, std::move(store));
}

namespace {

class GlooWork : public Work {
 public:
  explicit GlooWork(std::chrono::milliseconds timeout) : timeout_(timeout) {}

  void wait() override {
    std::unique_lock<std::mutex> lock(mutex_);
    // The collective has its own timeout inside Gloo; this one only guards
    // against a worker that never got to it.
    if (!cv_.wait_for(lock, timeout_ * 2 + std::chrono::seconds(1), [&] { return done_; })) {
      throw CollectiveError(CollectiveStatus::kTimeout,
                            "collective did not complete within " +
                                std::to_string(timeout_.count()) + " ms");
    }
    if (status_ != CollectiveStatus::kOk) throw CollectiveError(status_, error_);
  }
  bool completed() const override {
    std::lock_guard<std::mutex> lock(mutex_);
    return done_;
  }
  uint64_t duration_ns() const override { return duration_ns_.load(); }

  void finish(CollectiveStatus status, std::string error, uint64_t duration) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      status_ = status;
      error_ = std::move(error);
      duration_ns_ = duration;
      done_ = true;
    }
    cv_.notify_all();
  }

 private:
  std::chrono::milliseconds timeout_;
  mutable std::mutex mutex_;
  std::condition_variable cv_;
  bool done_ = false;
  CollectiveStatus status_ = CollectiveStatus::kOk;
  std::string error_;
  std::atomic<uint64_t> duration_ns_{0};
};

class GlooProcessGroup : public ProcessGroup {
 public:
  GlooProcessGroup(std::shared_ptr<Store> store, int rank, int size,
                   const ProcessGroupOptions& options)
      : ProcessGroup(rank, size), options_(options), store_(std::move(store)) {
    if (size < 1 || rank < 0 || rank >= size) {
      throw std::invalid_argument("process group: rank " + std::to_string(rank) +
                                  " is not in a world of size " + std::to_string(size));
    }
    gloo::transport::tcp::attr attr;
    if (!options.iface.empty()) {
      attr.iface = options.iface;
    } else {
      attr.hostname = options.hostname;
    }
    // Note [SIGPIPE and Gloo]
    // ~~~~~~~~~~~~~~~~~~~~~~~
    // Gloo writes to its sockets without MSG_NOSIGNAL: a write to a dead
    // peer raises SIGPIPE, which by default kills the whole process before
    // Gloo can report the error (Python ignores SIGPIPE, so PyTorch programs
    // never see this). The threads that write to this group's sockets have
    // it blocked: the worker (from its start), Gloo's event loop thread
    // (made by CreateDevice, it inherits this thread's mask) and this thread
    // while it connects; a SIGPIPE raised meanwhile on this thread is
    // consumed before its mask is restored. The process's disposition is
    // left alone.
    sigset_t pipe_only, saved;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    ::pthread_sigmask(SIG_BLOCK, &pipe_only, &saved);
    struct RestoreMask {
      const sigset_t& pipe;
      const sigset_t& saved;
      ~RestoreMask() {
        const timespec none{0, 0};
        while (::sigtimedwait(&pipe, nullptr, &none) == SIGPIPE) {
        }
        ::pthread_sigmask(SIG_SETMASK, &saved, nullptr);
      }
    } restore{pipe_only, saved};
    try {
      device_ = gloo::transport::tcp::CreateDevice(attr);
      auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, size);
      ctx->setTimeout(std::max(options.timeout, options.rendezvous_timeout));
      ctx->connectFullMesh(*store_, device_);
      ctx->setTimeout(options.timeout);
      context_ = ctx;
    } catch (const std::exception& e) {
      throw CollectiveError(CollectiveStatus::kError,
                            "rank " + std::to_string(rank) + " could not join a group of " +
                                std::to_string(size) + " (rendezvous or connect failed): " +
                                e.what());
    }
    worker_ = std::thread([this, r = trace::thread_rank()] {
      sigset_t pipe;  // Note [SIGPIPE and Gloo]
      sigemptyset(&pipe);
      sigaddset(&pipe, SIGPIPE);
      ::pthread_sigmask(SIG_BLOCK, &pipe, nullptr);
      trace::set_thread_rank(r);
      run_worker();
    });
  }

  ~GlooProcessGroup() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    cv_.notify_all();
    worker_.join();
    fail_pending("process group destroyed");
  }

  std::string backend() const override { return "gloo"; }

  std::shared_ptr<Work> allreduce(float* data, size_t count) override {
    return enqueue([this, data, count](uint32_t tag) {
      gloo::AllreduceOptions opts(context_);
      opts.setOutput(data, count);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::allreduce(opts);
    });
  }

  // Note [Persistent allreduce] on Gloo: gloo::allreduce makes its buffers
  // per call, so a peer's data that arrives before this rank has called it
  // finds no receive posted, stays in the socket, and Gloo's event loop
  // thread spins on it (epoll keeps reporting it readable) until the call
  // comes: with two ranks on two cores that spinning took 2.4 ms of CPU per
  // DDP step from the ranks' compute. A registered buffer gets a
  // gloo::AllreduceRing made once (on the worker, at its first reduction, so
  // every rank makes it in the same collective order and their slots match)
  // whose receive buffer stays registered with the pair: early data is read
  // into it at once. Reduced with it: 0.9 ms median wait instead of 2.3-3.7
  // ms, a third less CPU, on a 1 MB bucket whose peer is 0.5 ms late.
  std::shared_ptr<Work> allreduce_registered_on_device(size_t id, Tensor& tensor) override {
    float* data = tensor.data_ptr();
    const auto count = static_cast<size_t>(tensor.numel());
    if (count > static_cast<size_t>(INT_MAX)) return allreduce(data, count);
    return enqueue([this, id, data, count, keep = tensor](uint32_t) {
      if (persistent_.size() <= id) persistent_.resize(id + 1);
      auto& ring = persistent_[id];
      if (!ring) {
        ring = std::make_unique<gloo::AllreduceRing<float>>(
            context_, std::vector<float*>{data}, static_cast<int>(count));
      }
      ring->run();
    });
  }

  void release_registered(size_t id, Tensor tensor) override {
    // In order with the collectives before it (one may still use the
    // buffer); no tag: it is not a collective, and ranks may release at
    // different points.
    std::lock_guard<std::mutex> lock(mutex_);
    if (stop_) return;  // the destructor frees everything
    queue_.push_back(Task{[this, id, keep = std::move(tensor)](uint32_t) {
                            if (id < persistent_.size()) persistent_[id].reset();
                          },
                          std::make_shared<GlooWork>(options_.timeout), /*local=*/true});
    cv_.notify_all();
  }

  std::shared_ptr<Work> broadcast(float* data, size_t count, int root) override {
    return enqueue([this, data, count, root](uint32_t tag) {
      gloo::BroadcastOptions opts(context_);
      opts.setOutput(data, count);
      opts.setRoot(root);
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::broadcast(opts);
    });
  }

  std::shared_ptr<Work> barrier() override {
    return enqueue([this](uint32_t tag) {
      gloo::BarrierOptions opts(context_);
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::barrier(opts);
    });
  }

  std::vector<std::string> allgather(const std::string& mine) override {
    // Two rounds: lengths, then payloads padded to the longest.
    std::vector<uint64_t> lengths(static_cast<size_t>(size_));
    uint64_t my_len = mine.size();
    enqueue([&](uint32_t tag) {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(&my_len, 1);
      opts.setOutput(lengths.data(), lengths.size());
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::allgather(opts);
    })->wait();
    uint64_t longest = 1;
    for (uint64_t l : lengths) longest = std::max(longest, l);
    std::vector<char> in(longest, 0), out(longest * static_cast<size_t>(size_));
    std::memcpy(in.data(), mine.data(), mine.size());
    enqueue([&](uint32_t tag) {
      gloo::AllgatherOptions opts(context_);
      opts.setInput(in.data(), in.size());
      opts.setOutput(out.data(), out.size());
      opts.setTag(tag);
      opts.setTimeout(options_.timeout);
      gloo::allgather(opts);
    })->wait();
    std::vector<std::string> result;
    for (int r = 0; r < size_; ++r) {
      result.emplace_back(out.data() + static_cast<size_t>(r) * longest,
                          lengths[static_cast<size_t>(r)]);
    }
    return result;
  }

  void abort() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      aborted_ = true;
    }
    fail_pending("process group aborted");
    // Closing the sockets wakes a collective blocked in Gloo on this rank and
    // tells the peers at once.
    if (context_) context_->closeConnections();
  }

 private:
  struct Task {
    std::function<void(uint32_t)> run;
    std::shared_ptr<GlooWork> work;
    bool local = false;  // this rank's bookkeeping: takes no tag
  };

  std::shared_ptr<Work> enqueue(std::function<void(uint32_t)> run) {
    auto work = std::make_shared<GlooWork>(options_.timeout);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_ || broken_) {
        work->finish(CollectiveStatus::kAborted,
                     aborted_ ? "process group was aborted"
                              : "process group is broken after an earlier failure: " +
                                    first_error_,
                     0);
        return work;
      }
      queue_.push_back(Task{std::move(run), work});
    }
    cv_.notify_all();
    return work;
  }

  void run_worker() {
    for (;;) {
      Task task;
      {
        std::unique_lock<std::mutex> lock(mutex_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      const uint64_t t0 = trace::now_ns();
      CollectiveStatus status = CollectiveStatus::kOk;
      std::string error;
      try {
        task.run(task.local ? 0 : next_tag_++);
      } catch (const gloo::IoException& e) {
        status = is_timeout(e.what()) ? CollectiveStatus::kTimeout : CollectiveStatus::kError;
        error = describe(status, e.what());
      } catch (const std::exception& e) {
        status = CollectiveStatus::kError;
        error = describe(status, e.what());
      }
      if (status != CollectiveStatus::kOk) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!broken_) first_error_ = error;
        broken_ = true;
      }
      task.work->finish(status, error, trace::now_ns() - t0);
    }
  }

  static bool is_timeout(const std::string& what) {
    return what.find("imeout") != std::string::npos || what.find("imed out") != std::string::npos;
  }

  std::string describe(CollectiveStatus status, const std::string& what) const {
    std::string head = "rank " + std::to_string(rank_) + ": gloo collective ";
    head += status == CollectiveStatus::kTimeout
                ? "timed out after " + std::to_string(options_.timeout.count()) + " ms"
                : "failed";
    return head + " (a peer rank may have died): " + what;
  }

  void fail_pending(const std::string& why) {
    std::deque<Task> pending;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      pending.swap(queue_);
    }
    for (Task& t : pending) t.work->finish(CollectiveStatus::kAborted, why, 0);
  }

  ProcessGroupOptions options_;
  std::shared_ptr<Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> context_;
  // Registered buffers' rings (Note [Persistent allreduce]); worker thread
  // only. Declared after context_: destroyed before it.
  std::vector<std::unique_ptr<gloo::Algorithm>> persistent_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  bool stop_ = false;
  bool aborted_ = false;
  bool broken_ = false;
  std::string first_error_;
  uint32_t next_tag_ = 1;
  std::thread worker_;
};

}  // namespace

std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank,
                                                      int size,
                                                      const ProcessGroupOptions& options) {
  return std::make_shared<GlooProcessGroup>(std::move(store), rank, size, options);
}

}  // namespace hookscope::ddp
