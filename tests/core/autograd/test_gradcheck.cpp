// Every differentiable op's gradient against central finite differences, on
// random shapes (as flashlight's jacobianTestImpl does).
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <any>
#include <functional>
#include <random>

#include "autograd/engine.h"
#include "autograd/saved_variable.h"
#include "nn/nn.h"
#include "tensor/device.h"
#include "tensor/ops.h"

using namespace hookscope;

namespace {

using Fn = std::function<Tensor(const variable_list&)>;

// Reduces any output to a scalar with fixed random weights, so the check
// covers a full vector-Jacobian product, not only the sum of the Jacobian.
Tensor weighted(const Tensor& y, uint64_t seed) {
  if (y.numel() == 1 && y.dim() == 0) return y;
  Tensor w = Tensor::uniform(y.shape(), -1.f, 1.f, seed);
  return sum(mul(y, w));
}

void gradcheck(const char* what, const Fn& f, variable_list inputs, float eps = 1e-2f,
               float tol = 2e-2f) {
  CAPTURE(what);
  for (Tensor& t : inputs) t.set_requires_grad(true);
  Tensor out = weighted(f(inputs), 99);
  variable_list analytic = autograd::grad({out}, inputs);
  NoGradGuard no_grad;
  for (size_t i = 0; i < inputs.size(); ++i) {
    float* d = inputs[i].data();
    std::vector<float> a = analytic[i].to_vector();
    REQUIRE(a.size() == static_cast<size_t>(inputs[i].numel()));
    for (int64_t j = 0; j < inputs[i].numel(); ++j) {
      const float orig = d[j];
      d[j] = orig + eps;
      const double plus = weighted(f(inputs), 99).item();
      d[j] = orig - eps;
      const double minus = weighted(f(inputs), 99).item();
      d[j] = orig;
      const double numeric = (plus - minus) / (2.0 * eps);
      CAPTURE(i);
      CAPTURE(j);
      CHECK(a[j] == doctest::Approx(numeric).epsilon(tol).scale(1.0));
    }
  }
}

struct Shapes {
  std::mt19937 gen{1234};
  int64_t dim() { return std::uniform_int_distribution<int64_t>(1, 5)(gen); }
  Shape any() {
    Shape s;
    int rank = std::uniform_int_distribution<int>(1, 3)(gen);
    for (int i = 0; i < rank; ++i) s.push_back(dim());
    return s;
  }
  uint64_t seed() { return gen(); }
};

// Values away from 0: keeps relu's kink and division's pole out of reach of eps.
Tensor away_from_zero(const Shape& s, uint64_t seed, float lo = 0.3f, float hi = 1.5f) {
  Tensor t = Tensor::uniform(s, lo, hi, seed);
  std::mt19937 gen(static_cast<uint32_t>(seed));
  for (int64_t i = 0; i < t.numel(); ++i) {
    if (gen() & 1) t.data()[i] = -t.data()[i];
  }
  return t;
}

}  // namespace

TEST_CASE("gradcheck: elementwise binary ops on random shapes") {
  Shapes r;
  for (int trial = 0; trial < 4; ++trial) {
    Shape s = r.any();
    CAPTURE(shape_str(s));
    gradcheck("add", [](auto& v) { return add(v[0], v[1]); },
              {Tensor::randn(s, 1, r.seed()), Tensor::randn(s, 1, r.seed())});
    gradcheck("sub", [](auto& v) { return sub(v[0], v[1]); },
              {Tensor::randn(s, 1, r.seed()), Tensor::randn(s, 1, r.seed())});
    gradcheck("mul", [](auto& v) { return mul(v[0], v[1]); },
              {Tensor::randn(s, 1, r.seed()), Tensor::randn(s, 1, r.seed())});
    gradcheck("div", [](auto& v) { return div(v[0], v[1]); },
              {Tensor::randn(s, 1, r.seed()), away_from_zero(s, r.seed(), 0.5f, 2.f)});
  }
}

TEST_CASE("gradcheck: unary ops on random shapes") {
  Shapes r;
  for (int trial = 0; trial < 4; ++trial) {
    Shape s = r.any();
    CAPTURE(shape_str(s));
    gradcheck("neg", [](auto& v) { return neg(v[0]); }, {Tensor::randn(s, 1, r.seed())});
    gradcheck("mul_scalar", [](auto& v) { return mul_scalar(v[0], -2.5f); },
              {Tensor::randn(s, 1, r.seed())});
    gradcheck("relu", [](auto& v) { return relu(v[0]); }, {away_from_zero(s, r.seed())});
    gradcheck("tanh", [](auto& v) { return tanh(v[0]); }, {Tensor::randn(s, 1, r.seed())});
    gradcheck("sigmoid", [](auto& v) { return sigmoid(v[0]); }, {Tensor::randn(s, 1, r.seed())});
    gradcheck("exp", [](auto& v) { return exp(v[0]); }, {Tensor::randn(s, 0.5f, r.seed())});
    gradcheck("log", [](auto& v) { return log(v[0]); },
              {Tensor::uniform(s, 0.5f, 2.f, r.seed())});
  }
}

