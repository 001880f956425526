// Runtime semantics as PyTorch 2.x defines them (docs/semantics.md): hook
// lists snapshotted while they fire, undefined gradients, autograd::grad
// captures, backward(inputs=...), and one hook_fire event per hook call.
// Each case states what PyTorch does and where that is defined.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>
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

// hook_fire events per hook key.
std::map<uint64_t, int> fires_by_key(const trace::MemoryRecorder& rec) {
  std::map<uint64_t, int> out;
  for (const auto& e : rec.events()) {
    if (e.kind == trace::EventKind::kHookFired) ++out[e.key];
  }
  return out;
}

}  // namespace

// ---- S1: hook lists are snapshotted when they start firing ------------------
// python_hook.cpp _call_hooks iterates PyDict_Values(dict), a copy taken
// before the first hook runs (Note [Extend Hook Lifetime], issue #58354).

TEST_CASE("snapshot: a tensor hook removed by an earlier hook still runs in that backward") {
  Tensor x = leaf({1, 2});
  Tensor h = mul(x, x);
  std::vector<std::string> log;
  HookKey second;
  h.register_hook([&](const Tensor&) {
    log.push_back("first");
    if (second) {
      CHECK(h.remove_hook(second));
      second = HookKey{};
    }
    return Tensor();
  });
  second = h.register_hook([&](const Tensor&) {
    log.push_back("second");
    return Tensor();
  });
  sum(h).backward({}, /*retain_graph=*/true);
  CHECK(log == std::vector<std::string>{"first", "second"});
  log.clear();
  sum(h).backward();
  CHECK(log == std::vector<std::string>{"first"});
}

TEST_CASE("snapshot: a leaf hook removed by an earlier one runs once more - one added runs from the next backward") {
  Tensor x = leaf({1, 2});
  std::vector<std::string> log;
  bool added = false;
  HookKey doomed;
  // Leaf tensor hooks (they fire on the AccumulateGrad).
  x.register_hook([&](const Tensor&) {
    log.push_back("a");
    if (doomed) {
      CHECK(x.remove_hook(doomed));
      doomed = HookKey{};
    }
    if (!added) {
      added = true;
      x.register_hook([&](const Tensor&) {
        log.push_back("b");
        return Tensor();
      });
    }
    return Tensor();
  });
  doomed = x.register_hook([&](const Tensor&) {
    log.push_back("doomed");
    return Tensor();
  });
  sum(mul(x, x)).backward();
  CHECK(log == std::vector<std::string>{"a", "doomed"});
  log.clear();
  sum(mul(x, x)).backward();
  CHECK(log == std::vector<std::string>{"a", "b"});
}

TEST_CASE("snapshot holds for pre hooks, post hooks and post-accumulate hooks") {
  Tensor x = leaf({1, 2});
  Tensor y = mul(x, x);
  Tensor loss = sum(y);
  auto fn = y.grad_fn();
  std::vector<std::string> log;
  HookKey pre2, post2, acc2;
  fn->add_pre_hook([&](variable_list&) {
    log.push_back("pre1");
    if (pre2) fn->del_pre_hook(pre2);
  });
  pre2 = fn->add_pre_hook([&](variable_list&) { log.push_back("pre2"); });
  fn->add_post_hook([&](variable_list&, const variable_list&) {
    log.push_back("post1");
    if (post2) fn->del_post_hook(post2);
  });
  post2 = fn->add_post_hook([&](variable_list&, const variable_list&) { log.push_back("post2"); });
  x.register_post_accumulate_grad_hook([&](const Tensor&) {
    log.push_back("acc1");
    if (acc2) x.remove_post_accumulate_grad_hook(acc2);
  });
  acc2 = x.register_post_accumulate_grad_hook([&](const Tensor&) { log.push_back("acc2"); });
  loss.backward({}, /*retain_graph=*/true);
  CHECK(log == std::vector<std::string>{"pre1", "pre2", "post1", "post2", "acc1", "acc2"});
  log.clear();
  loss.backward();
  CHECK(log == std::vector<std::string>{"pre1", "post1", "acc1"});
}

