// NCCL process group and DDP on GPUs (suite "gpu", skipped with a MESSAGE
// where no GPU is usable), and what `--device cuda` does on a machine
// without one (runs everywhere).
#include <doctest/doctest.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <thread>
#include <vector>

#include "analysis/model.h"
#include "analysis/synthetic.h"
#include "ddp/process_group.h"
#include "export/export.h"
#include "scenarios/ddp_scenarios.h"
#include "tensor/cuda_memory.h"
#include "tensor/ops.h"
#include "testing/test_cuda_util.h"
#include "testing/test_util.h"
#include "trace/event.h"

using namespace hookscope;
using hookscope::testing::contains;
using hookscope::testing::gpu_or_skip;
using hookscope::testing::kGpuTolerance;
using hookscope::testing::max_abs_diff;

namespace {

scenarios::DdpScenarioOptions small_recovery(Device device, const std::string& backend) {
  scenarios::DdpScenarioOptions o;
  o.name = "recovery";
  o.world_size = 2;
  o.steps = 6;
  o.seed = 3;
  o.device = device;
  o.backend = backend;
  // NCCL survivors notice a dead peer only by this timeout (Gloo sees the
  // socket close at once): short, so the test stays quick.
  o.timeout = std::chrono::milliseconds(2000);
  return o;
}

// Runs fn(rank) on `world` threads and rethrows the first failure.
template <typename Fn>
void on_threads(int world, Fn&& fn) {
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(r);
      } catch (...) {
        errors[static_cast<size_t>(r)] = std::current_exception();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (auto& e : errors) {
    if (e) std::rethrow_exception(e);
  }
}

}  // namespace

// ---- without a GPU (every machine) ------------------------------------------------

