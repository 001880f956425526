// The rest of PyTorch 2.x's module hook API (docs/semantics.md M7-M12):
// modules with several and non-tensor arguments, with_kwargs, prepend,
// always_call, global module hooks, the legacy register_backward_hook, and
// register_multi_grad_hook. Note [Module hooks], Note [Module arguments],
// Note [Legacy module backward hooks], Note [Multi-grad hooks].
#include <doctest/doctest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "autograd/engine.h"
#include "autograd/multi_grad_hook.h"
#include "autograd/node.h"
#include "nn/nn.h"
#include "tensor/ops.h"
#include "trace/recorder.h"
#include "testing/test_util.h"

using namespace hookscope;
using nn::Args;
using nn::Grads;
using nn::Kwargs;

namespace {

// forward(x, y, k) = (x * y * k, 2 * y, "s"), as the PyTorch module
// `return x * y * k, y * 2, "s"`.
class Triple : public nn::Module {
 public:
  Args forward_args(const Args& args, const Kwargs& kwargs) override {
    float k = static_cast<float>(std::get<int64_t>(args.at(2)));
    for (const auto& [name, v] : kwargs) {
      if (name == "scale") k *= static_cast<float>(std::get<double>(v));
    }
    const Tensor& x = std::get<Tensor>(args.at(0));
    const Tensor& y = std::get<Tensor>(args.at(1));
    return {mul_scalar(mul(x, y), k), mul_scalar(y, 2.f), std::string("s")};
  }
  std::string name() const override { return "Triple"; }
};

class Throws : public nn::Module {
 public:
  Tensor forward(const Tensor&) override { throw std::runtime_error("forward failed"); }
  std::string name() const override { return "Throws"; }
};

Tensor vec(float a, float b, bool grad) {
  Tensor t = Tensor::from_vector({2}, {a, b});
  if (grad) t.set_requires_grad(true);
  return t;
}

std::vector<float> values(const Tensor& t) { return t.defined() ? t.to_vector() : std::vector<float>{}; }

// Collects warn() texts while it lives.
struct CaptureWarnings {
  std::vector<std::string> texts;
  nn::WarningHandler previous;
  CaptureWarnings() {
    previous = nn::set_warning_handler([this](const std::string& m) { texts.push_back(m); });
  }
  ~CaptureWarnings() { nn::set_warning_handler(previous); }
};

}  // namespace

TEST_CASE("module api: grad_input/grad_output tuples have None where PyTorch has None") {
  Triple m;
  Grads gi, go;
  int calls = 0;
  m.register_full_backward_hook(
      nn::Module::GradsBackwardHookFn([&](nn::Module&, const Grads& i, const Grads& o) {
        ++calls;
        gi = i;
        go = o;
        return std::nullopt;
      }));
  Tensor x = vec(1.f, 1.f, true), y = vec(2.f, 2.f, false);
  Args out = m.call({x, y, int64_t{3}});
  REQUIRE(out.size() == 3);
  CHECK(std::get<std::string>(out[2]) == "s");
  CHECK_FALSE(std::get<Tensor>(out[1]).requires_grad());  // non-differentiable, as in PyTorch
  sum(std::get<Tensor>(out[0])).backward();
  CHECK(calls == 1);
  REQUIRE(gi.size() == 3);
  CHECK(values(gi[0]) == std::vector<float>{6.f, 6.f});
  CHECK(values(gi[1]) == std::vector<float>{0.f, 0.f});  // materialized zeros, not None
  CHECK_FALSE(gi[2].defined());                          // the int
  REQUIRE(go.size() == 3);
  CHECK(values(go[0]) == std::vector<float>{1.f, 1.f});
  CHECK_FALSE(go[1].defined());  // needs no grad
  CHECK_FALSE(go[2].defined());  // the str
  CHECK(values(x.grad()) == std::vector<float>{6.f, 6.f});
}

