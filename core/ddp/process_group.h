#pragma once
// Collective communication for DDP: the interface a backend implements (Gloo
// over TCP on host memory; NCCL on GPUs): asynchronous work handles, a
// per-group timeout, abort.

#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/tensor.h"
#include "trace/event.h"

namespace gloo::rendezvous {
class Store;
}

namespace hookscope::ddp {

using Store = gloo::rendezvous::Store;

// Rendezvous stores (Gloo's): ranks as threads share one HashStore; processes
// on one host (or a shared filesystem) use a FileStore directory; several
// hosts use a RedisStore. `prefixed` namespaces a store, so each process
// group generation rendezvouses under its own keys.
std::shared_ptr<Store> make_hash_store();
std::shared_ptr<Store> make_file_store(const std::string& directory);
std::shared_ptr<Store> make_redis_store(const std::string& host, int port);
std::shared_ptr<Store> prefixed(std::shared_ptr<Store> store, const std::string& prefix);

// Note [Rendezvous store specs]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A store named by a string, as `record --store` / `launch --store` take it:
// "redis://HOST:PORT" is a RedisStore, "file://DIR" or a plain DIR a
// FileStore directory. With a run id every key starts with "run-RUN_ID/":
// Gloo sets keys such as "rank_0" once per store, so two runs on one Redis
// server collide ("Key 'rank_0' already set") unless their run ids differ;
// a Redis store therefore needs one. make_store throws std::invalid_argument
// for a malformed spec or run id, std::runtime_error when the server cannot
// be reached.
struct RedisAddress {
  std::string host;
  int port = 6379;
};
// The parts of a "redis://HOST:PORT" spec; nullopt for anything else; throws
// std::invalid_argument for a malformed one.
std::optional<RedisAddress> parse_redis_spec(const std::string& spec);
// Throws std::invalid_argument unless empty or 1-200 of [A-Za-z0-9._-].
void check_run_id(const std::string& run_id);
std::shared_ptr<Store> make_store(const std::string& spec, const std::string& run_id);

// A collective failed (a peer died or reset the connection), timed out, or
// the group was aborted. Survivors catch it to start recovery.
class CollectiveError : public std::runtime_error {
 public:
  CollectiveError(trace::CollectiveStatus status, const std::string& what)
      : std::runtime_error(what), status_(status) {}
  trace::CollectiveStatus status() const { return status_; }

 private:
  trace::CollectiveStatus status_;
};

// Handle of an asynchronous collective. Collectives of one group complete in
// the order they were issued.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until done. Throws CollectiveError if it failed or timed out.
  virtual void wait() = 0;
  virtual bool completed() const = 0;
  // Time the backend spent on it (valid once completed); for NCCL measured
  // with CUDA events on the communication stream.
  virtual uint64_t duration_ns() const = 0;
  // Where it ran, as kCollectiveEnd's actor (Note [Collective placement]).
  virtual uint32_t placement() const { return trace::kPlacementHost; }
};

// Note [A comm hook's collectives]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The torch bridge sees every c10d collective as PyTorch's profiler does
// (Note [Collectives through RecordFunction] in python/hookscope/csrc), so
// the allreduce a Python comm hook runs is a collective of its traces, and
// the bucket's when its size is the bucket's. The runtime writes the same for
// the same program: while a Reducer's comm hook runs, a CollectiveWatch is
// set on its thread (WatchCollectives), and allreduce_tensor and
// broadcast_tensor called there ask it to write the collective's begin
// (watch->begin) and write its end when its wait() returns or throws. The
// Reducer's watch makes the first allreduce of the bucket's size the
// bucket's collective: kBucketReady, then kCollectiveBegin with the
// Reducer's owner and the bucket; its end makes the bucket reduced (Reducers
// panel, analysis). Any other collective of the hook is of no Reducer (owner
// 0, kNoBucket). A hook that runs no allreduce of its bucket's size leaves
// the bucket without kBucketReady, in both writers. The Reducer's own
// allreduce and DDP's broadcast write their events themselves: no watch is
// set there.
class CollectiveWatch {
 public:
  struct Begun {
    uint32_t owner = 0;       // kCollectiveEnd's owner
    uint64_t collective = 0;  // its id
  };
  virtual ~CollectiveWatch() = default;
  // A collective of `bytes` is about to start on this thread: write its begin.
  virtual Begun begin(trace::CollectiveOp op, uint64_t bytes) = 0;
};
// Sets the calling thread's watch while it lives (the previous one after).
class WatchCollectives {
 public:
  explicit WatchCollectives(CollectiveWatch& watch);
  ~WatchCollectives();
  WatchCollectives(const WatchCollectives&) = delete;
  WatchCollectives& operator=(const WatchCollectives&) = delete;

