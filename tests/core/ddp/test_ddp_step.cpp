// The DDP step's copies and overlap (what bench_ddp times): gradients as bucket views,
// AccumulateGrad stealing the incoming gradient, buckets reduced during the
// backward.
#include <doctest/doctest.h>

#include <thread>

#include "autograd/node.h"
#include "ddp/ddp.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "testing/gloo_ranks.h"
#include "testing/test_util.h"
#include "trace/emit.h"
#include "trace/recorder.h"

using namespace hookscope;

TEST_CASE("AccumulateGrad keeps an incoming gradient nobody else holds, and copies a shared one") {
  Tensor w = Tensor::from_vector({3}, {1.f, 2.f, 3.f});
  w.set_requires_grad(true);
  const float* seen = nullptr;
  w.register_hook([&](const Tensor& g) {
    seen = g.data();
    return Tensor();
  });
  sum(mul(w, w)).backward();
  REQUIRE(w.grad().defined());
  CHECK(w.grad().data() == seen);  // stolen, not cloned
  CHECK(w.grad().to_vector() == std::vector<float>{2.f, 4.f, 6.f});

  // A hook that returns a tensor the user keeps: .grad must not alias it.
  Tensor v = Tensor::from_vector({2}, {1.f, 1.f});
  v.set_requires_grad(true);
  Tensor kept = Tensor::from_vector({2}, {5.f, 6.f});
  v.register_hook([&](const Tensor&) { return kept; });
  sum(mul(v, v)).backward();
  kept.data()[0] = -1.f;
  CHECK(v.grad().to_vector() == std::vector<float>{5.f, 6.f});
}

TEST_CASE("DDP gradients are views of the buckets: reused every step, accumulated in place") {
  testing::on_two_ranks([](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    auto model = nn::mlp({6, 12, 3}, 5);
    ddp::DdpOptions opts;
    opts.reducer.first_bucket_bytes = 64;
    opts.reducer.bucket_cap_bytes = 256;
    ddp::DistributedDataParallel d(model, pg, opts);
    nn::SyntheticClassification data(6, 3, 11);
    auto shard = data.batch(0, 16, r, 2);
    auto params = model->parameters();
    nn::SGD sgd(params, 0.f);  // lr 0: the weights stay, so the gradients repeat

    cross_entropy(d(shard.x), shard.y).backward();
    std::vector<const float*> where;
    std::vector<std::vector<float>> first;
    for (auto& p : params) {
      where.push_back(p.grad().data());
      first.push_back(p.grad().to_vector());
    }
    sgd.zero_grad();  // set to None
    cross_entropy(d(shard.x), shard.y).backward();
    for (size_t i = 0; i < params.size(); ++i) {
      CAPTURE(i);
      CHECK(params[i].grad().data() == where[i]);  // the same bucket range again
      CHECK(params[i].grad().to_vector() == first[i]);
    }
    // Not zeroed: AccumulateGrad adds into the view, the bucket is reduced
    // again: twice the averaged gradient, as without views.
    cross_entropy(d(shard.x), shard.y).backward();
    for (size_t i = 0; i < params.size(); ++i) {
      CAPTURE(i);
      auto g = params[i].grad().to_vector();
      for (size_t j = 0; j < g.size(); ++j) {
        CHECK(g[j] == doctest::Approx(2 * first[i][j]).epsilon(1e-5).scale(1e-6));
      }
    }
  });
}

TEST_CASE("a model with several buckets starts reducing bucket 0 before the backward ends") {
  trace::MemoryRecorder rec;
  rec.start();
  testing::on_two_ranks([](int r, std::shared_ptr<ddp::ProcessGroup> pg) {
    auto model = nn::mlp({32, 64, 64, 64, 10}, 3);
    ddp::DdpOptions opts;
    opts.reducer.first_bucket_bytes = 1024;
    opts.reducer.bucket_cap_bytes = 4096;
    ddp::DistributedDataParallel d(model, pg, opts);
    REQUIRE(d.reducer().num_buckets() > 2);
    Tensor x = Tensor::randn({8, 32}, 1.f, 1 + static_cast<uint64_t>(r));
    std::vector<int64_t> y(8, 1);
    cross_entropy(d(x), y).backward();
  });
  rec.finish();
  for (uint16_t rank : {0, 1}) {
    CAPTURE(rank);
    uint64_t first_begin = UINT64_MAX, last_fire = 0;
    uint32_t first_bucket = UINT32_MAX;
    for (const auto& e : testing::recorded(rec)) {
      if (e.rank != rank) continue;
      // (The broadcast of rank 0's weights at construction is a collective too.)
      if (e.kind == trace::EventKind::kCollectiveBegin &&
          e.sub == static_cast<uint8_t>(trace::CollectiveOp::kAllreduce) && e.t_ns < first_begin) {
        first_begin = e.t_ns;
        first_bucket = e.actor;
      }
      if (e.kind == trace::EventKind::kHookFired) last_fire = std::max(last_fire, e.t_ns);
    }
    CHECK(first_bucket == 0);
    CHECK(first_begin < last_fire);
  }
}