TEST_CASE("module api: a full backward hook returns a grad_input tuple of the right length") {
  Triple m;
  m.register_full_backward_hook(nn::Module::GradsBackwardHookFn(
      [](nn::Module&, const Grads& gi, const Grads&) -> std::optional<Grads> {
        return Grads{mul_scalar(gi[0], 10.f), gi[1], Tensor()};
      }));
  Tensor x = vec(1.f, 2.f, true);
  sum(std::get<Tensor>(m.call({x, vec(1.f, 1.f, false), int64_t{1}})[0])).backward();
  CHECK(values(x.grad()) == std::vector<float>{10.f, 10.f});
  Triple bad;
  bad.register_full_backward_hook(nn::Module::GradsBackwardHookFn(
      [](nn::Module&, const Grads& gi, const Grads&) -> std::optional<Grads> {
        return Grads{gi[0]};
      }));
  CHECK_THROWS_WITH(
      sum(std::get<Tensor>(bad.call({vec(1.f, 2.f, true), vec(1.f, 1.f, false), int64_t{1}})[0]))
          .backward(),
      "Backward hook returned an invalid number of grad_input, got 1, but expected 3");
}

TEST_CASE("module api: with_kwargs hooks see and replace kwargs; prepend fires first") {
  Triple m;
  std::vector<std::string> order;
  m.register_forward_pre_hook(nn::Module::ArgsForwardPreHookFn([&](nn::Module&, const Args&) {
    order.push_back("pre");
    return std::nullopt;
  }));
  m.register_forward_pre_hook(
      nn::Module::KwargsForwardPreHookFn(
          [&](nn::Module&, const Args& args,
              const Kwargs& kwargs) -> std::optional<std::pair<Args, Kwargs>> {
            order.push_back("pre kwargs (prepended)");
            CHECK(kwargs.size() == 1);
            return std::make_pair(args, Kwargs{{"scale", 10.0}});
          }),
      {.prepend = true});
  m.register_forward_hook(nn::Module::KwargsForwardHookFn(
      [&](nn::Module&, const Args&, const Kwargs& kwargs, const Args& out) -> std::optional<Args> {
        order.push_back("forward kwargs");
        CHECK(std::get<double>(kwargs.at(0).second) == 10.0);
        return Args{out[0]};  // the result becomes a single tensor
      }));
  Args out = m.call({vec(1.f, 2.f, false), vec(1.f, 1.f, false), int64_t{1}}, {{"scale", 2.0}});
  CHECK(order == std::vector<std::string>{"pre kwargs (prepended)", "pre", "forward kwargs"});
  REQUIRE(out.size() == 1);
  CHECK(values(std::get<Tensor>(out[0])) == std::vector<float>{10.f, 20.f});
}

TEST_CASE("module api: always_call forward hooks run when forward throws") {
  Throws m;
  int always = 0, plain = 0;
  m.register_forward_hook(
      [&](nn::Module&, const Tensor&, const Tensor&) { ++plain; return Tensor(); });
  m.register_forward_hook(nn::Module::KwargsForwardHookFn(
                              [&](nn::Module&, const Args& args, const Kwargs&, const Args& out) {
                                ++always;
                                CHECK(args.size() == 1);
                                CHECK(out.empty());  // Python: result is None
                                return std::nullopt;
                              }),
                          {.always_call = true});
  m.register_forward_hook(nn::Module::ArgsForwardHookFn([](nn::Module&, const Args&, const Args&)
                                                            -> std::optional<Args> {
                            throw std::runtime_error("hook failed too");
                          }),
                          {.always_call = true});
  CaptureWarnings w;
  CHECK_THROWS_WITH(m(vec(1.f, 2.f, false)), "forward failed");
  CHECK(always == 1);
  CHECK(plain == 0);
  REQUIRE(w.texts.size() == 1);
  CHECK(w.texts[0] ==
        "module forward hook with ``always_call=True`` raised an exception that was silenced as "
        "another error was raised in forward: hook failed too");
}

