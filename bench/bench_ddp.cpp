// DDP figures: a training step of MLP 784-256-256-10 (batch 64 per rank, 2
// ranks) against PyTorch's DDP on gloo measured in the same run, and a 25 MB
// allreduce through our ProcessGroup against Gloo's own allreduce called
// directly on the same kind of context.
//
// BM_DdpTrainStep_..._Processes: the same step with one process per rank
// (this binary re-run as each rank, FileStore rendezvous), as the PyTorch
// reference runs; its time is rank 0's median step, as the reference's is.
// The thread version (both ranks in this process) reports its median too
// (counter median_ms): the reference prints a median, not a mean.
//
// BM_DdpTrainStepRecordingOverhead: the same training step with a file
// recorder attached, recording on and off in alternating blocks of the same
// run (both ranks switch at a barrier between blocks of 50 steps); counters
// off_ms and on_ms (medians per step), overhead_pct = (on / off - 1) * 100
// (goal <= 2), paired_overhead_pct (the median over pairs of adjacent blocks
// of on / off, each block's median), rank 0's CPU time per step off and on and its overhead (what
// recording costs the training thread, free of the host's scheduling noise),
// the whole process's CPU per step (the writer thread included),
// events_per_step. Blocks of 10 steps made the first steps after each switch
// weigh: on came out 28-63% slower, 50-step blocks -9..+15% (noise).
#include <benchmark/benchmark.h>
#include <cblas.h>
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/hash_store.h>
#include <gloo/transport/tcp/device.h>

#include <spawn.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <chrono>
#include <filesystem>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ddp/ddp.h"
#include "nn/nn.h"
#include "tensor/kernels.h"
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

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

double process_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Counters median_ms (what the PyTorch reference prints), p10_ms, p90_ms.
void report_spread(benchmark::State& state, std::vector<double> seconds) {
  if (seconds.empty()) return;
  std::sort(seconds.begin(), seconds.end());
  auto at = [&](double q) {
    return seconds[static_cast<size_t>(q * static_cast<double>(seconds.size() - 1))] * 1e3;
  };
  state.counters["median_ms"] = median_of(seconds) * 1e3;
  state.counters["p10_ms"] = at(0.1);
  state.counters["p90_ms"] = at(0.9);
}

// One rank's part of every benchmark here: MLP 784-256-256-10, DDP over
// `pg` (none when null: the compute alone), SGD, a fixed batch of 64.
struct MlpRank {
  std::shared_ptr<nn::Sequential> model = nn::mlp({784, 256, 256, 10}, 0);
  std::unique_ptr<ddp::DistributedDataParallel> ddp;
  nn::SGD sgd{model->parameters(), 0.01f};
  Tensor x;
  std::vector<int64_t> y = std::vector<int64_t>(64);

