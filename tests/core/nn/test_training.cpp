// End to end: an MLP learns a seeded synthetic task with SGD.
#include <doctest/doctest.h>

#include "nn/nn.h"
#include "scenarios/autograd_demo.h"
#include "tensor/ops.h"
#include "trace/recorder.h"

using namespace hookscope;

TEST_CASE("an MLP trained with SGD on a seeded synthetic task: loss falls at least 10x") {
  nn::SyntheticClassification data(16, 4, /*seed=*/7);
  auto model = nn::mlp({16, 32, 4}, /*seed=*/7);
  nn::SGD sgd(model->parameters(), 0.2f);
  float first = 0, last = 0;
  for (int step = 0; step < 300; ++step) {
    auto b = data.batch(static_cast<uint64_t>(step), 64);
    Tensor loss = cross_entropy((*model)(b.x), b.y);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    if (step == 0) first = loss.item();
    last = loss.item();
  }
  MESSAGE("loss " << first << " -> " << last);
  CHECK(first / last >= 10.f);
}

TEST_CASE("parameters are named by position and carry their names") {
  auto model = nn::mlp({4, 8, 8, 2}, 1);
  auto params = model->named_parameters();
  REQUIRE(params.size() == 6);
  CHECK(params[0].name == "0.weight");
  CHECK(params[1].name == "0.bias");
  CHECK(params[4].name == "4.weight");
  CHECK(params[0].tensor.shape() == Shape{8, 4});
  CHECK(params[4].tensor.name() == "4.weight");
}

TEST_CASE("shards of all ranks make up the global batch") {
  nn::SyntheticClassification data(3, 2, 5);
  auto full = data.batch(4, 8, 0, 1);
  auto r0 = data.batch(4, 8, 0, 2);
  auto r1 = data.batch(4, 8, 1, 2);
  auto fx = full.x.to_vector();
  auto x0 = r0.x.to_vector(), x1 = r1.x.to_vector();
  x0.insert(x0.end(), x1.begin(), x1.end());
  CHECK(fx == x0);
  CHECK_THROWS_WITH(data.batch(0, 7, 0, 2), doctest::Contains("cannot be split evenly"));
}

TEST_CASE("the autograd demo adds, fires and removes hooks of every kind") {
  trace::MemoryRecorder rec;
  rec.start();
  auto result = scenarios::run_autograd_demo({.steps = 4, .seed = 3});
  rec.finish();
  CHECK(result.losses.size() == 4);
  CHECK(result.stale_removals_refused == 1);
  bool seen[trace::kNumHookKinds][3] = {};
  for (const auto& e : rec.events()) {
    int col = e.kind == trace::EventKind::kHookAdded   ? 0
              : e.kind == trace::EventKind::kHookFired ? 1
              : e.kind == trace::EventKind::kHookRemoved ? 2
                                                          : -1;
    if (col >= 0) seen[e.sub][col] = true;
  }
  for (HookKind k : {HookKind::kTensorPre, HookKind::kPre, HookKind::kPost,
                     HookKind::kPostAccumulate}) {
    CAPTURE(trace::to_string(k));
    for (int c = 0; c < 3; ++c) CHECK(seen[static_cast<int>(k)][c]);
  }
}
