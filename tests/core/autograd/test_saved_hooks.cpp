// Saved-tensor hooks as torch.autograd.graph.saved_tensors_hooks
// (docs/semantics.md H1-H5; Note [Saved tensor hooks]).
#include <doctest/doctest.h>

#include <any>
#include <cmath>
#include <vector>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "tensor/ops.h"
#include "trace/recorder.h"
#include "testing/test_util.h"

using namespace hookscope;

namespace {
Tensor leaf(std::vector<float> v) {
  const int64_t n = static_cast<int64_t>(v.size());
  return Tensor::from_vector({n}, std::move(v)).set_requires_grad(true);
}
}  // namespace

TEST_CASE("saved hooks: pack runs when the op saves, unpack when its Function runs, and backward uses what unpack returns") {
  Tensor x = leaf({1, 2});
  Tensor w = leaf({3, 4});
  int packs = 0, unpacks = 0;
  std::vector<std::vector<float>> packed_values;
  Tensor y;
  {
    SavedTensorsHooks hooks(
        [&](const Tensor& t) -> std::any {
          ++packs;
          packed_values.push_back(t.to_vector());
          return t.clone();  // e.g. an offloaded copy
        },
        [&](const std::any& p) {
          ++unpacks;
          // A deliberately different tensor: proves backward computes with it.
          return mul_scalar(std::any_cast<Tensor>(p), 10.f);
        });
    y = mul(x, w);  // MulBackward0 saves other_ (w), then self_ (x), as PyTorch 2.x
  }
  CHECK(packs == 2);
  CHECK(unpacks == 0);
  CHECK(packed_values == std::vector<std::vector<float>>{{3, 4}, {1, 2}});
  // The context is gone; the hooks bound at save time still unpack.
  sum(y).backward();
  CHECK(unpacks == 2);
  CHECK(x.grad().to_vector() == std::vector<float>{30, 40});  // 10 * w
  CHECK(w.grad().to_vector() == std::vector<float>{10, 20});  // 10 * x
}

TEST_CASE("saved hooks: nothing is packed without history - the innermost context packs") {
  Tensor x = leaf({1, 2});
  Tensor c = Tensor::from_vector({2}, {1, 1});
  int outer = 0, inner = 0;
  SavedTensorsHooks outer_hooks([&](const Tensor& t) -> std::any { ++outer; return t; },
                                [](const std::any& p) { return std::any_cast<Tensor>(p); });
  mul(c, c);  // no input requires grad: no Function, nothing saved
  {
    NoGradGuard no_grad;
    mul(x, x);
  }
  CHECK(outer == 0);
  {
    SavedTensorsHooks inner_hooks([&](const Tensor& t) -> std::any { ++inner; return t; },
                                  [](const std::any& p) { return std::any_cast<Tensor>(p); });
    tanh(x);
  }
  CHECK(inner == 1);
  CHECK(outer == 0);
  exp(x);
  CHECK(outer == 1);
}

TEST_CASE("saved hooks: without retain_graph a second backward is refused - with it unpack runs again") {
  Tensor x = leaf({0.5f});
  int unpacks = 0;
  Tensor loss;
  {
    SavedTensorsHooks hooks([](const Tensor& t) -> std::any { return t; },
                            [&](const std::any& p) { ++unpacks; return std::any_cast<Tensor>(p); });
    loss = sum(tanh(x));
  }
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  CHECK(unpacks == 2);
  CHECK_THROWS_WITH(loss.backward(), doctest::Contains("second time"));
  CHECK(unpacks == 2);
}

TEST_CASE("saved hooks: disable_saved_tensors_hooks refuses new contexts with its message") {
  DisableSavedTensorsHooks off("saved tensor hooks are off in this region");
  CHECK_THROWS_WITH_AS(SavedTensorsHooks([](const Tensor& t) -> std::any { return t; },
                                         [](const std::any& p) { return std::any_cast<Tensor>(p); }),
                       "saved tensor hooks are off in this region", std::logic_error);
}

TEST_CASE("saved hooks in the trace: one packed / unpacked event per call, with the Function, slot and owner") {
  Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4}).set_requires_grad(true);
  Tensor b = Tensor::from_vector({2, 2}, {0, 1, 1, 0}).set_requires_grad(true);
  const OwnerId owner = create_owner(OwnerKind::kUser, "offloader");
  trace::MemoryRecorder rec;
  rec.start();
  Tensor m;
  {
    SavedTensorsHooks hooks([](const Tensor& t) -> std::any { return t; },
                            [](const std::any& p) { return std::any_cast<Tensor>(p); }, owner);
    m = matmul(a, b);
  }
  const uint64_t mm = m.grad_fn()->id();
  sum(m).backward();
  rec.finish();
  std::vector<uint64_t> packed_slots, unpacked_slots;
  for (const auto& e : rec.events()) {
    if (e.kind == trace::EventKind::kSavedTensorPacked) {
      CHECK(e.node == mm);
      CHECK(e.owner == owner);
      packed_slots.push_back(e.arg);
    }
    if (e.kind == trace::EventKind::kSavedTensorUnpacked) {
      CHECK(e.node == mm);
      CHECK(e.owner == owner);
      unpacked_slots.push_back(e.arg);
    }
  }
  CHECK(packed_slots == std::vector<uint64_t>{0, 1});
  CHECK(unpacked_slots == std::vector<uint64_t>{0, 1});
  destroy_owner(owner);
}
