#pragma once
// The DDP stories: recovery after a rank failure, two DDPs on one module,
// unused parameters, a parameter marked ready twice. Ranks run as threads in
// this process (default) or, with `rank` set, this process runs one rank of a
// multi-process launch (hookscope-cli launch).

#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "scenarios/registry.h"
#include "tensor/device.h"
#include "trace/event.h"

namespace hookscope::scenarios {

struct DdpScenarioOptions {
  std::string name = "recovery";  // a DDP scenario of the registry (recovery, kept-alive, ...)
  trace::DestroyPolicy policy = trace::DestroyPolicy::kByKey;
  int world_size = 2;
  int steps = 8;
  uint64_t seed = 0;
  int recoveries = 1;
  int fail_rank = 1;
  int fail_step = -1;                 // -1: a third of the way in
  trace::FailureMode fail_mode = trace::FailureMode::kThrow;
  std::string fail_point = "hook";    // hook | collective (for throw)
  std::chrono::milliseconds timeout{5000};
  Device device = Device::kCPU;      // cuda: rank r trains on cuda:(r % device count)
  // auto: gloo on the CPU; nccl on CUDA when every rank can have a GPU of its
  // own, else gloo staging the gradients through host memory.
  std::string backend = "auto";       // auto | gloo | nccl
  std::vector<int64_t> layers = {16, 32, 32, 4};
  int64_t batch_per_rank = 16;       // the global batch is this times the world size
  float lr = 0.1f;
  size_t bucket_cap_bytes = 4096;     // small, so even the demo model has several buckets
  size_t first_bucket_bytes = 1024;

  // Process mode (one rank per process). rank < 0: all ranks as threads.
  int rank = -1;
  std::string store_dir;              // FileStore rendezvous directory; the launcher's notes
  // Rendezvous store when not a FileStore in store_dir: "redis://HOST:PORT" or
  // a directory, keys prefixed by run_id (Note [Rendezvous store specs]).
  std::string store;
  std::string run_id;
  std::string bind;                   // address or interface for Gloo's TCP (default 127.0.0.1)
  int generation = 0;                 // > 0: this process replaces a failed rank
  int start_step = 0;
};

struct RankReport {
  int rank = 0;
  int generation = 0;                 // incarnation of this rank (replacements count up)
  std::vector<float> losses;          // per completed step
  int recoveries = 0;
  bool failed = false;                // this incarnation was the injected failure
  std::string error;                  // an error that ended it (marked-twice, ...)
  std::vector<size_t> post_hooks_per_accumulator;  // at the end, while the last DDP lives
  std::vector<float> final_parameters;             // flattened, at the end
  std::vector<std::string> unused_parameters;
};

struct DdpScenarioResult {
  std::vector<RankReport> ranks;      // every incarnation, ordered by (rank, generation)
  int failures_injected = 0;
  // Largest |difference| between ranks' final parameters (0 when in sync).
  float max_parameter_divergence = 0.f;
};

// Throws std::invalid_argument for inconsistent options, naming the option.
void validate(const DdpScenarioOptions& options);
// The process group backend the ranks will use: "gloo" or "nccl".
std::string resolve_backend(const DdpScenarioOptions& options);
DdpScenarioResult run_ddp_scenario(const DdpScenarioOptions& options);

// Human-readable summary lines (steps, loss, recoveries, hooks per AccumulateGrad).
std::string format_result(const DdpScenarioOptions& options, const DdpScenarioResult& result);

}  // namespace hookscope::scenarios
