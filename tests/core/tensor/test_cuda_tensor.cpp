// CUDA tensors against the CPU path: every op forward and backward, cuBLAS
// matmul in every transpose combination, an MLP training step, the caching
// allocator, device-mismatch errors. Suite "gpu": each test skips with a
// MESSAGE where no GPU is usable.
#include <doctest/doctest.h>

#include <functional>
#include <string>
#include <vector>

#include "autograd/node.h"
#include "nn/nn.h"
#include "tensor/cuda_memory.h"
#include "tensor/kernels.h"
#include "tensor/ops.h"
#include "testing/test_cuda_util.h"

using namespace hookscope;
using hookscope::testing::gpu_or_skip;
using hookscope::testing::kGpuTolerance;
using hookscope::testing::max_abs_diff;

namespace {

constexpr Device kCUDA = Device::kCUDA;

// Runs `f` on CPU leaves and on copies of them on the GPU, then backward of
// sum(f(...) * weights) on both; compares outputs and every input gradient.
void check_op(const char* name, const std::vector<Tensor>& cpu_inputs,
              const std::function<Tensor(const std::vector<Tensor>&)>& f) {
  CAPTURE(name);
  std::vector<Tensor> cpu, gpu;
  for (const Tensor& t : cpu_inputs) {
    cpu.push_back(t.clone().set_requires_grad(true));
    gpu.push_back(t.to(kCUDA).set_requires_grad(true));
  }
  Tensor yc = f(cpu), yg = f(gpu);
  REQUIRE(yg.device() == kCUDA);
  CHECK(max_abs_diff(yc, yg) <= kGpuTolerance);
  // A non-uniform upstream gradient, so every backward formula matters.
  Tensor w = Tensor::uniform(yc.shape(), -1.f, 1.f, 99);
  sum(mul(yc, w)).backward();
  sum(mul(yg, w.to(kCUDA))).backward();
  for (size_t i = 0; i < cpu.size(); ++i) {
    CAPTURE(i);
    REQUIRE(cpu[i].grad().defined());
    REQUIRE(gpu[i].grad().defined());
    CHECK(gpu[i].grad().device() == kCUDA);
    CHECK(max_abs_diff(cpu[i].grad(), gpu[i].grad()) <= kGpuTolerance);
  }
}

}  // namespace

TEST_CASE("cuda: elementwise ops, reductions and losses match the CPU, forward and backward" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  const Tensor a = Tensor::uniform({7, 33}, -2.f, 2.f, 1);
  const Tensor b = Tensor::uniform({7, 33}, 0.5f, 2.f, 2);  // no zeros: div, log
  const Tensor bias = Tensor::uniform({33}, -1.f, 1.f, 3);
  using V = std::vector<Tensor>;
  check_op("add", {a, b}, [](const V& x) { return add(x[0], x[1]); });
  check_op("sub", {a, b}, [](const V& x) { return sub(x[0], x[1]); });
  check_op("mul", {a, b}, [](const V& x) { return mul(x[0], x[1]); });
  check_op("div", {a, b}, [](const V& x) { return div(x[0], x[1]); });
  check_op("mul_scalar", {a}, [](const V& x) { return mul_scalar(x[0], -1.5f); });
  check_op("neg", {a}, [](const V& x) { return neg(x[0]); });
  check_op("relu", {a}, [](const V& x) { return relu(x[0]); });
  check_op("tanh", {a}, [](const V& x) { return hookscope::tanh(x[0]); });
  check_op("sigmoid", {a}, [](const V& x) { return sigmoid(x[0]); });
  check_op("exp", {a}, [](const V& x) { return hookscope::exp(x[0]); });
  check_op("log", {b}, [](const V& x) { return hookscope::log(x[0]); });
  check_op("add_bias", {a, bias}, [](const V& x) { return add_bias(x[0], x[1]); });
  check_op("transpose", {a}, [](const V& x) { return transpose(x[0]); });
  check_op("reshape", {a}, [](const V& x) { return reshape(x[0], {33, -1}); });
  check_op("sum", {a}, [](const V& x) { return sum(x[0]); });
  check_op("mean", {a}, [](const V& x) { return mean(x[0]); });
  check_op("mse_loss", {a, b}, [](const V& x) { return mse_loss(x[0], x[1]); });
  check_op("log_softmax", {a}, [](const V& x) { return log_softmax(x[0]); });
  const std::vector<int64_t> target = {0, 32, 5, 5, 17, 1, 30};
  check_op("nll_loss", {a}, [&](const V& x) { return nll_loss(log_softmax(x[0]), target); });
  check_op("cross_entropy", {a},
           [&](const V& x) { return cross_entropy(x[0], target); });
}