TEST_CASE("module api: global module hooks run before the module's, owned by 'global module hooks'") {
  auto model = nn::mlp({3, 2}, 3);
  nn::Module& layer = (*model)[0];
  std::vector<std::string> order;
  trace::MemoryRecorder rec;
  rec.start();
  layer.register_forward_pre_hook([&](nn::Module&, const Tensor&) { order.push_back("pre"); return Tensor(); });
  layer.register_forward_hook([&](nn::Module&, const Tensor&, const Tensor&) { order.push_back("fwd"); return Tensor(); });
  layer.register_full_backward_pre_hook([&](nn::Module&, const Tensor&) { order.push_back("bw pre"); return Tensor(); });
  layer.register_full_backward_hook([&](nn::Module&, const Tensor&, const Tensor&) { order.push_back("bw"); return Tensor(); });
  std::vector<HookKey> global = {
      nn::register_module_forward_pre_hook([&](nn::Module& m, const Args&) {
        order.push_back("global pre " + m.path());
        return std::nullopt;
      }),
      nn::register_module_forward_hook(nn::Module::ArgsForwardHookFn([&](nn::Module& m, const Args&, const Args&) {
        order.push_back("global fwd " + m.path());
        return std::nullopt;
      })),
      nn::register_module_full_backward_pre_hook([&](nn::Module& m, const Grads&) {
        order.push_back("global bw pre " + m.path());
        return std::nullopt;
      }),
      nn::register_module_full_backward_hook([&](nn::Module& m, const Grads&, const Grads&) {
        order.push_back("global bw " + m.path());
        return std::nullopt;
      })};
  Tensor x = Tensor::from_vector({1, 3}, {1.f, 2.f, 3.f}).set_requires_grad(true);
  sum((*model)(x)).backward();
  for (HookKey k : global) CHECK(nn::remove_module_hook(k));
  CHECK_FALSE(nn::remove_module_hook(global[0]));
  rec.finish();
  // The Sequential (root) is called first and its child inside it.
  CHECK(order == std::vector<std::string>{
                     "global pre ", "global pre 0", "pre", "global fwd 0", "fwd", "global fwd ",
                     "global bw pre ", "global bw pre 0", "bw pre", "global bw 0", "bw",
                     "global bw "});
  const OwnerId owner = nn::global_module_hooks_owner();
  CHECK(owner_info(owner).label == "global module hooks");
  int added = 0, fired = 0, removed = 0, failed = 0;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind == trace::EventKind::kHookRemoveFailed && e.actor == owner) ++failed;  // the remover
    if (e.owner != owner) continue;
    if (e.kind == trace::EventKind::kHookAdded && e.node == 0) ++added;
    if (e.kind == trace::EventKind::kHookFired && trace::is_module_hook(static_cast<trace::HookKind>(e.sub))) ++fired;
    if (e.kind == trace::EventKind::kHookRemoved && e.node == 0) ++removed;
  }
  CHECK(added == 4);
  CHECK(fired == 8);  // each of the 4 for 2 modules
  CHECK(removed == 4);
  CHECK(failed == 1);
  // Removed: a module call no longer pays for them.
  order.clear();
  sum((*model)(x)).backward();
  CHECK(order == std::vector<std::string>{"pre", "fwd", "bw pre", "bw"});
}

TEST_CASE("module api: the legacy backward hook sees the last Node's gradients and warns") {
  nn::Linear layer(2, 2, 7);
  std::vector<Shape> gi_shapes, go_shapes;
  trace::MemoryRecorder rec;
  rec.start();
  HookKey key = layer.register_backward_hook([&](nn::Module&, const Grads& gi, const Grads& go) {
    for (const Tensor& g : gi) gi_shapes.push_back(g.defined() ? g.shape() : Shape{});
    for (const Tensor& g : go) go_shapes.push_back(g.shape());
    return std::nullopt;
  });
  CHECK_THROWS_WITH(layer.register_full_backward_hook(
                        [](nn::Module&, const Tensor&, const Tensor&) { return Tensor(); }),
                    doctest::Contains("Cannot use both regular backward hooks and full backward hooks"));
  CaptureWarnings w;
  Tensor x = Tensor::from_vector({3, 2}, {1, 2, 3, 4, 5, 6}).set_requires_grad(true);
  Tensor out = layer(x);
  sum(out).backward();
  rec.finish();
  // AddmmBackward0's inputs: bias, x, weight^T (PyTorch gives the same).
  CHECK(gi_shapes == std::vector<Shape>{{2}, {3, 2}, {2, 2}});
  CHECK(go_shapes == std::vector<Shape>{{3, 2}});
  REQUIRE(w.texts.size() == 1);
  CHECK(w.texts[0].rfind("Using a non-full backward hook when the forward contains multiple "
                         "autograd Nodes is deprecated", 0) == 0);
  bool fired_on_addmm = false;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind == trace::EventKind::kHookFired && e.key == key.value) {
      CHECK(e.sub == static_cast<uint8_t>(trace::HookKind::kModuleLegacyBackward));
      fired_on_addmm = e.node == out.grad_fn()->id();
    }
  }
  CHECK(fired_on_addmm);
  CHECK(out.grad_fn()->name() == "AddmmBackward0");
}