TEST_CASE("gradcheck: reductions, reshape, transpose") {
  Shapes r;
  for (int trial = 0; trial < 4; ++trial) {
    Shape s = r.any();
    CAPTURE(shape_str(s));
    gradcheck("sum", [](auto& v) { return sum(v[0]); }, {Tensor::randn(s, 1, r.seed())});
    gradcheck("mean", [](auto& v) { return mean(v[0]); }, {Tensor::randn(s, 1, r.seed())});
    gradcheck("reshape", [](auto& v) { return reshape(tanh(v[0]), {-1}); },
              {Tensor::randn(s, 1, r.seed())});
    Shape m{r.dim(), r.dim()};
    gradcheck("transpose", [](auto& v) { return transpose(v[0]); },
              {Tensor::randn(m, 1, r.seed())});
  }
}

TEST_CASE("gradcheck: matmul, linear and add_bias") {
  Shapes r;
  for (int trial = 0; trial < 4; ++trial) {
    int64_t n = r.dim(), k = r.dim(), m = r.dim();
    CAPTURE(n);
    CAPTURE(k);
    CAPTURE(m);
    gradcheck("matmul", [](auto& v) { return matmul(v[0], v[1]); },
              {Tensor::randn({n, k}, 1, r.seed()), Tensor::randn({k, m}, 1, r.seed())});
    gradcheck("linear", [](auto& v) { return linear(v[0], v[1], v[2]); },
              {Tensor::randn({n, k}, 1, r.seed()), Tensor::randn({m, k}, 1, r.seed()),
               Tensor::randn({m}, 1, r.seed())});
    gradcheck("add_bias", [](auto& v) { return add_bias(v[0], v[1]); },
              {Tensor::randn({n, m}, 1, r.seed()), Tensor::randn({m}, 1, r.seed())});
  }
}

TEST_CASE("gradcheck: losses") {
  Shapes r;
  for (int trial = 0; trial < 4; ++trial) {
    int64_t n = r.dim(), c = r.dim() + 1;
    std::vector<int64_t> target;
    for (int64_t i = 0; i < n; ++i) target.push_back(static_cast<int64_t>(r.gen() % c));
    gradcheck("mse_loss", [](auto& v) { return mse_loss(v[0], v[1]); },
              {Tensor::randn({n, c}, 1, r.seed()), Tensor::randn({n, c}, 1, r.seed())});
    gradcheck("log_softmax", [](auto& v) { return log_softmax(v[0]); },
              {Tensor::randn({n, c}, 1, r.seed())});
    gradcheck("nll_loss", [target](auto& v) { return nll_loss(log_softmax(v[0]), target); },
              {Tensor::randn({n, c}, 1, r.seed())});
    gradcheck("cross_entropy", [target](auto& v) { return cross_entropy(v[0], target); },
              {Tensor::randn({n, c}, 1, r.seed())});
  }
}

TEST_CASE("forward values match the definitions") {
  Tensor a = Tensor::from_vector({2, 2}, {1, 2, 3, 4});
  Tensor b = Tensor::from_vector({2, 2}, {5, 6, 7, 8});
  CHECK(matmul(a, b).to_vector() == std::vector<float>{19, 22, 43, 50});
  CHECK(transpose(a).to_vector() == std::vector<float>{1, 3, 2, 4});
  CHECK(add_bias(a, Tensor::from_vector({2}, {10, 20})).to_vector() ==
        std::vector<float>{11, 22, 13, 24});
  CHECK(sum(a).item() == 10.f);
  CHECK(mean(a).item() == 2.5f);
  CHECK(mse_loss(a, b).item() == 16.f);
  Tensor lsm = log_softmax(Tensor::from_vector({1, 3}, {0, 0, 0}));
  for (float v : lsm.to_vector()) CHECK(v == doctest::Approx(-std::log(3.f)));
  CHECK(cross_entropy(Tensor::from_vector({1, 3}, {0, 0, 0}), {1}).item() ==
        doctest::Approx(std::log(3.f)));
}

TEST_CASE("gradcheck: through module hooks (BackwardHookFunction Nodes)") {
  // Forward (pre) hooks that change values are part of the function (they run
  // in both the analytic and the numeric pass); backward hooks that hand back
  // a gradient of their own (a copy) must not change the result.
  auto model = nn::mlp({3, 4, 2}, 21);
  for (size_t i : {0, 2}) {
    nn::Module& m = (*model)[i];
    m.register_forward_pre_hook([](nn::Module&, const Tensor& x) { return mul_scalar(x, 1.5f); });
    m.register_forward_hook([](nn::Module&, const Tensor&, const Tensor& y) { return tanh(y); });
    m.register_full_backward_pre_hook([](nn::Module&, const Tensor& g) { return g.clone(); });
    m.register_full_backward_hook([](nn::Module&, const Tensor& gi, const Tensor&) {
      return gi.defined() ? gi.clone() : Tensor();
    });
  }
  Tensor w0 = model->parameters()[0];
  Tensor b2 = model->parameters()[3];
  gradcheck("mlp with module hooks", [&](auto& v) { return (*model)(v[0]); },
            {Tensor::uniform({2, 3}, -1.f, 1.f, 5), w0, b2});
}