TEST_CASE("cuda: log_softmax over rows wider than a block, large sums" * doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  // 1000 columns: several elements per thread in the row reductions.
  const Tensor wide = Tensor::uniform({3, 1000}, -20.f, 20.f, 4);
  CHECK(max_abs_diff(log_softmax(wide), log_softmax(wide.to(kCUDA))) <= kGpuTolerance);
  // A million elements in one sum: compared relative to its size.
  const Tensor big = Tensor::uniform({1000, 1000}, 0.f, 1.f, 5);
  const float cpu = sum(big).item();
  const float gpu = sum(big.to(kCUDA)).item();
  CHECK(std::fabs(cpu - gpu) <= 1e-6f * std::fabs(cpu) + kGpuTolerance);
}

TEST_CASE("cuda: cuBLAS matmul matches OpenBLAS for every transpose combination" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  // Non-square, all sizes different, so a swapped leading dimension shows.
  const int64_t m = 5, n = 7, k = 3;
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      CAPTURE(ta);
      CAPTURE(tb);
      const Tensor a = Tensor::uniform(ta ? Shape{k, m} : Shape{m, k}, -1.f, 1.f, 10 + ta);
      const Tensor b = Tensor::uniform(tb ? Shape{n, k} : Shape{k, n}, -1.f, 1.f, 20 + tb);
      Tensor oc = Tensor::empty({m, n});
      kernels_for(Device::kCPU).matmul(a, ta, b, tb, oc);
      Tensor ag = a.to(kCUDA), bg = b.to(kCUDA);
      Tensor og = Tensor::empty({m, n}, kCUDA);
      kernels_for(kCUDA).matmul(ag, ta, bg, tb, og);
      CHECK(max_abs_diff(oc, og) <= kGpuTolerance);
    }
  }
  using V = std::vector<Tensor>;
  check_op("matmul", {Tensor::uniform({4, 6}, -1.f, 1.f, 30), Tensor::uniform({6, 9}, -1.f, 1.f, 31)},
           [](const V& x) { return matmul(x[0], x[1]); });
  check_op("linear",
           {Tensor::uniform({4, 6}, -1.f, 1.f, 32), Tensor::uniform({9, 6}, -1.f, 1.f, 33),
            Tensor::uniform({9}, -1.f, 1.f, 34)},
           [](const V& x) { return linear(x[0], x[1], x[2]); });
  // A [0, 4] @ [4, 3] product and a k = 0 one (zeros).
  CHECK(matmul(Tensor::zeros({0, 4}, kCUDA), Tensor::zeros({4, 3}, kCUDA)).numel() == 0);
  CHECK(matmul(Tensor::zeros({2, 0}, kCUDA), Tensor::zeros({0, 3}, kCUDA)).to_vector() ==
        std::vector<float>(6, 0.f));
}

