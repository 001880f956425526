// Hook keys, removal, firing order and removal while firing.
#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "tensor/ops.h"
#include "trace/recorder.h"
#include "testing/test_util.h"

using namespace hookscope;

namespace {

std::shared_ptr<Node> bare_node() {
  return std::make_shared<FunctionNode>(
      "TestBackward", [](const variable_list&) { return variable_list{}; });
}

// Fires the node's post hooks once, as the engine does after apply.
void fire_post(Node& n) {
  variable_list in, out;
  n.call_post_hooks(in, out);
}

}  // namespace

TEST_CASE("post hooks fire in registration order - removal of first, middle, last") {
  auto node = bare_node();
  std::vector<int> log;
  std::vector<HookKey> keys;
  for (int i = 0; i < 5; ++i) {
    keys.push_back(node->add_post_hook([&log, i](variable_list&, const variable_list&) {
      log.push_back(i);
    }));
  }
  fire_post(*node);
  CHECK(log == std::vector<int>{0, 1, 2, 3, 4});

  CHECK(node->del_post_hook(keys[0]));  // first
  CHECK(node->del_post_hook(keys[2]));  // middle
  CHECK(node->del_post_hook(keys[4]));  // last
  CHECK(node->num_post_hooks() == 2);
  log.clear();
  fire_post(*node);
  CHECK(log == std::vector<int>{1, 3});

  // Order survives compaction and later additions.
  keys.push_back(node->add_post_hook([&log](variable_list&, const variable_list&) {
    log.push_back(5);
  }));
  log.clear();
  fire_post(*node);
  CHECK(log == std::vector<int>{1, 3, 5});
}

TEST_CASE("double removal returns false and is recorded as a failed removal") {
  auto node = bare_node();
  HookKey k = node->add_post_hook([](variable_list&, const variable_list&) {});
  trace::MemoryRecorder rec;
  rec.start();
  CHECK(node->del_post_hook(k));
  CHECK_FALSE(node->del_post_hook(k));
  rec.finish();
  std::vector<trace::Event> ev = testing::recorded(rec);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].kind == trace::EventKind::kHookRemoved);
  CHECK(ev[1].kind == trace::EventKind::kHookRemoveFailed);
  CHECK(ev[1].key == k.value);
  CHECK(ev[1].node == node->id());
}

TEST_CASE("a stale key never removes a newer hook (no ABA)") {
  auto node = bare_node();
  HookKey stale = node->add_post_hook([](variable_list&, const variable_list&) {});
  CHECK(node->del_post_hook(stale));
  // Many add/remove cycles: with address keys one of these would reuse the
  // freed hook's address. Counter keys never come back.
  std::vector<HookKey> live;
  for (int i = 0; i < 10000; ++i) {
    HookKey k = node->add_post_hook([](variable_list&, const variable_list&) {});
    CHECK(k.value != stale.value);
    if (i % 2) {
      node->del_post_hook(k);
    } else {
      live.push_back(k);
    }
  }
  const size_t before = node->num_post_hooks();
  CHECK_FALSE(node->del_post_hook(stale));
  CHECK(node->num_post_hooks() == before);
  for (HookKey k : live) CHECK(node->del_post_hook(k));
  CHECK(node->num_post_hooks() == 0);
}

TEST_CASE("keys are unique across nodes and hook kinds - a key of one kind removes nothing of another") {
  auto a = bare_node(), b = bare_node();
  HookKey k1 = a->add_post_hook([](variable_list&, const variable_list&) {});
  HookKey k2 = a->add_pre_hook([](variable_list&) {});
  HookKey k3 = b->add_post_hook([](variable_list&, const variable_list&) {});
  CHECK(k1.value != k2.value);
  CHECK(k2.value != k3.value);
  CHECK_FALSE(b->del_post_hook(k1));  // right kind, wrong node
  CHECK_FALSE(a->del_pre_hook(k1));   // right node, wrong kind
  CHECK(a->num_post_hooks() == 1);
  CHECK(a->del_post_hook(k1));
}

TEST_CASE("removing hooks from inside a firing hook (Note [Removing hooks while they fire])") {
  auto node = bare_node();
  std::vector<std::string> log;
  HookKey k_self, k_later, k_added;
  node->add_post_hook([&](variable_list&, const variable_list&) {
    log.push_back("A");
    // Removes a hook that has not run yet in this pass: as PyTorch's
    // _call_hooks (a snapshot of the hooks), it still runs in this pass.
    if (k_later) {
      CHECK(node->del_post_hook(k_later));
      k_later = HookKey{};
    }
    // Adds a hook: it runs from the next pass on.
    if (!k_added) {
      k_added = node->add_post_hook([&](variable_list&, const variable_list&) {
        log.push_back("D");
      });
    }
  });
  k_self = node->add_post_hook([&](variable_list&, const variable_list&) {
    log.push_back("B");
    CHECK(node->del_post_hook(k_self));  // removes itself: ran once, never again
  });
  k_later = node->add_post_hook([&](variable_list&, const variable_list&) {
    log.push_back("C");
  });
  fire_post(*node);
  CHECK(log == std::vector<std::string>{"A", "B", "C"});
  log.clear();
  fire_post(*node);
  CHECK(log == std::vector<std::string>{"A", "D"});
  CHECK(node->num_post_hooks() == 2);
}