TEST_CASE("gradcheck: through saved-tensor hooks (pack to a copy, unpack it)") {
  auto model = nn::mlp({3, 5, 2}, 22);
  SavedTensorsHooks hooks([](const Tensor& t) -> std::any { return t.clone(); },
                          [](const std::any& p) { return std::any_cast<Tensor>(p); });
  Tensor w = model->parameters()[2];
  gradcheck("mlp + tanh/div/mse under saved hooks",
            [&](auto& v) {
              Tensor h = (*model)(v[0]);
              return mse_loss(div(tanh(h), v[1]), Tensor::zeros(h.shape()));
            },
            {Tensor::uniform({2, 3}, -1.f, 1.f, 6), away_from_zero({2, 2}, 7), w});
}

TEST_CASE("shape errors name the shapes") {
  Tensor a = Tensor::zeros({2, 3}), b = Tensor::zeros({3, 2});
  CHECK_THROWS_WITH_AS(add(a, b), doctest::Contains("[2, 3] and [3, 2]"), std::invalid_argument);
  CHECK_THROWS_WITH_AS(matmul(a, a), doctest::Contains("[2, 3] and [2, 3] cannot be multiplied"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(add_bias(a, Tensor::zeros({2})),
                       doctest::Contains("bias of shape [2] does not fit input of shape [2, 3]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(reshape(a, {4, 2}), doctest::Contains("[4, 2] is invalid for input of shape [2, 3]"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(nll_loss(a, {0, 7}), doctest::Contains("target 7 at index 1 is out of bounds for 3 classes"),
                       std::invalid_argument);
  // Without a usable GPU, asking for one says so (with a GPU it simply works).
  if (!cuda_available()) {
    CHECK_THROWS_WITH_AS(Tensor::zeros({2}, Device::kCUDA).to_vector(), doctest::Contains("cuda"),
                         std::runtime_error);
  }
}

// Note [Gradients nobody asked for]: an input that needs no gradient gets
// none computed; the others get the same gradient as when all need one.
TEST_CASE("linear and matmul compute only the gradients their inputs need") {
  Tensor x = Tensor::uniform({5, 7}, -1.f, 1.f, 1);
  Tensor w = Tensor::uniform({3, 7}, -1.f, 1.f, 2);
  Tensor b = Tensor::uniform({3}, -1.f, 1.f, 3);
  auto grads = [&](bool need_x) {
    Tensor xi = x.detach(), wi = w.detach(), bi = b.detach();
    xi.set_requires_grad(need_x);
    wi.set_requires_grad(true);
    bi.set_requires_grad(true);
    Tensor out = weighted(linear(xi, wi, bi), 7);
    variable_list inputs = need_x ? variable_list{wi, bi, xi} : variable_list{wi, bi};
    return autograd::grad({out}, inputs);
  };
  variable_list all = grads(true), some = grads(false);
  REQUIRE(some.size() == 2);
  CHECK(some[0].to_vector() == all[0].to_vector());
  CHECK(some[1].to_vector() == all[1].to_vector());
  CHECK(all[2].defined());
  // Through the whole graph: the data's AddmmBackward0 returns no grad_input,
  // and backward() still fills the parameters' .grad.
  Tensor wl = w.detach();
  wl.set_requires_grad(true);
  sum(matmul(x, transpose(wl))).backward();
  REQUIRE(wl.grad().defined());
  std::vector<float> g = wl.grad().to_vector(), xs = x.to_vector();
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 7; ++c) {
      float col = 0.f;  // d/dW[r][c] of sum(x W^T) = sum over rows of x[:, c]
      for (int64_t n = 0; n < 5; ++n) col += xs[static_cast<size_t>(n * 7 + c)];
      CHECK(g[static_cast<size_t>(r * 7 + c)] == doctest::Approx(col));
    }
  }
}

// PyTorch's threshold_backward: the gradient where the input was > 0, else
// 0 — even where the incoming gradient is NaN or infinite.
TEST_CASE("relu's backward selects, it does not multiply") {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = Tensor::from_vector({6}, {2.f, -1.f, 0.f, 3.f, -2.f, 1.f});
  x.set_requires_grad(true);
  Tensor y = relu(x);
  Tensor g = Tensor::from_vector({6}, {nan, nan, inf, -inf, inf, 5.f});
  variable_list gx = autograd::grad({y}, {x}, {g});
  std::vector<float> v = gx[0].to_vector();
  CHECK(std::isnan(v[0]));
  CHECK(v[1] == 0.f);
  CHECK(v[2] == 0.f);  // relu'(0) = 0, as PyTorch
  CHECK(v[3] == -inf);
  CHECK(v[4] == 0.f);
  CHECK(v[5] == 5.f);
}