TEST_CASE("cuda: an MLP trains on the GPU as on the CPU (forward, backward, SGD)" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  nn::SyntheticClassification data(16, 4, 7);
  auto cpu = nn::mlp({16, 64, 64, 4}, 7, Device::kCPU);
  auto gpu = nn::mlp({16, 64, 64, 4}, 7, kCUDA);
  nn::SGD sgd_c(cpu->parameters(), 0.1f), sgd_g(gpu->parameters(), 0.1f);
  float worst = 0.f;
  for (int step = 0; step < 5; ++step) {
    auto batch = data.batch(static_cast<uint64_t>(step), 32);
    Tensor lc = cross_entropy((*cpu)(batch.x), batch.y);
    Tensor lg = cross_entropy((*gpu)(batch.x.to(kCUDA)), batch.y);
    CHECK(std::fabs(lc.item() - lg.item()) <= kGpuTolerance);
    sgd_c.zero_grad();
    sgd_g.zero_grad();
    lc.backward();
    lg.backward();
    auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
    REQUIRE(pc.size() == pg.size());
    for (size_t i = 0; i < pc.size(); ++i) {
      CAPTURE(pc[i].name);
      REQUIRE(pg[i].tensor.grad().defined());
      CHECK(pg[i].tensor.grad().device() == kCUDA);
      worst = std::max(worst, max_abs_diff(pc[i].tensor.grad(), pg[i].tensor.grad()));
    }
    sgd_c.step();
    sgd_g.step();
  }
  auto pc = cpu->named_parameters(), pg = gpu->named_parameters();
  for (size_t i = 0; i < pc.size(); ++i) {
    worst = std::max(worst, max_abs_diff(pc[i].tensor, pg[i].tensor));
  }
  MESSAGE("largest |GPU - CPU| over 5 steps of gradients and parameters: " << worst);
  CHECK(worst <= kGpuTolerance);
}

TEST_CASE("cuda: AccumulateGrad accumulates on the device across backward passes" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  Tensor w = Tensor::uniform({3, 4}, -1.f, 1.f, 40).to(kCUDA).set_requires_grad(true);
  Tensor x = Tensor::uniform({3, 4}, -1.f, 1.f, 41).to(kCUDA);
  sum(mul(w, x)).backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().device() == kCUDA);
  CHECK(max_abs_diff(w.grad(), x) <= kGpuTolerance);
  sum(mul(w, x)).backward();  // accumulates: grad = 2x
  CHECK(max_abs_diff(w.grad(), mul_scalar(x, 2.f)) <= kGpuTolerance);
  // A post-accumulate hook sees the device gradient.
  Device seen = Device::kCPU;
  w.register_post_accumulate_grad_hook([&](const Tensor& p) { seen = p.grad().device(); });
  sum(w).backward();
  CHECK(seen == kCUDA);
}

TEST_CASE("cuda: host <-> device copies round-trip exactly" * doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  for (int64_t n : {1, 3, 4, 5, 1000, 1 << 20}) {
    CAPTURE(n);
    const Tensor h = Tensor::uniform({n}, -1e3f, 1e3f, static_cast<uint64_t>(n));
    const Tensor d = h.to(kCUDA);
    CHECK(d.device() == kCUDA);
    CHECK(d.device_index() == cuda_current_device());
    CHECK(d.to(Device::kCPU).to_vector() == h.to_vector());
    CHECK(d.clone().to_vector() == h.to_vector());
  }
  CHECK(Tensor::full({2, 3}, 2.5f, kCUDA).to_vector() == std::vector<float>(6, 2.5f));
  CHECK(Tensor::scalar(4.f).to(kCUDA).item() == 4.f);
  CHECK(Tensor::zeros({0}, kCUDA).to_vector().empty());
}

