// The backward engine: retain_graph, grad(), reentrancy, errors.
#include <doctest/doctest.h>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "tensor/ops.h"

using namespace hookscope;

TEST_CASE("gradients accumulate across backward calls into .grad") {
  Tensor x = Tensor::from_vector({3}, {1, 2, 3}).set_requires_grad(true);
  sum(mul(x, x)).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{2, 4, 6});
  sum(mul(x, x)).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{4, 8, 12});
  x.zero_grad();
  CHECK_FALSE(x.grad().defined());
}

TEST_CASE("a second backward through freed buffers is a clear error - retain_graph allows it") {
  Tensor x = Tensor::from_vector({2}, {0.5f, -0.5f}).set_requires_grad(true);
  Tensor loss = sum(tanh(x));
  loss.backward();
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("backward through the graph a second time"),
                       std::runtime_error);

  Tensor y = Tensor::from_vector({2}, {0.5f, -0.5f}).set_requires_grad(true);
  Tensor l2 = sum(tanh(y));
  l2.backward({}, /*retain_graph=*/true);
  auto g1 = y.grad().to_vector();
  l2.backward();
  auto g2 = y.grad().to_vector();
  CHECK(g2[0] == doctest::Approx(2 * g1[0]));
}

TEST_CASE("grad() returns gradients without running AccumulateGrad") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  Tensor w = Tensor::from_vector({2}, {3, 4}).set_requires_grad(true);
  int acc_post_fired = 0, tensor_hook_fired = 0;
  x.grad_accumulator()->add_post_hook(
      [&](variable_list&, const variable_list&) { ++acc_post_fired; });
  x.register_hook([&](const Tensor&) { ++tensor_hook_fired; return Tensor(); });
  Tensor loss = sum(mul(x, w));
  auto g = autograd::grad({loss}, {x}, {}, /*retain_graph=*/true);
  CHECK(g[0].to_vector() == std::vector<float>{3, 4});
  CHECK_FALSE(x.grad().defined());
  CHECK_FALSE(w.grad().defined());
  CHECK(acc_post_fired == 0);
  CHECK(tensor_hook_fired == 1);  // tensor hooks see the captured gradient, as in PyTorch

  // Gradient w.r.t. a non-leaf.
  Tensor h = mul(x, w);
  Tensor l2 = sum(tanh(h));
  auto gh = autograd::grad({l2}, {h});
  CHECK(gh[0].shape() == Shape{2});

  // Unused inputs.
  Tensor unused = Tensor::from_vector({1}, {1}).set_requires_grad(true);
  Tensor l3 = sum(mul(x, w));
  CHECK_THROWS_WITH(autograd::grad({l3}, {unused}, {}, true), doctest::Contains("allow_unused"));
  auto gu = autograd::grad({l3}, {unused}, {}, false, /*allow_unused=*/true);
  CHECK_FALSE(gu[0].defined());
}

TEST_CASE("backward from inside a hook is refused with a clear error") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  Tensor other = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  Tensor loss = sum(mul(x, x));
  loss.grad_fn()->add_post_hook([&](variable_list&, const variable_list&) {
    // Hooks run with grad mode off (Note [No double backward]); a graph is
    // built in one as under torch.enable_grad().
    GradMode::set_enabled(true);
    Tensor l = sum(other);
    GradMode::set_enabled(false);
    l.backward();
  });
  CHECK_THROWS_WITH_AS(loss.backward(), doctest::Contains("not reentrant"), std::logic_error);
  // The engine is usable again afterwards.
  sum(mul(other, other)).backward();
  CHECK(other.grad().to_vector() == std::vector<float>{2, 4});
}

TEST_CASE("implicit gradients only for single-element outputs") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  Tensor y = mul(x, x);
  CHECK_THROWS_WITH_AS(y.backward(), doctest::Contains("shape [2]"), std::invalid_argument);
  y.backward(Tensor::from_vector({2}, {1, 0.5f}));
  CHECK(x.grad().to_vector() == std::vector<float>{2, 2});
  Tensor c = Tensor::from_vector({1}, {1});
  CHECK_THROWS_WITH(c.backward(), doctest::Contains("does not require grad"));
}

TEST_CASE("no_grad records no history - ops on tensors not requiring grad record none") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  {
    NoGradGuard g;
    CHECK_FALSE(mul(x, x).requires_grad());
  }
  Tensor c = Tensor::from_vector({2}, {1, 2});
  CHECK_FALSE(mul(c, c).requires_grad());
  CHECK(mul(c, x).requires_grad());
  CHECK(mul(c, x).grad_fn()->name() == "MulBackward0");
}

TEST_CASE("node ids and sequence numbers are unique and increasing") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  Tensor a = tanh(x), b = exp(a);
  CHECK(b.grad_fn()->id() > a.grad_fn()->id());
  CHECK(b.grad_fn()->sequence_nr() > a.grad_fn()->sequence_nr());
  CHECK(a.grad_fn()->next_edges().at(0).function == x.grad_accumulator());
}
