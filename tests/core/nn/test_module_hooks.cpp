// Module hooks as PyTorch 2.x defines them (torch/nn/modules/module.py
// _call_impl, torch/utils/hooks.py BackwardHook; docs/semantics.md M1-M6).
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "trace/recorder.h"
#include "testing/test_util.h"

using namespace hookscope;

namespace {

std::shared_ptr<nn::Sequential> two_layers() { return nn::mlp({3, 4, 2}, 11); }

Tensor input(bool requires_grad) {
  Tensor x = Tensor::from_vector({2, 3}, {0.5f, -1.f, 2.f, 1.f, 0.25f, -0.5f});
  if (requires_grad) x.set_requires_grad(true);
  return x;
}

}  // namespace

TEST_CASE("module hooks: forward pre, forward, backward pre, backward run in PyTorch's order") {
  auto model = two_layers();
  nn::Module& layer = (*model)[0];
  std::vector<std::string> log;
  layer.register_forward_pre_hook([&](nn::Module& m, const Tensor&) {
    CHECK(&m == &layer);
    log.push_back("forward_pre");
    return Tensor();
  });
  layer.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    log.push_back("forward");
    return Tensor();
  });
  layer.register_full_backward_pre_hook([&](nn::Module&, const Tensor&) {
    log.push_back("backward_pre");
    return Tensor();
  });
  layer.register_full_backward_hook([&](nn::Module&, const Tensor&, const Tensor&) {
    log.push_back("backward");
    return Tensor();
  });
  Tensor out = (*model)(input(true));
  CHECK(log == std::vector<std::string>{"forward_pre", "forward"});
  sum(out).backward();
  CHECK(log == std::vector<std::string>{"forward_pre", "forward", "backward_pre", "backward"});
}

TEST_CASE("module hooks: full backward hooks see d(loss)/d(input) and d(loss)/d(output)") {
  auto model = two_layers();
  nn::Module& layer = (*model)[2];  // the last Linear: its output is the model's
  Tensor seen_in, seen_out;
  layer.register_full_backward_hook([&](nn::Module&, const Tensor& gi, const Tensor& go) {
    seen_in = gi.clone();
    seen_out = go.clone();
    return Tensor();
  });
  Tensor h = relu((*model)[0](input(false)));
  h.retain_grad();
  Tensor out = layer(h);
  out.retain_grad();
  Tensor loss = sum(mul(out, out));
  loss.backward();
  REQUIRE(seen_in.defined());
  REQUIRE(seen_out.defined());
  CHECK(seen_in.to_vector() == h.grad().to_vector());
  CHECK(seen_out.to_vector() == out.grad().to_vector());
}

TEST_CASE("module hooks: a full backward hook removed after forward still fires in that backward (#25723)") {
  // layer = nn.Linear(1, 1); model = nn.Sequential(layer);
  // handle = layer.register_full_backward_hook(...); out = model(x);
  // handle.remove(); out.backward()  -> the hook is called (PyTorch #25723).
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<nn::Linear>(1, 1, 3));
  nn::Module& layer = (*model)[0];
  int calls = 0;
  HookKey handle = layer.register_full_backward_hook(
      [&](nn::Module&, const Tensor&, const Tensor&) { ++calls; return Tensor(); });
  Tensor x = Tensor::from_vector({1, 1}, {1.f}).set_requires_grad(true);
  Tensor out = (*model)(x);
  CHECK(layer.remove_hook(handle));
  sum(out).backward();
  CHECK(calls == 1);
  // A graph built after the removal does not have it.
  sum((*model)(x)).backward();
  CHECK(calls == 1);
  CHECK_FALSE(layer.remove_hook(handle));
}

TEST_CASE("module hooks: results replace input, output, grad_output and grad_input") {
  auto make = [] {
    auto m = std::make_shared<nn::Sequential>();
    m->push_back(std::make_shared<nn::Linear>(3, 2, 5));
    return m;
  };
  auto plain = make();
  Tensor x0 = input(true);
  Tensor ref_out = (*plain)(x0);
  sum(ref_out).backward();
  const auto ref_w = plain->parameters()[0].grad().to_vector();
  const auto ref_x = x0.grad().to_vector();

  auto hooked = make();
  nn::Module& layer = (*hooked)[0];
  layer.register_forward_pre_hook([](nn::Module&, const Tensor& in) { return mul_scalar(in, 2.f); });
  layer.register_forward_hook(
      [](nn::Module&, const Tensor&, const Tensor& out) { return mul_scalar(out, 3.f); });
  layer.register_full_backward_pre_hook(
      [](nn::Module&, const Tensor& go) { return mul_scalar(go, 5.f); });
  layer.register_full_backward_hook(
      [](nn::Module&, const Tensor& gi, const Tensor&) { return mul_scalar(gi, 7.f); });
  Tensor x1 = input(true);
  Tensor out = (*hooked)(x1);
  // out = 3 * (W (2x) + b)
  const auto o_ref = ref_out.to_vector(), o = out.to_vector();
  const auto b = hooked->parameters()[1].to_vector();
  for (size_t i = 0; i < o.size(); ++i) {
    CHECK(o[i] == doctest::Approx(3.f * (2.f * (o_ref[i] - b[i % 2]) + b[i % 2])));
  }
  sum(out).backward();
  // The backward pre hook scales grad_output by 5 before the module's graph
  // (the forward hook's *3 is outside the module: it also reaches it).
  const auto gw = hooked->parameters()[0].grad().to_vector();
  for (size_t i = 0; i < gw.size(); ++i) CHECK(gw[i] == doctest::Approx(3 * 5 * 2 * ref_w[i]));
  // grad_input: d/dx through the pre hook's *2, the module, *5, *3, then *7.
  const auto gx = x1.grad().to_vector();
  for (size_t i = 0; i < gx.size(); ++i) CHECK(gx[i] == doctest::Approx(7 * 2 * 5 * 3 * ref_x[i]));
}