TEST_CASE("cuda: --device cuda without a usable GPU is a usage error that says use --device cpu") {
  if (cuda_available()) {
    MESSAGE("a GPU is present: the no-GPU messages are not checked here");
    return;
  }
  auto o = small_recovery(Device::kCUDA, "auto");
  CHECK_THROWS_WITH_AS(scenarios::validate(o), doctest::Contains("use --device cpu"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(scenarios::validate(o), doctest::Contains("no CUDA device is usable"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(ddp::make_nccl_process_group(ddp::make_hash_store(), 0, 1),
                       doctest::Contains("cannot create an NCCL process group"),
                       std::runtime_error);
  CHECK_FALSE(ddp::nccl_usable(1));
  CHECK(cuda_current_device() == -1);
  CHECK_THROWS_AS(cuda_set_device(0), std::runtime_error);
  CHECK(cuda_memory_stats().reserved_bytes == 0);
  // As a user meets it: every scenario, recorded or launched, exits 2 with the advice.
  for (const char* cmd : {"record recovery --device cuda", "record autograd-demo --device cuda",
                          "record shared-module --device cuda --backend nccl",
                          "launch unused-parameter --nproc 2 --device cuda -o /tmp/hs-gpu-none"}) {
    CAPTURE(cmd);
    auto r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " " + cmd);
    CHECK(r.exit == 2);
    CHECK(r.out.find("no CUDA device is usable") != std::string::npos);
    CHECK(r.out.find("use --device cpu") != std::string::npos);
  }
}

TEST_CASE("ddp: backend choice and its errors") {
  auto o = small_recovery(Device::kCPU, "auto");
  CHECK(scenarios::resolve_backend(o) == "gloo");
  o.backend = "nccl";
  CHECK_THROWS_WITH_AS(scenarios::validate(o), doctest::Contains("--backend nccl needs --device cuda"),
                       std::invalid_argument);
  o.backend = "mpi";
  CHECK_THROWS_WITH_AS(scenarios::validate(o), doctest::Contains("expected auto, gloo or nccl"),
                       std::invalid_argument);
  o.backend = "gloo";
  CHECK_NOTHROW(scenarios::validate(o));
  std::string why;
  if (!ddp::nccl_usable(2, &why)) CHECK_FALSE(why.empty());
}

TEST_CASE("trace: collective placement encodes device and stream - host is 0") {
  CHECK(trace::kPlacementHost == 0);
  const uint32_t p = trace::cuda_placement(3, 7);
  CHECK(p != trace::kPlacementHost);
  CHECK(trace::placement_device(p) == 3);
  CHECK(trace::placement_stream(p) == 7);
  CHECK(trace::placement_device(trace::cuda_placement(0, 1)) == 0);
  CHECK(trace::placement_device(trace::kPlacementHost) == -1);
}

TEST_CASE("trace: a GPU collective's device and stream show in describe and the Chrome export") {
  analysis::TraceBuilder b;
  const uint32_t reducer = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
  b.reducer_constructed(reducer, 1, 1);
  const uint64_t on_gpu = b.bucket_ready(reducer, 0, 1);
  b.push(trace::EventKind::kCollectiveEnd, 0, 0, on_gpu, 2'500'000, reducer,
         trace::cuda_placement(1, 3));
  const uint64_t on_host = b.bucket_ready(reducer, 0, 1);
  b.collective_end(reducer, on_host);
  analysis::Model m(b.take());
  std::vector<std::string> ends;
  for (size_t i = 0; i < m.num_events(); ++i) {
    if (m.event(i).kind == trace::EventKind::kCollectiveEnd) ends.push_back(m.describe(i));
  }
  REQUIRE(ends.size() == 2);
  CHECK(ends[0].find("collective " + std::to_string(on_gpu) + " ok after 2.500 ms on cuda:1 stream 3") !=
        std::string::npos);
  CHECK(ends[1].find("cuda") == std::string::npos);
  char* buf = nullptr;
  size_t len = 0;
  std::FILE* f = ::open_memstream(&buf, &len);
  exporters::write_chrome_trace(m, f);
  std::fclose(f);
  const std::string json(buf, len);
  std::free(buf);
  CHECK(json.find(R"("device":"cuda:1","stream":3)") != std::string::npos);
}

TEST_CASE("ddp: tensor collectives on a Gloo group work in place on CPU tensors") {
  const std::vector<std::string> errors = testing::run_gloo_ranks(2, [&](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    Tensor t = Tensor::full({5}, static_cast<float>(r + 1));
    pg->allreduce_tensor(t)->wait();
    CHECK(t.to_vector() == std::vector<float>(5, 3.f));
    Tensor b = Tensor::full({3}, static_cast<float>(10 * r));
    auto w = pg->broadcast_tensor(b, 1);
    w->wait();
    CHECK(w->placement() == trace::kPlacementHost);
    CHECK(b.to_vector() == std::vector<float>(3, 10.f));
  });
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}

// ---- on GPUs ----------------------------------------------------------------------

TEST_CASE("nccl: allreduce, broadcast, barrier and allgather on every GPU (ranks as threads)" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  if (!ddp::nccl_compiled()) {
    MESSAGE("skipping: this build has no NCCL");
    return;
  }
  const int world = cuda_device_count();  // one GPU per rank
  MESSAGE("NCCL world size " << world << " (one rank per GPU)");
  auto store = ddp::make_hash_store();
  on_threads(world, [&](int r) {
    auto pg = ddp::make_nccl_process_group(store, r, world);
    CHECK(pg->backend() == "nccl");
    CHECK(pg->device() == Device::kCUDA);
    CHECK(pg->device_index() == r);
    CHECK(cuda_current_device() == r);
    // 1M floats: several NCCL chunks.
    const int64_t n = 1 << 20;
    Tensor t = Tensor::uniform({n}, -1.f, 1.f, 100).to(Device::kCUDA);
    t = mul_scalar(t, static_cast<float>(r + 1));
    auto w = pg->allreduce_tensor(t);
    w->wait();
    CHECK(trace::placement_device(w->placement()) == r);
    CHECK(trace::placement_stream(w->placement()) > 0);
    // One rank: NCCL queues nothing for an in-place allreduce, so the two
    // CUDA events around it may read the same time.
    if (world > 1) CHECK(w->duration_ns() > 0);
    // sum over ranks of (r + 1) * u = u * world * (world + 1) / 2
    Tensor expect = Tensor::uniform({n}, -1.f, 1.f, 100);
    const float factor = static_cast<float>(world * (world + 1)) / 2.f;
    auto e = expect.to_vector();
    for (float& v : e) v *= factor;
    CHECK(max_abs_diff(t.to_vector(), e) <= kGpuTolerance * factor);
    // Broadcast from the last rank, a CPU tensor (staged through the GPU).
    Tensor b = Tensor::full({7}, static_cast<float>(r));
    pg->broadcast_tensor(b, world - 1)->wait();
    CHECK(b.device() == Device::kCPU);
    CHECK(b.to_vector() == std::vector<float>(7, static_cast<float>(world - 1)));
    pg->barrier()->wait();
    auto all = pg->allgather("rank" + std::to_string(r));
    REQUIRE(all.size() == static_cast<size_t>(world));
    for (int q = 0; q < world; ++q) CHECK(all[static_cast<size_t>(q)] == "rank" + std::to_string(q));
  });
}

TEST_CASE("nccl: a collective a peer never joins times out, aborts the communicator, and a new "
          "group works" * doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  if (!ddp::nccl_compiled() || cuda_device_count() < 2) {
    MESSAGE("skipping: needs NCCL and 2 GPUs (one per rank), found " << cuda_device_count());
    return;
  }
  auto store = ddp::make_hash_store();
  ddp::ProcessGroupOptions opts;
  opts.timeout = std::chrono::milliseconds(1500);
  std::atomic<bool> rank0_gave_up{false};
  on_threads(2, [&](int r) {
    auto pg = ddp::make_nccl_process_group(ddp::prefixed(store, "g0/"), r, 2, opts);
    if (r == 0) {
      Tensor x = Tensor::full({1024}, 1.f, Device::kCUDA);
      auto w = pg->allreduce_tensor(x);
      try {
        w->wait();
        FAIL("the allreduce completed although rank 1 never joined it");
      } catch (const ddp::CollectiveError& e) {
        CHECK(e.status() == trace::CollectiveStatus::kTimeout);
        CHECK(std::string(e.what()).find("ncclCommAbort") != std::string::npos);
      }
      try {
        pg->allreduce_tensor(x)->wait();
        FAIL("a collective on an aborted group succeeded");
      } catch (const ddp::CollectiveError& e) {
        CHECK(e.status() == trace::CollectiveStatus::kAborted);
      }
      rank0_gave_up = true;
    } else {
      while (!rank0_gave_up) std::this_thread::sleep_for(std::chrono::milliseconds(10));
      pg->abort();  // as the scenario does on a failed rank
    }
    pg.reset();
    // Recovery: a new group (new unique id under a new prefix) on the same GPUs.
    auto fresh = ddp::make_nccl_process_group(ddp::prefixed(store, "g1/"), r, 2, opts);
    Tensor y = Tensor::full({1024}, static_cast<float>(r + 1), Device::kCUDA);
    fresh->allreduce_tensor(y)->wait();
    CHECK(y.to_vector() == std::vector<float>(1024, 3.f));
  });
}

TEST_CASE("cuda: DDP scenarios on the GPU reach the CPU's parameters" * doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  const auto cpu = scenarios::run_ddp_scenario(small_recovery(Device::kCPU, "gloo"));
  std::vector<std::string> backends = {"gloo"};  // CUDA tensors, gradients staged through host
  if (ddp::nccl_usable(2)) backends.push_back("nccl");
  else MESSAGE("NCCL with 2 ranks needs 2 GPUs: only gloo staging is checked");
  for (const std::string& backend : backends) {
    CAPTURE(backend);
    auto o = small_recovery(Device::kCUDA, backend);
    REQUIRE_NOTHROW(scenarios::validate(o));
    trace::TraceData t;
    scenarios::DdpScenarioResult gpu;
    t = testing::record_trace([&] { gpu = scenarios::run_ddp_scenario(o); });
    MESSAGE(scenarios::format_result(o, gpu));
    CHECK(gpu.failures_injected == 1);
    CHECK(gpu.max_parameter_divergence <= kGpuTolerance);
    const scenarios::RankReport* c = nullptr;
    const scenarios::RankReport* g = nullptr;
    for (auto& r : cpu.ranks) if (!r.failed && r.rank == 0) c = &r;
    for (auto& r : gpu.ranks) if (!r.failed && r.rank == 0) g = &r;
    REQUIRE(c != nullptr);
    REQUIRE(g != nullptr);
    CHECK(g->error.empty());
    CHECK(max_abs_diff(c->final_parameters, g->final_parameters) <= kGpuTolerance);
    // Note [Collective placement]: NCCL collectives say where they ran.
    size_t ends = 0, on_gpu = 0;
    for (const auto& e : t.events) {
      if (e.kind != trace::EventKind::kCollectiveEnd) continue;
      ++ends;
      if (e.actor != trace::kPlacementHost) {
        ++on_gpu;
        CHECK(trace::placement_device(e.actor) == e.rank % cuda_device_count());
        CHECK(trace::placement_stream(e.actor) > 0);
      }
    }
    CHECK(ends > 0);
    if (backend == "nccl") CHECK(on_gpu > 0);
    else CHECK(on_gpu == 0);
  }
}

TEST_CASE("cuda: every DDP scenario and the autograd demo run with --device cuda" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  for (const char* cmd :
       {"record autograd-demo --device cuda --steps 3",
        "record recovery --device cuda --steps 6 --timeout-ms 2000",
        "record shared-module --device cuda --steps 4",
        "record unused-parameter --device cuda --steps 3",
        "record recovery --device cuda --backend gloo --steps 6",
        "launch recovery --nproc 2 --device cuda --steps 6 --timeout-ms 3000 -o /tmp/hs-gpu-launch"}) {
    CAPTURE(cmd);
    auto r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " " + cmd);
    MESSAGE(r.out);
    CHECK(r.exit == 0);
  }
  // marked-twice reports its error and still exits 0 from record.
  auto r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) +
                                " record marked-twice --device cuda --steps 2");
  CHECK(r.out.find("marked ready twice") != std::string::npos);
}

#if HOOKSCOPE_WITH_NCCL
#include "ddp/nccl_api.h"

// Note [GPU libraries opened on first use]: libnccl is not linked; the
// first group opens it. No GPU is needed to open it and look its functions up.
TEST_CASE("nccl: libnccl opens on first use with every function the group calls") {
  const ddp::NcclApi& api = ddp::nccl();  // throws, naming libnccl.so.N, where it is missing
  for (const void* fn : {(const void*)api.get_unique_id, (const void*)api.comm_init_rank_config,
                         (const void*)api.comm_get_async_error, (const void*)api.comm_finalize,
                         (const void*)api.comm_destroy, (const void*)api.comm_abort,
                         (const void*)api.all_reduce, (const void*)api.broadcast,
                         (const void*)api.get_error_string, (const void*)api.get_last_error}) {
    CHECK(fn != nullptr);
  }
  CHECK(std::string(api.get_error_string(ncclInvalidArgument)).find("invalid argument") !=
        std::string::npos);
}
#endif