TEST_CASE("snapshot: removal stays O(1) and safe with many hooks removing each other") {
  auto node = std::make_shared<FunctionNode>(
      "TestBackward", [](const variable_list&) { return variable_list{}; });
  constexpr int kHooks = 2000;
  std::vector<HookKey> keys(kHooks);
  int calls = 0;
  for (int i = 0; i < kHooks; ++i) {
    keys[i] = node->add_post_hook([&, i](variable_list&, const variable_list&) {
      ++calls;
      // Each hook removes itself and the next one: every hook still runs once.
      node->del_post_hook(keys[i]);
      if (i + 1 < kHooks) node->del_post_hook(keys[i + 1]);
    });
  }
  variable_list a, b;
  node->call_post_hooks(a, b);
  CHECK(calls == kHooks);
  CHECK(node->num_post_hooks() == 0);
  node->call_post_hooks(a, b);
  CHECK(calls == kHooks);
}

// ---- U: undefined gradients -------------------------------------------------
// engine.cpp call_function runs every hook and the Node whatever its inputs;
// generated backward formulas return undefined when no gradient is defined
// (`any_grad_defined ? ... : Tensor()`); InputBuffer::add ignores an
// undefined gradient but the dependency is still counted down, so the next
// Node runs; AccumulateGrad::apply returns early on an undefined gradient and
// leaves .grad (and post-accumulate hooks) alone. Python tensor hooks get None.

TEST_CASE("undefined: a pre hook that drops the gradient - downstream Nodes and hooks still run") {
  Tensor x = leaf({1, 2});
  x.set_grad(Tensor::from_vector({2}, {7, 7}));
  Tensor a = tanh(x);
  Tensor y = mul(a, a);
  Tensor loss = sum(y);
  y.grad_fn()->add_pre_hook([](variable_list& grads) { grads[0] = Tensor(); });
  int tanh_pre = 0, tanh_post = 0, leaf_hook = 0, post_acc = 0;
  bool tanh_saw_undefined = false, leaf_saw_undefined = false;
  a.grad_fn()->add_pre_hook([&](variable_list& g) {
    ++tanh_pre;
    tanh_saw_undefined = !g[0].defined();
  });
  a.grad_fn()->add_post_hook([&](variable_list& out, const variable_list&) {
    ++tanh_post;
    CHECK_FALSE(out[0].defined());
  });
  x.register_hook([&](const Tensor& g) {
    ++leaf_hook;
    leaf_saw_undefined = !g.defined();
    return Tensor();
  });
  x.register_post_accumulate_grad_hook([&](const Tensor&) { ++post_acc; });
  CHECK_NOTHROW(loss.backward());
  CHECK(tanh_pre == 1);
  CHECK(tanh_post == 1);
  CHECK(tanh_saw_undefined);
  CHECK(leaf_hook == 1);
  CHECK(leaf_saw_undefined);
  CHECK(post_acc == 0);                                    // AccumulateGrad returned early
  CHECK(x.grad().to_vector() == std::vector<float>{7, 7});  // .grad untouched
}

TEST_CASE("undefined: a post hook that drops an output gradient - the next Node still runs") {
  Tensor x = leaf({1, 2});
  Tensor w = leaf({3, 4});
  Tensor a = exp(x);
  Tensor y = mul(a, w);
  Tensor loss = sum(y);
  y.grad_fn()->add_post_hook([](variable_list& grad_inputs, const variable_list&) {
    grad_inputs[0] = Tensor();  // the gradient towards a = exp(x)
  });
  int exp_pre = 0, exp_post = 0;
  a.grad_fn()->add_pre_hook([&](variable_list& g) {
    ++exp_pre;
    CHECK_FALSE(g[0].defined());
  });
  a.grad_fn()->add_post_hook([&](variable_list&, const variable_list&) { ++exp_post; });
  loss.backward();
  CHECK(exp_pre == 1);
  CHECK(exp_post == 1);
  CHECK_FALSE(x.grad().defined());
  REQUIRE(w.grad().defined());  // the other branch is unaffected
  CHECK(w.grad().to_vector()[0] == doctest::Approx(std::exp(1.f)));
}

TEST_CASE("undefined: a tensor hook cannot turn an undefined gradient into a defined one") {
  Tensor x = leaf({1, 2});
  Tensor y = mul(x, x);
  y.grad_fn()->add_pre_hook([](variable_list& grads) { grads[0] = Tensor(); });
  x.register_hook([](const Tensor&) { return Tensor::zeros({2}); });
  CHECK_THROWS_WITH_AS(sum(y).backward(), doctest::Contains("can't replace an undefined gradient"),
                       std::runtime_error);
}

// ---- E: a hook_fire event is a hook call -------------------------------------