TEST_CASE("multi-grad hook 'all': once per backward, undefined for what the pass does not compute") {
  Tensor a = vec(1.f, 2.f, true), b = vec(3.f, 4.f, true);
  Tensor c = mul(a, b), d = mul(a, b);
  std::vector<std::vector<bool>> calls;
  trace::MemoryRecorder rec;
  rec.start();
  auto handle = autograd::register_multi_grad_hook({a, b, c, d}, [&](const variable_list& grads) {
    std::vector<bool> defined;
    for (const Tensor& g : grads) defined.push_back(g.defined());
    calls.push_back(defined);
  });
  sum(c).backward(Tensor(), true);
  sum(c).backward(Tensor(), true, {a});
  CHECK(calls == std::vector<std::vector<bool>>{{true, true, true, false}, {true, false, true, false}});
  CHECK(handle.remove());
  CHECK_FALSE(handle.remove());
  sum(c).backward();
  rec.finish();
  CHECK(calls.size() == 2);
  // One fire per call of the function, as PyTorch's user sees it and the
  // torch bridge records it, not one per tensor hook (3 + 2 ran).
  int fired = 0;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind != trace::EventKind::kHookFired || e.as<trace::ev::HookFired>().owner != handle.owner()) continue;
    CHECK(e.as<trace::ev::HookFired>().hook_kind == trace::HookKind::kTensorPre);
    CHECK(e.as<trace::ev::HookFired>().node != 0);
    ++fired;
  }
  CHECK(fired == 2);
}

TEST_CASE("multi-grad hook 'any': once per backward, with the first gradient") {
  Tensor a = vec(1.f, 2.f, true), b = vec(3.f, 4.f, true);
  Tensor c = mul(a, b);
  std::vector<std::vector<float>> calls;
  trace::MemoryRecorder rec;
  rec.start();
  auto handle = autograd::register_multi_grad_hook(
      {a, b, c}, [&](const Tensor& g) { calls.push_back(g.to_vector()); },
      autograd::MultiGradMode::kAny);
  sum(c).backward(Tensor(), true);
  sum(mul_scalar(c, 2.f)).backward();
  rec.finish();
  // c's gradient comes first (its Node runs before the leaves').
  CHECK(calls == std::vector<std::vector<float>>{{1.f, 1.f}, {2.f, 2.f}});
  int added = 0;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind == trace::EventKind::kHookAdded && e.owner == handle.owner()) {
      CHECK(e.sub == static_cast<uint8_t>(trace::HookKind::kTensorPre));
      ++added;
    }
  }
  CHECK(added == 3);
  // The first hook of each pass calls the function: one fire each, on c's Node.
  std::vector<uint64_t> fired_on;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind == trace::EventKind::kHookFired && e.as<trace::ev::HookFired>().owner == handle.owner()) {
      fired_on.push_back(e.as<trace::ev::HookFired>().node);
    }
  }
  REQUIRE(fired_on.size() == 2);
  CHECK(fired_on[0] == c.grad_fn()->id());
  CHECK(owner_info(handle.owner()).label == "multi_grad_hook (any)");
  CHECK_THROWS_WITH(autograd::register_multi_grad_hook({a, vec(0, 0, false)}, [](const Tensor&) {},
                                                       autograd::MultiGradMode::kAny),
                    doctest::Contains("tensor 1 does not require grad"));
}