  MlpRank(int rank, std::shared_ptr<ddp::ProcessGroup> pg)
      : x(Tensor::randn({64, 784}, 1.f, static_cast<uint64_t>(1 + rank))) {
    if (pg) ddp = std::make_unique<ddp::DistributedDataParallel>(model, std::move(pg));
    for (int i = 0; i < 64; ++i) y[static_cast<size_t>(i)] = (i * 7 + rank) % 10;
  }
  void step() {
    sgd.zero_grad();
    Tensor loss = cross_entropy(ddp ? (*ddp)(x) : (*model)(x), y);
    loss.backward();
    sgd.step();
  }
  // `warmup` untimed steps, then `steps` timed ones: their times.
  std::vector<double> run(int warmup, int steps) {
    std::vector<double> seconds;
    for (int i = 0; i < warmup + steps; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      step();
      if (i >= warmup) {
        seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
    }
    return seconds;
  }
};

void BM_DdpTrainStep_MLP784x256x256x10_Batch64_World2(benchmark::State& state) {
  openblas_set_num_threads(1);  // one thread per rank, as the PyTorch reference
  const int world = 2, steps = static_cast<int>(state.max_iterations), warmup = 5;
  auto store = ddp::make_hash_store();
  std::vector<double> rank0_seconds;
  with_peers(world, [&](int rank) {
    MlpRank r(rank, ddp::make_gloo_process_group(store, rank, world));
    if (rank != 0) {
      r.run(warmup, steps);
      return;
    }
    r.run(warmup, 0);
    for (auto _ : state) {
      auto t0 = std::chrono::steady_clock::now();
      r.step();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      rank0_seconds.push_back(s);
      state.SetIterationTime(s);
    }
  });
  report_spread(state, rank0_seconds);
  state.SetLabel("BLAS " + blas_core());
}
BENCHMARK(BM_DdpTrainStep_MLP784x256x256x10_Batch64_World2)
    ->Iterations(50)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The same step with no DDP and no peer: the compute alone, on one thread.
void BM_TrainStepLocal_MLP784x256x256x10_Batch64(benchmark::State& state) {
  openblas_set_num_threads(1);
  MlpRank r(0, nullptr);
  r.run(5, 0);
  std::vector<double> seconds;
  for (auto _ : state) {
    auto t0 = std::chrono::steady_clock::now();
    r.step();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    seconds.push_back(s);
    state.SetIterationTime(s);
  }
  report_spread(state, seconds);
  state.SetLabel("BLAS " + blas_core());
}
BENCHMARK(BM_TrainStepLocal_MLP784x256x256x10_Batch64)
    ->Iterations(300)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

constexpr const char* kRankFlag = "--hookscope-bench-ddp-rank";

// Runs this binary as one rank; its stdout (rank 0 prints its step times) is
// read through `out` when not null.
pid_t spawn_rank(int rank, const std::string& store_dir, int steps, int* out) {
  const std::string r = std::to_string(rank), n = std::to_string(steps);
  std::vector<char*> argv = {const_cast<char*>("/proc/self/exe"), const_cast<char*>(kRankFlag),
                             const_cast<char*>(r.c_str()), const_cast<char*>(store_dir.c_str()),
                             const_cast<char*>(n.c_str()), nullptr};
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  int fds[2] = {-1, -1};
  if (out) {
    if (::pipe(fds) != 0) return -1;
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
  }
  pid_t pid = -1;
  if (::posix_spawn(&pid, "/proc/self/exe", &actions, nullptr, argv.data(), environ) != 0) pid = -1;
  posix_spawn_file_actions_destroy(&actions);
  if (out) {
    ::close(fds[1]);
    *out = fds[0];
  }
  return pid;
}

void BM_DdpTrainStep_MLP784x256x256x10_Batch64_World2_Processes(benchmark::State& state) {
  const int steps = 50;
  for (auto _ : state) {
    char dir_template[] = "/tmp/hookscope-bench-ddp-XXXXXX";
    if (!::mkdtemp(dir_template)) {
      state.SkipWithError("cannot create a rendezvous directory in /tmp");
      return;
    }
    const std::string dir = dir_template;
    int out = -1;
    const pid_t r0 = spawn_rank(0, dir, steps, &out);
    const pid_t r1 = spawn_rank(1, dir, steps, nullptr);
    std::string text;
    char buf[4096];
    for (ssize_t n; out >= 0 && (n = ::read(out, buf, sizeof(buf))) > 0;) text.append(buf, static_cast<size_t>(n));
    if (out >= 0) ::close(out);
    int st0 = -1, st1 = -1;
    if (r0 > 0) ::waitpid(r0, &st0, 0);
    if (r1 > 0) ::waitpid(r1, &st1, 0);
    std::filesystem::remove_all(dir);
    std::vector<double> seconds;
    for (char* p = text.data(); *p;) {
      char* end = nullptr;
      const double v = std::strtod(p, &end);
      if (end == p) break;
      seconds.push_back(v);
      p = end;
    }
    if (st0 != 0 || st1 != 0 || seconds.size() != static_cast<size_t>(steps)) {
      state.SkipWithError("a rank process failed (run this binary with --hookscope-bench-ddp-rank "
                          "0 DIR 50 and 1 DIR 50 to see its error)");
      return;
    }
    state.SetIterationTime(median_of(seconds));
    report_spread(state, seconds);
  }
}
BENCHMARK(BM_DdpTrainStep_MLP784x256x256x10_Batch64_World2_Processes)
    ->Iterations(1)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond);

