// DDP figures: a training step of MLP 784-256-256-10 (batch 64 per rank, 2
// ranks) against PyTorch's DDP on gloo measured in the same run, and a 25 MB
// allreduce through our ProcessGroup against Gloo's own allreduce called
// directly on the same kind of context.
//
// BM_DdpTrainStepRecordingOverhead: the same training step with a file
// recorder attached, recording on and off in alternating blocks of the same
// run (both ranks switch at a barrier between blocks); counters off_ms and
// on_ms (medians per step), overhead_pct = (on / off - 1) * 100 (goal <= 2),
// events_per_step.
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ddp/ddp.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "trace/emit.h"
#include "trace/writer.h"

using namespace hookscope;

namespace {

// Runs `rank_fn(rank)` for ranks 1.. on threads and rank 0 on this thread.
void with_peers(int world, const std::function<void(int)>& rank_fn) {
  std::vector<std::thread> peers;
  for (int r = 1; r < world; ++r) peers.emplace_back(rank_fn, r);
  rank_fn(0);
  for (auto& t : peers) t.join();
}

void BM_DdpTrainStep_MLP784x256x256x10_Batch64_World2(benchmark::State& state) {
  openblas_set_num_threads(1);  // one thread per rank, as the PyTorch reference
  const int world = 2, steps = static_cast<int>(state.max_iterations), warmup = 5;
  auto store = ddp::make_hash_store();
  std::vector<double> rank0_seconds;
  with_peers(world, [&](int rank) {
    auto pg = ddp::make_gloo_process_group(store, rank, world);
    auto model = nn::mlp({784, 256, 256, 10}, 0);
    ddp::DistributedDataParallel d(model, pg);
    nn::SGD sgd(model->parameters(), 0.01f);
    Tensor x = Tensor::randn({64, 784}, 1.f, 1 + rank);
    std::vector<int64_t> y(64);
    for (int i = 0; i < 64; ++i) y[static_cast<size_t>(i)] = (i * 7 + rank) % 10;
    auto step = [&] {
      sgd.zero_grad();
      Tensor loss = cross_entropy(d(x), y);
      loss.backward();
      sgd.step();
    };
    for (int i = 0; i < warmup; ++i) step();
    if (rank != 0) {
      for (int i = 0; i < steps; ++i) step();
      return;
    }
    for (auto _ : state) {
      auto t0 = std::chrono::steady_clock::now();
      step();
      state.SetIterationTime(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  });
}
BENCHMARK(BM_DdpTrainStep_MLP784x256x256x10_Batch64_World2)
    ->Iterations(50)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void BM_DdpTrainStepRecordingOverhead_MLP784x256x256x10_Batch64_World2(benchmark::State& state) {
  openblas_set_num_threads(1);
  const int world = 2, warmup = 5, block = 10;
  const int pairs = static_cast<int>(state.max_iterations);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hookscope-bench-overhead-" + std::to_string(::getpid()) + ".hstrace"))
                               .string();
  trace::FileRecorder recorder(path);
  recorder.start();
  recorder.pause();
  auto store = ddp::make_hash_store();
  std::barrier sync(world);
  std::vector<double> off_s, on_s;
  with_peers(world, [&](int rank) {
    auto pg = ddp::make_gloo_process_group(store, rank, world);
    auto model = nn::mlp({784, 256, 256, 10}, 0);
    ddp::DistributedDataParallel d(model, pg);
    nn::SGD sgd(model->parameters(), 0.01f);
    Tensor x = Tensor::randn({64, 784}, 1.f, 1 + rank);
    std::vector<int64_t> y(64);
    for (int i = 0; i < 64; ++i) y[static_cast<size_t>(i)] = (i * 7 + rank) % 10;
    auto step = [&] {
      sgd.zero_grad();
      Tensor loss = cross_entropy(d(x), y);
      loss.backward();
      sgd.step();
    };
    for (int i = 0; i < warmup; ++i) step();
    // One pair = a block off and a block on; the order alternates per pair.
    auto run_block = [&](bool on, std::vector<double>* times) {
      sync.arrive_and_wait();
      if (rank == 0) on ? recorder.resume() : recorder.pause();
      sync.arrive_and_wait();
      for (int i = 0; i < block; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        step();
        if (times) {
          times->push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
      }
    };
    if (rank != 0) {
      for (int p = 0; p < pairs; ++p) {
        run_block(p % 2 == 0, nullptr);
        run_block(p % 2 != 0, nullptr);
      }
      return;
    }
    int p = 0;
    for (auto _ : state) {
      const size_t before = on_s.size();
      run_block(p % 2 == 0, p % 2 == 0 ? &on_s : &off_s);
      run_block(p % 2 != 0, p % 2 != 0 ? &on_s : &off_s);
      ++p;
      double on_sum = 0;
      for (size_t i = before; i < on_s.size(); ++i) on_sum += on_s[i];
      state.SetIterationTime(on_sum / block);
    }
  });
  recorder.resume();
  recorder.finish();
  const double events = static_cast<double>(recorder.writer().stats().events_written);
  std::filesystem::remove(path);
  const double off = median_of(off_s), on = median_of(on_s);
  state.counters["off_ms"] = off * 1e3;
  state.counters["on_ms"] = on * 1e3;
  state.counters["overhead_pct"] = (on / off - 1) * 100;
  state.counters["events_per_step"] = events / static_cast<double>(on_s.size());
}
BENCHMARK(BM_DdpTrainStepRecordingOverhead_MLP784x256x256x10_Batch64_World2)
    ->Iterations(10)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// PyTorch 1.13 DDP (gloo, 2 processes) on the same model, run by the
// reference script; its median step time becomes this benchmark's time.
void BM_TorchDdpTrainStepReference_MLP784x256x256x10_Batch64_World2(benchmark::State& state) {
  for (auto _ : state) {
    const std::string cmd = std::string("/usr/bin/python3 ") + HOOKSCOPE_BENCH_DIR +
                            "/torch_ddp_ref.py 50 2>/dev/null";
    FILE* p = ::popen(cmd.c_str(), "r");
    char buf[256] = {0};
    double ms = -1;
    if (p && std::fgets(buf, sizeof(buf), p)) std::sscanf(buf, "{\"ms_per_step\": %lf", &ms);
    if (p) ::pclose(p);
    if (ms < 0) {
      state.SkipWithError("PyTorch reference did not run: install python3-torch (scripts/setup.sh --bench)");
      return;
    }
    state.SetIterationTime(ms / 1e3);
  }
}
BENCHMARK(BM_TorchDdpTrainStepReference_MLP784x256x256x10_Batch64_World2)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

constexpr size_t kFloats25MB = 25u * 1024u * 1024u / sizeof(float);

void BM_ProcessGroupAllreduce_25MB_World2(benchmark::State& state) {
  const int world = 2;
  const int iters = static_cast<int>(state.max_iterations);
  auto store = ddp::make_hash_store();
  with_peers(world, [&](int rank) {
    auto pg = ddp::make_gloo_process_group(store, rank, world);
    std::vector<float> buf(kFloats25MB, 1.f);
    pg->allreduce(buf.data(), buf.size())->wait();  // warm up
    if (rank != 0) {
      for (int i = 0; i < iters; ++i) pg->allreduce(buf.data(), buf.size())->wait();
      return;
    }
    for (auto _ : state) {
      auto t0 = std::chrono::steady_clock::now();
      pg->allreduce(buf.data(), buf.size())->wait();
      state.SetIterationTime(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    state.SetBytesProcessed(static_cast<int64_t>(iters) * static_cast<int64_t>(kFloats25MB * 4));
  });
}
BENCHMARK(BM_ProcessGroupAllreduce_25MB_World2)->Iterations(20)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_GlooDirectAllreduceReference_25MB_World2(benchmark::State& state) {
  const int world = 2;
  const int iters = static_cast<int>(state.max_iterations);
  gloo::rendezvous::HashStore store;
  with_peers(world, [&](int rank) {
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    auto dev = gloo::transport::tcp::CreateDevice(attr);
    auto ctx = std::make_shared<gloo::rendezvous::Context>(rank, world);
    ctx->connectFullMesh(store, dev);
    std::vector<float> buf(kFloats25MB, 1.f);
    uint32_t tag = 1;
    auto run = [&] {
      gloo::AllreduceOptions opts(ctx);
      opts.setOutput(buf.data(), buf.size());
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      opts.setTag(tag++);
      gloo::allreduce(opts);
    };
    run();
    if (rank != 0) {
      for (int i = 0; i < iters; ++i) run();
      return;
    }
    for (auto _ : state) {
      auto t0 = std::chrono::steady_clock::now();
      run();
      state.SetIterationTime(
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
    state.SetBytesProcessed(static_cast<int64_t>(iters) * static_cast<int64_t>(kFloats25MB * 4));
  });
}
BENCHMARK(BM_GlooDirectAllreduceReference_25MB_World2)->Iterations(20)->UseManualTime()->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