TEST_CASE("cuda: the caching allocator reuses freed blocks and counts them" *
          doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  cuda_synchronize();
  const CudaMemoryStats before = cuda_memory_stats();
  const int64_t n = 3 << 20;  // 12 MiB: a fresh size class for this test
  {
    Tensor t = Tensor::empty({n}, kCUDA);
    const CudaMemoryStats held = cuda_memory_stats();
    CHECK(held.allocated_bytes >= before.allocated_bytes + n * sizeof(float));
    CHECK(held.peak_allocated_bytes >= held.allocated_bytes);
    CHECK(held.reserved_bytes >= held.allocated_bytes);
  }
  const CudaMemoryStats freed = cuda_memory_stats();
  CHECK(freed.allocated_bytes == before.allocated_bytes);
  CHECK(freed.reserved_bytes >= before.reserved_bytes);  // kept in the cache
  {
    Tensor again = Tensor::empty({n}, kCUDA);  // the same block, no cudaMalloc
    const CudaMemoryStats reuse = cuda_memory_stats();
    CHECK(reuse.cuda_mallocs == freed.cuda_mallocs);
    CHECK(reuse.cache_hits == freed.cache_hits + 1);
    CHECK(reuse.reserved_bytes == freed.reserved_bytes);
  }
  // A training loop allocates the same sizes every step: after the first
  // step, nothing new is asked of the driver.
  auto model = nn::mlp({16, 32, 4}, 1, kCUDA);
  nn::SyntheticClassification data(16, 4, 1);
  auto step = [&] {
    model->zero_grad();
    auto b = data.batch(0, 8);
    cross_entropy((*model)(b.x.to(kCUDA)), b.y).backward();
  };
  step();
  const uint64_t mallocs = cuda_memory_stats().cuda_mallocs;
  for (int i = 0; i < 3; ++i) step();
  CHECK(cuda_memory_stats().cuda_mallocs == mallocs);
  cuda_empty_cache();
  const CudaMemoryStats emptied = cuda_memory_stats();
  CHECK(emptied.reserved_bytes == emptied.allocated_bytes);
  CHECK(emptied.cuda_frees > freed.cuda_frees);
}

TEST_CASE("cuda: device mismatches are errors naming both devices" * doctest::test_suite("gpu")) {
  if (!gpu_or_skip()) return;
  using hookscope::testing::contains;
  const std::string here = "cuda:" + std::to_string(cuda_current_device());
  const Tensor cpu = Tensor::uniform({2, 2}, -1.f, 1.f, 50);
  const Tensor gpu = cpu.to(kCUDA);
  CHECK_THROWS_WITH_AS(add(cpu, gpu), contains("got cpu and " + here), std::invalid_argument);
  CHECK_THROWS_WITH_AS(matmul(gpu, cpu), contains("got " + here + " and cpu"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(linear(cpu, gpu, Tensor::zeros({2}, kCUDA)),
                       contains("got cpu and " + here), std::invalid_argument);
  CHECK_THROWS_WITH_AS(mse_loss(gpu, cpu), contains("same device"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(gpu.data(), contains(here), std::logic_error);
  // Below the ops: a kernel given a CPU tensor.
  Tensor y = Tensor::zeros({2, 2}, kCUDA);
  CHECK_THROWS_WITH_AS(kernels_for(kCUDA).axpy(1.f, cpu, y), contains("got " + here + " and cpu"),
                       std::invalid_argument);
  // A leaf on the CPU receiving a gradient made on the GPU.
  Tensor leaf = cpu.clone().set_requires_grad(true).set_name("w");
  auto acc = leaf.grad_accumulator();
  CHECK_THROWS_WITH_AS(acc->apply({gpu}), contains("on " + here + " arrived for leaf 'w' on cpu"),
                       std::invalid_argument);
  if (cuda_device_count() < 2) {
    MESSAGE("one GPU: the cuda:0 vs cuda:1 mismatch is not checked");
    return;
  }
  const int previous = cuda_current_device();
  const int other = previous == 0 ? 1 : 0;
  cuda_set_device(other);
  const Tensor elsewhere = cpu.to(kCUDA);
  cuda_set_device(previous);
  CHECK(elsewhere.device_index() == other);
  CHECK_THROWS_WITH_AS(add(gpu, elsewhere),
                       contains("got " + here + " and cuda:" + std::to_string(other)),
                       std::invalid_argument);
}
