#pragma once
// Collective communication for DDP: the interface a backend implements (Gloo
// on CPU here; NCCL on GPUs fits the same shape: asynchronous work handles,
// a per-group timeout, abort).

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

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
  // Time the backend spent on it (valid once completed).
  virtual uint64_t duration_ns() const = 0;
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

  // Sum over ranks, in place.
  virtual std::shared_ptr<Work> allreduce(float* data, size_t count) = 0;
  virtual std::shared_ptr<Work> broadcast(float* data, size_t count, int root) = 0;
  virtual std::shared_ptr<Work> barrier() = 0;
  // Small metadata from every rank, in rank order (blocking).
  virtual std::vector<std::string> allgather(const std::string& mine) = 0;
  // Fails pending and future collectives and closes connections, so peers
  // blocked on this rank see an error instead of waiting for the timeout.
  virtual void abort() = 0;

 protected:
  int rank_, size_;
};

// Connects a full mesh of `size` ranks over TCP through `store`. Blocks until
// every rank has joined or options.rendezvous_timeout passes (then throws CollectiveError).
std::shared_ptr<ProcessGroup> make_gloo_process_group(std::shared_ptr<Store> store, int rank,
                                                      int size,
                                                      const ProcessGroupOptions& options = {});

}  // namespace hookscope::ddp
