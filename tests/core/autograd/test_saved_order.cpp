// What each op saves for backward and in which order saved-tensor hooks see
// it: PyTorch 2.6's fields, guards and order (Note [What each op saves],
// docs/semantics.md section P). tests/torch/test_saved_tensors.py holds the
// same against real PyTorch; this suite runs without it.
#include <doctest/doctest.h>

#include <any>
#include <functional>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "tensor/ops.h"
#include "trace/recorder.h"

using namespace hookscope;

namespace {

Tensor t(Shape shape, std::vector<float> v, bool grad) {
  return Tensor::from_vector(std::move(shape), std::move(v)).set_requires_grad(grad);
}
Tensor vec(std::vector<float> v, bool grad = true) {
  const int64_t n = static_cast<int64_t>(v.size());
  return t({n}, std::move(v), grad);
}

struct Pack {
  std::string node;   // the Function's name
  std::string field;  // PyTorch's field (FunctionNode::saved_name)
  Shape shape;
  std::vector<float> values;
};

// Runs `forward` under saved-tensor hooks; every pack, in order.
std::vector<Pack> packs_of(const std::function<Tensor()>& forward, Tensor* out = nullptr) {
  std::vector<Tensor> packed;
  trace::MemoryRecorder rec;
  rec.start();
  Tensor result;
  {
    SavedTensorsHooks hooks(
        [&](const Tensor& x) -> std::any {
          packed.push_back(x);
          return x;
        },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    result = forward();
  }
  rec.finish();
  // Pack events name a Function by id; find it among the output's graph.
  std::vector<std::shared_ptr<Node>> nodes, stack{result.grad_fn()};
  while (!stack.empty()) {
    auto n = stack.back();
    stack.pop_back();
    if (!n) continue;
    nodes.push_back(n);
    for (const Edge& e : n->next_edges()) stack.push_back(e.function);
  }
  std::vector<Pack> packs;
  size_t k = 0;
  for (const auto& e : rec.events()) {
    if (e.kind != trace::EventKind::kSavedTensorPacked) continue;
    for (const auto& n : nodes) {
      if (n->id() != e.node) continue;
      const auto& fn = dynamic_cast<const FunctionNode&>(*n);
      const Tensor& x = packed.at(k++);
      packs.push_back({fn.name(), fn.saved_name(e.arg), x.shape(), x.to_vector()});
      break;
    }
  }
  REQUIRE(k == packed.size());
  if (out) *out = result;
  return packs;
}

std::vector<std::string> fields(const std::vector<Pack>& packs) {
  std::vector<std::string> f;
  for (const Pack& p : packs) f.push_back(p.node + "." + p.field);
  return f;
}
using Fields = std::vector<std::string>;

}  // namespace

TEST_CASE("saved order: a * b packs other (b) then self (a); a guard drops the factor nobody needs") {
  Tensor a = vec({1, 2}), b = vec({3, 4}), c = vec({5, 6}, false);
  auto both = packs_of([&] { return mul(a, b); });
  CHECK(fields(both) == Fields{"MulBackward0.other", "MulBackward0.self"});
  CHECK(both[0].values == std::vector<float>{3, 4});
  CHECK(both[1].values == std::vector<float>{1, 2});
  // self_ is only for other's gradient: c needs none, so only c is packed.
  auto ac = packs_of([&] { return mul(a, c); });
  REQUIRE(fields(ac) == Fields{"MulBackward0.other"});
  CHECK(ac[0].values == std::vector<float>{5, 6});
  auto ca = packs_of([&] { return mul(c, a); });
  REQUIRE(fields(ca) == Fields{"MulBackward0.self"});
  CHECK(ca[0].values == std::vector<float>{5, 6});
}

TEST_CASE("saved order: a / b packs other then self (not the result); other always, self only for b") {
  Tensor a = vec({1, 2}), b = vec({4, 8}), c = vec({2, 5}, false);
  auto both = packs_of([&] { return div(a, b); });
  CHECK(fields(both) == Fields{"DivBackward0.other", "DivBackward0.self"});
  CHECK(both[0].values == std::vector<float>{4, 8});
  CHECK(both[1].values == std::vector<float>{1, 2});
  CHECK(fields(packs_of([&] { return div(a, c); })) == Fields{"DivBackward0.other"});
  auto ca = packs_of([&] { return div(c, a); });
  CHECK(fields(ca) == Fields{"DivBackward0.other", "DivBackward0.self"});
  CHECK(ca[1].values == std::vector<float>{2, 5});
}

TEST_CASE("saved order: t * 2.5 is MulBackward0 that saves the wrapped number but never packs it") {
  Tensor a = vec({1, 2});
  Tensor out;
  CHECK(packs_of([&] { return mul_scalar(a, 2.5f); }, &out).empty());  // 1.13 packed it
  REQUIRE(out.grad_fn()->name() == "MulBackward0");
  const auto& fn = dynamic_cast<const FunctionNode&>(*out.grad_fn());
  REQUIRE(fn.num_saved() == 2);
  CHECK(std::string(fn.saved_name(0)) == "other");
  REQUIRE(out.grad_fn()->next_edges().size() == 2);  // (AccumulateGrad, None) as PyTorch
  CHECK(out.grad_fn()->next_edge(0).is_valid());
  CHECK_FALSE(out.grad_fn()->next_edge(1).is_valid());
  Tensor loss = sum(out);
  loss.backward();
  CHECK(a.grad().to_vector() == std::vector<float>{2.5f, 2.5f});
  // It is saved: a second backward is refused, as in PyTorch.
  CHECK_THROWS_WITH(loss.backward(), doctest::Contains("second time"));
}

TEST_CASE("saved order: unary ops save the result or the input as PyTorch's formula reads it") {
  Tensor a = vec({-1, 2});
  auto relu_p = packs_of([&] { return relu(a); });
  REQUIRE(fields(relu_p) == Fields{"ReluBackward0.result"});
  CHECK(relu_p[0].values == std::vector<float>{0, 2});  // the result, not the input
  CHECK(fields(packs_of([&] { return tanh(a); })) == Fields{"TanhBackward0.result"});
  CHECK(fields(packs_of([&] { return sigmoid(a); })) == Fields{"SigmoidBackward0.result"});
  CHECK(fields(packs_of([&] { return exp(a); })) == Fields{"ExpBackward0.result"});
  CHECK(fields(packs_of([&] { return log(vec({1, 2})); })) == Fields{"LogBackward0.self"});
  for (auto op : {neg, sum, mean}) CHECK(packs_of([&] { return op(a); }).empty());
  CHECK(packs_of([&] { return add(a, a); }).empty());
  CHECK(packs_of([&] { return sub(a, a); }).empty());
}

TEST_CASE("saved order: matmul packs mat2 then self, each only for the other's gradient") {
  Tensor a = t({1, 2}, {1, 2}, true), b = t({2, 1}, {3, 4}, true);
  Tensor ac = t({1, 2}, {1, 2}, false), bc = t({2, 1}, {3, 4}, false);
  CHECK(fields(packs_of([&] { return matmul(a, b); })) ==
        Fields{"MmBackward0.mat2", "MmBackward0.self"});
  CHECK(fields(packs_of([&] { return matmul(a, bc); })) == Fields{"MmBackward0.mat2"});
  CHECK(fields(packs_of([&] { return matmul(ac, b); })) == Fields{"MmBackward0.self"});
}

TEST_CASE("saved order: linear is addmm(bias, x, weight.t()) - TBackward0, PyTorch's edges, mat1 then mat2") {
  Tensor x = t({1, 2}, {1, 2}, true);
  Tensor w = t({3, 2}, {1, 2, 3, 4, 5, 6}, true);
  Tensor bias = vec({0.5f, 0.f, -0.5f});
  Tensor out;
  auto p = packs_of([&] { return linear(x, w, bias); }, &out);
  REQUIRE(fields(p) == Fields{"AddmmBackward0.mat1", "AddmmBackward0.mat2"});
  CHECK(p[0].values == std::vector<float>{1, 2});
  CHECK(p[1].shape == Shape{2, 3});  // weight^T
  CHECK(p[1].values == std::vector<float>{1, 3, 5, 2, 4, 6});
  const auto& edges = out.grad_fn()->next_edges();
  REQUIRE(edges.size() == 3);
  CHECK(edges[0].function == bias.grad_accumulator());
  CHECK(edges[1].function == x.grad_accumulator());
  REQUIRE(edges[2].function);
  CHECK(edges[2].function->name() == "TBackward0");
  CHECK(edges[2].function->next_edge(0).function == w.grad_accumulator());
  // A first layer (data in): only x is packed, for the weight's gradient.
  Tensor data = x.detach();
  CHECK(fields(packs_of([&] { return linear(data, w, bias); })) == Fields{"AddmmBackward0.mat1"});
  sum(out).backward();
  CHECK(w.grad().to_vector() == std::vector<float>{1, 2, 1, 2, 1, 2});
  CHECK(x.grad().to_vector() == std::vector<float>{9, 12});
  CHECK(bias.grad().to_vector() == std::vector<float>{1, 1, 1});
}

TEST_CASE("saved order: losses save self and target; nll_loss also total_weight, and backward reads them") {
  Tensor in = t({1, 2}, {1, 2}, true), target = t({1, 2}, {0, 4}, false);
  auto mse = packs_of([&] { return mse_loss(in, target); });
  CHECK(fields(mse) == Fields{"MseLossBackward0.self", "MseLossBackward0.target"});
  Tensor logits = t({2, 3}, {1, 2, 3, 3, 2, 1}, true);
  auto ce = packs_of([&] { return cross_entropy(logits, {2, 1}); });
  CHECK(fields(ce) == Fields{"LogSoftmaxBackward0.result", "NllLossBackward0.self",
                             "NllLossBackward0.target", "NllLossBackward0.total_weight"});
  CHECK(ce[2].values == std::vector<float>{2, 1});  // class indices (int64 in PyTorch)
  CHECK(ce[3].values == std::vector<float>{2});     // rows, no class weights
  CHECK(ce[1].values == ce[0].values);              // the same log-probabilities

  // The formula computes with what unpack returns: a total_weight of 4
  // instead of 2 halves the gradient.
  Tensor lp = t({2, 2}, {-1, -2, -3, -4}, true);
  Tensor loss;
  {
    SavedTensorsHooks hooks([](const Tensor& x) -> std::any { return x; },
                            [](const std::any& p) {
                              Tensor x = std::any_cast<Tensor>(p);
                              return x.numel() == 1 ? Tensor::full({}, 4.f) : x;
                            });
    loss = nll_loss(lp, {0, 1});
  }
  loss.backward();
  CHECK(lp.grad().to_vector() == std::vector<float>{-0.25f, 0, 0, -0.25f});
}

TEST_CASE("saved order: ops that save nothing, named as PyTorch names them") {
  Tensor x = t({2, 2}, {1, 2, 3, 4}, true);
  Tensor bias = vec({1, 2});
  Tensor out;
  CHECK(packs_of([&] { return add_bias(x, bias); }, &out).empty());
  CHECK(out.grad_fn()->name() == "AddBackward0");  // x + bias, broadcast
  CHECK(packs_of([&] { return reshape(x, {4}); }, &out).empty());
  CHECK(out.grad_fn()->name() == "ViewBackward0");
  CHECK(packs_of([&] { return transpose(x); }, &out).empty());
  CHECK(out.grad_fn()->name() == "TBackward0");
}

// docs/semantics.md I3: no create_graph. Asking for a second derivative is
// a clear error, never numbers that follow only part of the graph.
TEST_CASE("double backward: a gradient has no history, so differentiating it again says why") {
  Tensor x = vec({1, 2});
  Tensor y = sum(mul(x, x));
  variable_list g = autograd::grad({y}, {x});
  CHECK_FALSE(g[0].requires_grad());
  CHECK_FALSE(g[0].grad_fn());
  CHECK_THROWS_WITH_AS(sum(g[0]).backward(), doctest::Contains("double backward is not supported"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(autograd::grad({sum(mul(g[0], g[0]))}, {x}),
                       doctest::Contains("double backward is not supported"), std::invalid_argument);
}

TEST_CASE("double backward: hooks compute with grad mode off, as PyTorch without create_graph") {
  Tensor x = vec({1, 2});
  Tensor w = vec({3, 4});  // requires grad: a product with it would record history
  bool grad_mode_in_hook = true;
  x.register_hook([&](const Tensor& g) {
    grad_mode_in_hook = GradMode::is_enabled();
    return mul(g, w);
  });
  sum(mul_scalar(x, 2.f)).backward();
  CHECK_FALSE(grad_mode_in_hook);
  CHECK(x.grad().to_vector() == std::vector<float>{6, 8});
  CHECK_FALSE(x.grad().requires_grad());  // no MulBackward0 hanging off .grad
  CHECK_FALSE(x.grad().grad_fn());
  CHECK(GradMode::is_enabled());  // restored after the pass
}