TEST_CASE("events: hook_fire events equal hook calls, for every hook kind, undefined gradients included") {
  Tensor x = leaf({1, 2});
  Tensor a = tanh(x);
  Tensor y = mul(a, a);
  Tensor loss = sum(y);
  std::map<uint64_t, int> calls;
  auto count = [&calls](HookKey k) { return [&calls, k] { ++calls[k.value]; }; };
  trace::MemoryRecorder rec;
  rec.start();
  a.retain_grad();
  std::vector<HookKey> keys;
  // Hooks on a's Function, which receives only an undefined gradient.
  y.grad_fn()->add_pre_hook([](variable_list& grads) { grads[0] = Tensor(); });
  HookKey k1, k2, k3, k4, k5, k6;
  k1 = a.register_hook([&](const Tensor&) { count(k1)(); return Tensor(); });
  k2 = a.grad_fn()->add_pre_hook([&](variable_list&) { count(k2)(); });
  k3 = a.grad_fn()->add_post_hook([&](variable_list&, const variable_list&) { count(k3)(); });
  k4 = x.register_hook([&](const Tensor&) { count(k4)(); return Tensor(); });
  k5 = x.register_post_accumulate_grad_hook([&](const Tensor&) { count(k5)(); });  // never runs
  k6 = y.grad_fn()->add_post_hook([&](variable_list&, const variable_list&) { count(k6)(); });
  loss.backward();
  rec.finish();
  auto fires = fires_by_key(rec);
  for (HookKey k : {k1, k2, k3, k4, k6}) {
    CAPTURE(k.value);
    CHECK(calls[k.value] == 1);
    CHECK(fires[k.value] == 1);
  }
  CHECK(calls[k5.value] == 0);
  CHECK(fires.count(k5.value) == 0);  // a hook that never ran never fired
  // The retain_grad hook ran (with an undefined gradient) and left .grad alone.
  CHECK(fires[a.autograd_meta()->retain_grad_key.value] == 1);
  CHECK_FALSE(a.grad().defined());
}

TEST_CASE("events: fires equal calls for every hook kind across passes with removals mid-pass") {
  Tensor x = leaf({1, 2});
  Tensor a = exp(x);
  Tensor loss = sum(mul(a, a));
  std::map<uint64_t, int> calls;
  trace::MemoryRecorder rec;
  rec.start();
  a.retain_grad();
  std::vector<HookKey> keys;
  auto fn = a.grad_fn();
  auto acc = x.grad_accumulator();
  // Two hooks of each kind; the first removes the second during the first pass.
  auto pair = [&](auto add, auto del) {
    const size_t first = keys.size();
    keys.push_back(add([&calls, &keys, first, del](HookKey self) mutable {
      ++calls[self.value];
      if (keys[first + 1]) {
        del(keys[first + 1]);
        keys[first + 1] = HookKey{};
      }
    }));
    keys.push_back(add([&calls](HookKey self) { ++calls[self.value]; }));
  };
  auto tensor_add = [&](Tensor t) {
    return [t](auto body) mutable {
      auto key = std::make_shared<HookKey>();
      *key = t.register_hook([body, key](const Tensor&) mutable { body(*key); return Tensor(); });
      return *key;
    };
  };
  pair(tensor_add(a), [&](HookKey k) { a.remove_hook(k); });
  pair(tensor_add(x), [&](HookKey k) { x.remove_hook(k); });
  for (auto* node : {fn.get(), acc.get()}) {
    pair([node](auto body) mutable {
           auto key = std::make_shared<HookKey>();
           *key = node->add_pre_hook([body, key](variable_list&) mutable { body(*key); });
           return *key;
         },
         [node](HookKey k) { node->del_pre_hook(k); });
    pair([node](auto body) mutable {
           auto key = std::make_shared<HookKey>();
           *key = node->add_post_hook(
               [body, key](variable_list&, const variable_list&) mutable { body(*key); });
           return *key;
         },
         [node](HookKey k) { node->del_post_hook(k); });
  }
  pair([&](auto body) {
         auto key = std::make_shared<HookKey>();
         *key = x.register_post_accumulate_grad_hook([body, key](const Tensor&) mutable { body(*key); });
         return *key;
       },
       [&](HookKey k) { x.remove_post_accumulate_grad_hook(k); });
  loss.backward({}, /*retain_graph=*/true);
  loss.backward();
  rec.finish();
  auto fires = fires_by_key(rec);
  int total_calls = 0;
  for (const auto& call : calls) {
    const auto key = call.first;  // not a binding: clang 14 cannot CAPTURE one
    const auto n = call.second;
    CAPTURE(key);
    CHECK(fires[key] == n);
    total_calls += n;
  }
  // 7 pairs (tensor hooks on a and on x, pre and post hooks on two Nodes,
  // post-accumulate): the first of each ran twice, the second once (snapshot).
  CHECK(calls.size() == 14);
  CHECK(total_calls == 7 * 3);
  // Plus the retain_grad hook, twice.
  CHECK(fires[a.autograd_meta()->retain_grad_key.value] == 2);
  int all_fires = 0;
  for (auto [key, n] : fires) all_fires += n;
  CHECK(all_fires == total_calls + 2);
}