TEST_CASE("a hook that removes itself during a real backward") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  auto acc = x.grad_accumulator();
  int fired = 0;
  auto key = std::make_shared<HookKey>();
  *key = acc->add_post_hook([&, key](variable_list&, const variable_list&) {
    ++fired;
    acc->del_post_hook(*key);
  });
  sum(mul(x, x)).backward();
  sum(mul(x, x)).backward();
  CHECK(fired == 1);
  CHECK(x.grad().to_vector() == std::vector<float>{4, 8});
}

TEST_CASE("firing order on a diamond graph with every hook kind") {
  // x -> a = exp(x), b = tanh(x) -> y = a * b -> loss = sum(y)
  Tensor x = Tensor::from_vector({3}, {0.1f, 0.2f, 0.3f}).set_requires_grad(true);
  Tensor a = exp(x);
  Tensor b = tanh(x);
  Tensor y = mul(a, b);
  Tensor loss = sum(y);
  std::vector<std::string> log;
  auto rec = [&log](std::string s) { log.push_back(std::move(s)); };

  auto acc = x.grad_accumulator();
  auto exp_fn = a.grad_fn(), tanh_fn = b.grad_fn(), mul_fn = y.grad_fn(), sum_fn = loss.grad_fn();
  for (auto& [fn, name] : std::vector<std::pair<std::shared_ptr<Node>, std::string>>{
           {acc, "acc"}, {exp_fn, "exp"}, {tanh_fn, "tanh"}, {mul_fn, "mul"}, {sum_fn, "sum"}}) {
    std::string n = name;
    fn->add_post_hook([rec, n](variable_list&, const variable_list&) { rec(n + ".post1"); });
    fn->add_pre_hook([rec, n](variable_list&) { rec(n + ".pre1"); });
    fn->add_post_hook([rec, n](variable_list&, const variable_list&) { rec(n + ".post2"); });
    fn->add_pre_hook([rec, n](variable_list&) { rec(n + ".pre2"); });
  }
  x.register_hook([rec](const Tensor&) { rec("x.tensor1"); return Tensor(); });
  x.register_post_accumulate_grad_hook([rec](const Tensor&) { rec("x.post_acc"); });
  x.register_hook([rec](const Tensor&) { rec("x.tensor2"); return Tensor(); });
  a.retain_grad();
  a.register_hook([rec](const Tensor&) { rec("a.tensor"); return Tensor(); });
  mul_fn->add_tensor_pre_hook([rec](const Tensor&) { rec("mul.tensor_pre"); return Tensor(); });

  loss.backward();

  // Ready queue: AccumulateGrad first when ready, otherwise the most recently
  // created Function (sum, mul, tanh, exp), as in PyTorch's CPU queue.
  const std::vector<std::string> expected = {
      "sum.pre1", "sum.pre2", "sum.post1", "sum.post2",
      "mul.tensor_pre", "mul.pre1", "mul.pre2", "mul.post1", "mul.post2",
      "tanh.pre1", "tanh.pre2", "tanh.post1", "tanh.post2",
      // a's tensor hook runs before its retain_grad hook though registered after it
      "a.tensor", "exp.pre1", "exp.pre2", "exp.post1", "exp.post2",
      "x.tensor1", "x.tensor2", "acc.pre1", "acc.pre2", "x.post_acc", "acc.post1", "acc.post2",
  };
  CHECK(log == expected);
  REQUIRE(a.grad().defined());
  CHECK(a.grad().to_vector()[0] == doctest::Approx(std::tanh(0.1f)));
}

TEST_CASE("tensor hooks can replace the gradient - wrong shapes are refused") {
  Tensor x = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  x.register_hook([](const Tensor& g) { return mul_scalar(g, 10.f); });
  sum(x).backward();
  CHECK(x.grad().to_vector() == std::vector<float>{10, 10});

  Tensor z = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  z.register_hook([](const Tensor&) { return Tensor::zeros({3}); });
  CHECK_THROWS_WITH(sum(z).backward(), doctest::Contains("must keep the gradient's shape"));
}

TEST_CASE("leaf hooks survive the AccumulateGrad being freed and re-created") {
  Tensor w = Tensor::from_vector({2}, {1, 2}).set_requires_grad(true);
  int fired = 0;
  HookKey k = w.register_hook([&fired](const Tensor&) { ++fired; return Tensor(); });
  uint64_t first_acc = w.grad_accumulator()->id();
  for (int i = 0; i < 3; ++i) sum(w).backward();  // each graph re-creates the accumulator
  CHECK(fired == 3);
  CHECK(w.grad_accumulator()->id() != first_acc);
  CHECK(w.remove_hook(k));
  sum(w).backward();
  CHECK(fired == 3);
}

TEST_CASE("the by-type sweep removes every Reducer-kind post hook, whoever owns it") {
  auto node = bare_node();
  OwnerId r1 = create_owner(OwnerKind::kReducer, "Reducer 1");
  OwnerId r2 = create_owner(OwnerKind::kReducer, "Reducer 2");
  node->add_post_hook([](variable_list&, const variable_list&) {}, r1);
  node->add_post_hook([](variable_list&, const variable_list&) {}, r2);
  node->add_post_hook([](variable_list&, const variable_list&) {}, user_owner());
  CHECK(node->del_post_hooks_of_kind(OwnerKind::kReducer, r1) == 2);
  CHECK(node->num_post_hooks() == 1);
  destroy_owner(r1);
  destroy_owner(r2);
}

TEST_CASE("tensor pre hooks on a non-existent input are refused") {
  auto node = bare_node();
  CHECK_THROWS_WITH_AS(node->add_tensor_pre_hook([](const Tensor& g) { return g; }, 3),
                       doctest::Contains("input_nr 3"), std::out_of_range);
}