// The rank processes of the benchmark above: RANK STORE_DIR STEPS.
int rank_main(int argc, char** argv) {
  if (argc < 5) return 2;
  openblas_set_num_threads(1);  // one thread per rank, as the PyTorch reference
  const int rank = std::atoi(argv[2]), steps = std::atoi(argv[4]);
  try {
    MlpRank r(rank, ddp::make_gloo_process_group(ddp::make_file_store(argv[3]), rank, 2));
    auto seconds = r.run(5, steps);
    if (rank == 0) {
      for (double s : seconds) std::printf("%.9f\n", s);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "rank %d: %s\n", rank, e.what());
    return 1;
  }
  return 0;
}

void BM_DdpTrainStepRecordingOverhead_MLP784x256x256x10_Batch64_World2(benchmark::State& state) {
  openblas_set_num_threads(1);
  const int world = 2, warmup = 5, block = 50;
  const int pairs = static_cast<int>(state.max_iterations);
  const std::string path = (std::filesystem::temp_directory_path() /
                            ("hookscope-bench-overhead-" + std::to_string(::getpid()) + ".hstrace"))
                               .string();
  trace::FileRecorder recorder(path);
  recorder.start();
  recorder.pause();
  auto store = ddp::make_hash_store();
  std::barrier sync(world);
  std::vector<double> off_s, on_s, pair_ratios;
  double cpu_off_s = 0, cpu_on_s = 0, proc_off_s = 0, proc_on_s = 0;
  with_peers(world, [&](int rank) {
    MlpRank r(rank, ddp::make_gloo_process_group(store, rank, world));
    r.run(warmup, 0);
    // One pair = a block off and a block on; the order alternates per pair.
    auto run_block = [&](bool on, std::vector<double>* times) {
      sync.arrive_and_wait();
      if (rank == 0) on ? recorder.resume() : recorder.pause();
      sync.arrive_and_wait();
      const double cpu0 = thread_cpu_seconds(), proc0 = process_cpu_seconds();
      for (int i = 0; i < block; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        r.step();
        if (times) {
          times->push_back(
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
      }
      if (times) {
        (on ? cpu_on_s : cpu_off_s) += thread_cpu_seconds() - cpu0;
        (on ? proc_on_s : proc_off_s) += process_cpu_seconds() - proc0;
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
      // This pair's blocks, side by side: drift in the host's load hits both.
      std::vector<double> on_block(on_s.end() - block, on_s.end()), off_block(off_s.end() - block, off_s.end());
      pair_ratios.push_back(median_of(on_block) / median_of(off_block));
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
  // The median over pairs of (on block's median / off block's median): the
  // wall-time figure least moved by the host's load changing during the run.
  state.counters["paired_overhead_pct"] = (median_of(pair_ratios) - 1) * 100;
  // CPU time is what recording adds; the wall time above also carries the
  // host's scheduling noise (a block's median moves by 10-15% either way).
  const double steps_each = static_cast<double>(on_s.size());
  state.counters["rank0_cpu_off_ms"] = cpu_off_s / steps_each * 1e3;
  state.counters["rank0_cpu_on_ms"] = cpu_on_s / steps_each * 1e3;
  state.counters["rank0_cpu_overhead_pct"] = (cpu_on_s / cpu_off_s - 1) * 100;
  state.counters["process_cpu_off_ms"] = proc_off_s / steps_each * 1e3;
  state.counters["process_cpu_on_ms"] = proc_on_s / steps_each * 1e3;
  state.counters["events_per_step"] = events / static_cast<double>(on_s.size());
}
BENCHMARK(BM_DdpTrainStepRecordingOverhead_MLP784x256x256x10_Batch64_World2)
    ->Iterations(30)
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

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], kRankFlag) == 0) return rank_main(argc, argv);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