// ---- G: autograd::grad captures (engine.cpp evaluate_function) ---------------

TEST_CASE("grad(): a captured Function that runs anyway is captured before its tensor pre hooks") {
  Tensor x = leaf({0.5f, -1.f});
  Tensor w = Tensor::from_vector({2}, {3, 4});
  Tensor h = mul(x, w);
  Tensor loss = sum(tanh(h));
  h.register_hook([](const Tensor& g) { return mul_scalar(g, 10.f); });
  // h's Function (MulBackward0) must run to reach x: h's gradient is taken
  // before the hook; x's gradient is computed from the hooked one.
  auto g = autograd::grad({loss}, {h, x}, {}, /*retain_graph=*/true);
  const auto dh = g[0].to_vector(), dx = g[1].to_vector();
  for (int i = 0; i < 2; ++i) {
    const float hv = h.to_vector()[i];
    const float raw = 1.f - std::tanh(hv) * std::tanh(hv);
    CHECK(dh[i] == doctest::Approx(raw));
    CHECK(dx[i] == doctest::Approx(10.f * raw * w.to_vector()[i]));
  }
  // Alone, h's Function does not run: its hook applies first, then the capture.
  auto g2 = autograd::grad({loss}, {h});
  CHECK(g2[0].to_vector()[0] == doctest::Approx(10.f * dh[0]));
}

// ---- I: backward(inputs=...) (torch.autograd.backward) -----------------------

TEST_CASE("backward(inputs=): only the given leaves accumulate - other leaves' hooks never fire") {
  Tensor x = leaf({1, 2});
  Tensor w = leaf({3, 4});
  Tensor loss = sum(mul(tanh(x), w));
  int w_hook = 0, w_post = 0;
  w.register_hook([&](const Tensor&) { ++w_hook; return Tensor(); });
  w.grad_accumulator()->add_post_hook([&](variable_list&, const variable_list&) { ++w_post; });
  loss.backward({}, /*retain_graph=*/true, {x});
  REQUIRE(x.grad().defined());
  CHECK(x.grad().to_vector()[0] == doctest::Approx(3.f * (1 - std::tanh(1.f) * std::tanh(1.f))));
  CHECK_FALSE(w.grad().defined());
  CHECK(w_hook == 0);
  CHECK(w_post == 0);
  // Both, then: w's accumulator runs too.
  loss.backward({}, false, {x, w});
  CHECK(w_hook == 1);
  CHECK(w.grad().to_vector()[0] == doctest::Approx(std::tanh(1.f)));
}

TEST_CASE("backward(inputs=): a non-leaf input gets .grad, as retain_grad - nothing upstream runs") {
  Tensor x = leaf({1, 2});
  Tensor h = exp(x);
  Tensor loss = sum(mul(h, h));
  int exp_post = 0;
  h.grad_fn()->add_post_hook([&](variable_list&, const variable_list&) { ++exp_post; });
  loss.backward({}, false, {h});
  REQUIRE(h.grad().defined());
  CHECK(h.grad().to_vector()[1] == doctest::Approx(2 * std::exp(2.f)));
  CHECK(h.retains_grad());
  CHECK(exp_post == 1);               // h's own Function is the input's Function: it runs
  CHECK_FALSE(x.grad().defined());    // but nothing past it accumulates
  Tensor c = Tensor::from_vector({1}, {1});
  CHECK_THROWS_WITH(sum(mul(x, x)).backward({}, false, {c}), doctest::Contains("does not require grad"));
}

TEST_CASE("a second backward through a graph that saved nothing works, as in PyTorch") {
  Tensor x = leaf({1, 2});
  Tensor loss = sum(neg(add(x, x)));  // AddBackward0, NegBackward0, SumBackward0 save no tensor
  loss.backward();
  CHECK_NOTHROW(loss.backward());
  CHECK(x.grad().to_vector() == std::vector<float>{-4, -4});
  // x * 3.0 saves the wrapped 3 (MulBackward0's other_): refused, as in PyTorch.
  Tensor scaled = sum(mul_scalar(x, 3.f));
  scaled.backward();
  CHECK_THROWS_WITH(scaled.backward(), doctest::Contains("second time"));
}