 private:
  CollectiveWatch* previous_;
};

struct ProcessGroupOptions {
  std::chrono::milliseconds timeout{30000};  // per collective
  // Waiting for every rank to join. Longer than a collective's timeout: after
  // a failure the survivors wait here for the replacement rank to start.
  std::chrono::milliseconds rendezvous_timeout{60000};
  // TCP: the address to bind (127.0.0.1 unless told otherwise) or an interface name.
  std::string hostname = "127.0.0.1";
  std::string iface;
};

class ProcessGroup {
 public:
  ProcessGroup(int rank, int size) : rank_(rank), size_(size) {}
  virtual ~ProcessGroup() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  virtual std::string backend() const = 0;

  // Where the buffers of allreduce/broadcast(float*) live: host memory for
  // Gloo; device memory of cuda:device_index() for NCCL.
  virtual Device device() const { return Device::kCPU; }
  virtual int device_index() const { return -1; }

  // Sum over ranks, in place.
  virtual std::shared_ptr<Work> allreduce(float* data, size_t count) = 0;
  virtual std::shared_ptr<Work> broadcast(float* data, size_t count, int root) = 0;
  // The same on a tensor of any device. A tensor on device() is used in
  // place (and kept alive until the collective is done with it); one on
  // another device is staged: copied now, copied back in wait() (so wait()
  // must be called before the result is read). A CUDA tensor of another GPU
  // than an NCCL group's is an error naming both.
  std::shared_ptr<Work> allreduce_tensor(Tensor& tensor);
  std::shared_ptr<Work> broadcast_tensor(Tensor& tensor, int root);
  // Note [Persistent allreduce]: a buffer reduced again and again (a DDP
  // bucket) is registered once; the backend may keep an algorithm made for
  // it (Gloo: a ring whose receive buffers stay posted, so a peer's data is
  // read as it arrives). Every rank registers its buffers in the same order
  // and reduces them in the same order, as any collective. The group keeps
  // the tensor alive until unregister_allreduce() and the collectives before
  // it are done. allreduce_registered() is allreduce_tensor() on it.
  size_t register_allreduce(const Tensor& tensor);
  std::shared_ptr<Work> allreduce_registered(size_t id);
  void unregister_allreduce(size_t id);
  virtual std::shared_ptr<Work> barrier() = 0;
  // Small metadata from every rank, in rank order (blocking).
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // Fails pending and future collectives and closes connections, so peers
  // blocked on this rank see an error instead of waiting for the timeout.
  virtual void abort() = 0;

 protected:
  // A tensor on device(): the backend's collective on its data. The default
  // passes data_ptr(); a backend that runs asynchronously on a device stream
  // keeps the tensor's storage alive until its work is complete.
  virtual std::shared_ptr<Work> allreduce_on_device(Tensor& tensor);
  virtual std::shared_ptr<Work> broadcast_on_device(Tensor& tensor, int root);
  // Registered buffer `id` on device(); the default is allreduce_on_device.
  virtual std::shared_ptr<Work> allreduce_registered_on_device(size_t id, Tensor& tensor);
  // Frees what the backend made for `id` (in order with its collectives);
  // `tensor` must stay alive until then.
  virtual void release_registered(size_t id, Tensor tensor);

  int rank_, size_;

 private:
  std::mutex registered_mutex_;
  std::vector<Tensor> registered_;  // by id; undefined once unregistered
};

// Connects a full mesh of `size` ranks over TCP through `store`. Blocks until
// every rank has joined or options.rendezvous_timeout passes (then throws CollectiveError).
std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank,
                                                      int size,
                                                      const ProcessGroupOptions& options = {});

// NCCL on the GPUs, one GPU per rank: rank r runs on CUDA device
// r % cuda_device_count() (ranks of one host must not share a GPU) and makes
// it the calling thread's device. Rank 0's NCCL unique id reaches the others
// through `store`. Collectives run on a communication stream of their own,
// ordered with CUDA events against the device's compute stream (Note [One
// stream per device]). A collective that fails or passes options.timeout
// aborts the communicator (ncclCommAbort), so survivors can form a new group.
// Throws CollectiveError when the ranks do not join within
// rendezvous_timeout, std::runtime_error when NCCL cannot run here.
std::shared_ptr<ProcessGroup> make_nccl_process_group(std::shared_ptr<Store> store, int rank,
                                                      int size,
                                                      const ProcessGroupOptions& options = {});
// True when this build has the NCCL process group.
bool nccl_compiled();
// Whether `world_size` ranks on this host can each have a GPU of their own
// for NCCL; when not, `why` says what is missing.
bool nccl_usable(int world_size, std::string* why = nullptr);

}  // namespace hookscope::ddp
