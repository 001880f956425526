// The GPU check's figures (scripts/gpu-check.sh): MLP training step time on
// the GPU vs the CPU, the largest |GPU - CPU| difference in loss, gradients
// and parameters, and NCCL allreduce bandwidth over the GPUs present.
// A plain program, not a Google Benchmark: it must finish in a bounded time.
// Exit codes: 0 done (and within tolerance), 1 a GPU result differs from the
// CPU by more than 1e-4, 3 no usable GPU (nothing measured).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <thread>
#include <vector>

#include "ddp/process_group.h"
#include "nn/nn.h"
#include "tensor/cuda_memory.h"
#include "tensor/device.h"
#include "tensor/ops.h"

using namespace hookscope;
using Clock = std::chrono::steady_clock;

namespace {

constexpr int kExitNoGpu = 3;
constexpr float kTolerance = 1e-4f;

double ms_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

float max_diff(const Tensor& a, const Tensor& b) {
  auto x = a.to_vector(), y = b.to_vector();
  float m = 0.f;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::fabs(x[i] - y[i]));
  return m;
}

struct MlpFigures {
  double cpu_ms = 0, gpu_ms = 0;
  float loss_diff = 0, grad_diff = 0, param_diff = 0;
};

// Steps of the same MLP on both devices from the same weights and batches.
MlpFigures mlp_step_times(const std::vector<int64_t>& sizes, int64_t batch, int steps) {
  nn::SyntheticClassification data(sizes.front(), sizes.back(), 11);
  auto cpu = nn::mlp(sizes, 11, Device::kCPU);
  auto gpu = nn::mlp(sizes, 11, Device::kCUDA);
  nn::SGD sgd_c(cpu->parameters(), 0.01f), sgd_g(gpu->parameters(), 0.01f);
  MlpFigures f;
  std::vector<double> tc, tg;
  for (int s = 0; s < steps; ++s) {
    auto b = data.batch(static_cast<uint64_t>(s), batch);
    auto t0 = Clock::now();
    Tensor lc = cross_entropy((*cpu)(b.x), b.y);
    sgd_c.zero_grad();
    lc.backward();
    sgd_c.step();
    const float loss_c = lc.item();
    tc.push_back(ms_since(t0));

    t0 = Clock::now();
    Tensor lg = cross_entropy((*gpu)(b.x.to(Device::kCUDA)), b.y);
    sgd_g.zero_grad();
    lg.backward();
    sgd_g.step();
    const float loss_g = lg.item();  // waits for the step's kernels
    tg.push_back(ms_since(t0));

    f.loss_diff = std::max(f.loss_diff, std::fabs(loss_c - loss_g));
    auto pc = cpu->parameters(), pg = gpu->parameters();
    for (size_t i = 0; i < pc.size(); ++i) {
      f.grad_diff = std::max(f.grad_diff, max_diff(pc[i].grad(), pg[i].grad()));
    }
  }
  auto pc = cpu->parameters(), pg = gpu->parameters();
  for (size_t i = 0; i < pc.size(); ++i) f.param_diff = std::max(f.param_diff, max_diff(pc[i], pg[i]));
  // The first steps pay for cuBLAS setup and allocator growth.
  const size_t warm = std::min<size_t>(3, tc.size() - 1);
  f.cpu_ms = median(std::vector<double>(tc.begin() + static_cast<long>(warm), tc.end()));
  f.gpu_ms = median(std::vector<double>(tg.begin() + static_cast<long>(warm), tg.end()));
  return f;
}