TEST_CASE("module hooks: with an input that needs no grad, grad_input is undefined") {
  auto model = two_layers();
  nn::Module& first = (*model)[0];
  int calls = 0;
  first.register_full_backward_hook([&](nn::Module&, const Tensor& gi, const Tensor& go) {
    ++calls;
    CHECK_FALSE(gi.defined());
    CHECK(go.defined());
    return Tensor();
  });
  sum((*model)(input(false))).backward();
  CHECK(calls == 1);
  first.register_full_backward_hook(
      [](nn::Module&, const Tensor&, const Tensor& go) { return go; });
  CHECK_THROWS_WITH(sum((*model)(input(false))).backward(),
                    doctest::Contains("Backward hook for Modules where no input requires gradient should always return None"));
}

TEST_CASE("module hooks: BackwardHookFunction Nodes wrap the module in the graph") {
  auto model = two_layers();
  nn::Module& layer = (*model)[2];
  layer.register_full_backward_hook([](nn::Module&, const Tensor&, const Tensor&) { return Tensor(); });
  Tensor out = (*model)(input(true));
  REQUIRE(out.grad_fn());
  CHECK(out.grad_fn()->name() == "BackwardHookFunctionBackward");
  // Its input: the Linear's Function, whose input comes through the other one.
  auto addmm = out.grad_fn()->next_edge(0).function;
  CHECK(addmm->name() == "AddmmBackward0");
  // PyTorch's edge order for F.linear's addmm: bias, x, weight^T.
  CHECK(addmm->next_edge(1).function->name() == "BackwardHookFunctionBackward");
  // No backward hooks, no wrapping.
  auto bare = two_layers();
  CHECK((*bare)(input(true)).grad_fn()->name() == "AddmmBackward0");
}

TEST_CASE("module hooks: a backward hook removed by a forward pre hook of the same call still runs") {
  auto model = two_layers();
  nn::Module& layer = (*model)[0];
  int backward_calls = 0, forward_calls = 0;
  HookKey bw = layer.register_full_backward_hook(
      [&](nn::Module&, const Tensor&, const Tensor&) { ++backward_calls; return Tensor(); });
  HookKey fw = layer.register_forward_hook(
      [&](nn::Module&, const Tensor&, const Tensor&) { ++forward_calls; return Tensor(); });
  layer.register_forward_pre_hook([&](nn::Module& m, const Tensor&) {
    m.remove_hook(bw);  // taken before the pre hooks ran: still runs in this backward
    m.remove_hook(fw);  // forward hooks are read after forward: it does not run
    return Tensor();
  });
  sum((*model)(input(true))).backward();
  CHECK(backward_calls == 1);
  CHECK(forward_calls == 0);
}

TEST_CASE("module hooks in the trace: node 0 for add/remove/forward, the BackwardHookFunction Node for backward") {
  auto model = two_layers();
  nn::Module& layer = (*model)[2];
  std::map<uint64_t, int> calls;
  trace::MemoryRecorder rec;
  rec.start();
  HookKey k1, k2, k3, k4;
  k1 = layer.register_forward_pre_hook([&](nn::Module&, const Tensor&) { ++calls[k1.value]; return Tensor(); });
  k2 = layer.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls[k2.value]; return Tensor(); });
  k3 = layer.register_full_backward_pre_hook([&](nn::Module&, const Tensor&) { ++calls[k3.value]; return Tensor(); });
  k4 = layer.register_full_backward_hook([&](nn::Module&, const Tensor&, const Tensor&) { ++calls[k4.value]; return Tensor(); });
  Tensor x = input(true);
  Tensor out = (*model)(x);
  const uint64_t out_node = out.grad_fn()->id();
  sum(out).backward();
  sum((*model)(x)).backward();
  CHECK(layer.remove_hook(k2));
  rec.finish();
  const OwnerId owner = layer.hook_owner();
  CHECK(owner_info(owner).label == "2");
  CHECK(owner_info(owner).kind == OwnerKind::kModule);
  std::map<uint64_t, int> fires;
  std::map<uint64_t, std::vector<uint64_t>> fire_nodes;
  int added = 0, removed = 0;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind == trace::EventKind::kHookAdded && trace::is_module_hook(static_cast<trace::HookKind>(e.sub))) {
      ++added;
      CHECK(e.node == 0);
      CHECK(e.owner == owner);
    }
    if (e.kind == trace::EventKind::kHookRemoved && e.key == k2.value) {
      ++removed;
      CHECK(e.node == 0);
    }
    if (e.kind == trace::EventKind::kHookFired && trace::is_module_hook(static_cast<trace::HookKind>(e.sub))) {
      ++fires[e.key];
      fire_nodes[e.key].push_back(e.node);
      CHECK(e.owner == owner);
    }
  }
  CHECK(added == 4);
  CHECK(removed == 1);
  for (HookKey k : {k1, k2, k3, k4}) {
    CAPTURE(k.value);
    CHECK(calls[k.value] == 2);
    CHECK(fires[k.value] == calls[k.value]);
  }
  CHECK(fire_nodes[k1.value] == std::vector<uint64_t>{0, 0});
  CHECK(fire_nodes[k3.value][0] == out_node);  // the output's BackwardHookFunction
  CHECK(fire_nodes[k4.value][0] != 0);
  CHECK(fire_nodes[k4.value][0] != out_node);  // the input's
}