void allreduce_bandwidth() {
  const int world = cuda_device_count();
  if (!ddp::nccl_compiled()) {
    fmt::print("allreduce: this build has no NCCL; nothing measured\n");
    return;
  }
  fmt::print("NCCL allreduce, {} rank(s) as threads, one per GPU{}:\n", world,
             world == 1 ? " (one rank: NCCL queues no work for an in-place allreduce, so these are "
                          "per-call overheads, not link bandwidth)"
                        : "");
  fmt::print("  {:>10}  {:>10}  {:>12}  {:>12}\n", "bytes", "time", "algbw", "busbw");
  auto store = ddp::make_hash_store();
  std::vector<std::vector<double>> times(static_cast<size_t>(world));
  const std::vector<int64_t> sizes = {1 << 18, 1 << 22, 1 << 24, 1 << 26};  // floats: 1 MiB .. 256 MiB
  const int iters = 20;
  std::vector<std::thread> threads;
  std::vector<std::string> errors(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        auto pg = ddp::make_nccl_process_group(store, r, world);
        for (int64_t n : sizes) {
          Tensor t = Tensor::full({n}, 1.f, Device::kCUDA);
          for (int i = 0; i < 3; ++i) pg->allreduce_tensor(t)->wait();  // warm-up
          pg->barrier()->wait();
          cuda_synchronize();
          const auto t0 = Clock::now();
          std::vector<std::shared_ptr<ddp::Work>> works;
          for (int i = 0; i < iters; ++i) works.push_back(pg->allreduce_tensor(t));
          for (auto& w : works) w->wait();
          cuda_synchronize();
          times[static_cast<size_t>(r)].push_back(ms_since(t0) / iters);
        }
      } catch (const std::exception& e) {
        errors[static_cast<size_t>(r)] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) {
      fmt::print("  failed: {}\n", e);
      return;
    }
  }
  for (size_t i = 0; i < sizes.size(); ++i) {
    double ms = 0;
    for (auto& per_rank : times) ms = std::max(ms, per_rank[i]);
    const double bytes = static_cast<double>(sizes[i]) * sizeof(float);
    const double algbw = bytes / (ms * 1e-3) / 1e9;
    const double busbw = algbw * 2.0 * (world - 1) / world;  // as nccl-tests reports it
    fmt::print("  {:>10}  {:>7.3f} ms  {:>7.1f} GB/s  {:>7.1f} GB/s\n", static_cast<int64_t>(bytes),
               ms, algbw, busbw);
  }
}

}  // namespace

int main() {
  std::string why;
  if (!cuda_available(&why)) {
    fmt::print("bench_gpu: no usable GPU: {}; nothing measured\n", why);
    return kExitNoGpu;
  }
  const int n = cuda_device_count();
  for (int d = 0; d < n; ++d) fmt::print("cuda:{}: {}\n", d, cuda_device_description(d));

  struct Case {
    std::vector<int64_t> sizes;
    int64_t batch;
  };
  bool within = true;
  for (const Case& c : {Case{{16, 32, 32, 4}, 32}, Case{{784, 1024, 1024, 10}, 256}}) {
    const MlpFigures f = mlp_step_times(c.sizes, c.batch, 15);
    std::string shape;
    for (size_t i = 0; i < c.sizes.size(); ++i) {
      if (i) shape += '-';
      shape += std::to_string(c.sizes[i]);
    }
    fmt::print("MLP {} batch {}: training step (forward, backward, SGD) CPU {:.3f} ms, GPU {:.3f} ms "
               "({:.1f}x)\n",
               shape, c.batch, f.cpu_ms, f.gpu_ms, f.cpu_ms / f.gpu_ms);
    fmt::print("  largest |GPU - CPU| over 15 steps: loss {:.2e}, gradients {:.2e}, parameters "
               "{:.2e}\n",
               f.loss_diff, f.grad_diff, f.param_diff);
    within = within && f.loss_diff <= kTolerance && f.grad_diff <= kTolerance &&
             f.param_diff <= kTolerance;
  }
  const CudaMemoryStats m = cuda_memory_stats(0);
  fmt::print("allocator on cuda:0: {} cudaMalloc, {} cache hits, peak {:.1f} MiB in tensors, "
             "{:.1f} MiB reserved\n",
             m.cuda_mallocs, m.cache_hits, m.peak_allocated_bytes / 1048576.0,
             m.reserved_bytes / 1048576.0);
  allreduce_bandwidth();
  if (!within) fmt::print("FAIL: a GPU result differs from the CPU by more than {}\n", kTolerance);
  return within ? 0 : 1;
}
