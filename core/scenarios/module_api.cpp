#include "scenarios/module_api.h"

#include <algorithm>
#include <sstream>
#include <stdexcept>

#include "autograd/multi_grad_hook.h"
#include "autograd/node.h"
#include "nn/nn.h"
#include "tensor/ops.h"

namespace hookscope::scenarios {

namespace {

using nn::Args;
using nn::Grads;
using nn::Kwargs;

// gate(h, mask, "mode", scale=) = (h * mask * scale, mask): a module with a
// tensor that needs no grad, a string and a keyword argument.
class Gate : public nn::Module {
 public:
  Args forward_args(const Args& args, const Kwargs& kwargs) override {
    if (args.size() != 3 || !nn::as_tensor(args[0]) || !nn::as_tensor(args[1])) {
      throw std::invalid_argument("Gate: expected (h, mask, mode)");
    }
    float scale = 1.f;
    for (const auto& [name, v] : kwargs) {
      if (name == "scale") scale = static_cast<float>(std::get<double>(v));
    }
    const Tensor& mask = *nn::as_tensor(args[1]);
    return {mul_scalar(mul(*nn::as_tensor(args[0]), mask), scale), mask};
  }
  std::string name() const override { return "Gate"; }
};

class Broken : public nn::Module {
 public:
  Tensor forward(const Tensor&) override { throw std::runtime_error("Broken: forward failed"); }
  std::string name() const override { return "Broken"; }
};

std::string describe(const Grads& grads) {
  std::string s = "(";
  for (size_t i = 0; i < grads.size(); ++i) {
    if (i) s += ", ";
    if (!grads[i].defined()) {
      s += "None";
    } else {
      const auto v = grads[i].to_vector();
      s += std::all_of(v.begin(), v.end(), [](float x) { return x == 0.f; }) ? "zeros" : "T";
    }
  }
  return s + ")";
}

}  // namespace

ModuleApiResult run_module_api(const ModuleApiOptions& options) {
  if (options.steps < 1) throw std::invalid_argument("module-api: --steps must be >= 1");
  check_device_usable(options.device);
  ModuleApiResult r;
  nn::WarningHandler previous = nn::set_warning_handler([&r](const std::string& m) {
    if (std::find(r.warnings.begin(), r.warnings.end(), m) == r.warnings.end()) r.warnings.push_back(m);
  });
  nn::SyntheticClassification data(6, 3, options.seed);
  nn::Linear encoder(6, 12, options.seed, options.device), head(12, 3, options.seed + 1, options.device);
  encoder.set_path("encoder");
  head.set_path("head");
  Gate gate;
  gate.set_path("gate");
  nn::SGD sgd({encoder.weight, encoder.bias, head.weight, head.bias}, 0.1f);

  // A global activation logger: every module call.
  HookKey global = nn::register_module_forward_hook(nn::Module::ArgsForwardHookFn(
      [&r](nn::Module&, const Args&, const Args&) {
        ++r.global_forward_calls;
        return std::nullopt;
      }));
  // The gate's hooks: a with_kwargs pre hook that sets its scale, prepended
  // before a plain one; a full backward hook that sees its gradient tuples.
  gate.register_forward_pre_hook(nn::Module::ArgsForwardPreHookFn(
      [](nn::Module&, const Args&) { return std::nullopt; }));
  gate.register_forward_pre_hook(
      nn::Module::KwargsForwardPreHookFn(
          [](nn::Module&, const Args& args,
             const Kwargs&) -> std::optional<std::pair<Args, Kwargs>> {
            return std::make_pair(args, Kwargs{{"scale", 0.5}});
          }),
      {.prepend = true});
  gate.register_full_backward_hook(nn::Module::GradsBackwardHookFn(
      [&r](nn::Module&, const Grads& gi, const Grads&) {
        if (r.gate_backward_calls++ == 0) r.gate_grad_input = describe(gi);
        return std::nullopt;
      }));
  // The deprecated hook on the head: it lands on AddmmBackward0.
  head.register_backward_hook([&r](nn::Module&, const Grads& gi, const Grads&) {
    if (r.legacy_calls++ == 0) r.legacy_grad_inputs = gi.size();
    return std::nullopt;
  });
  // Multi-grad hooks over the encoder's parameters: once per backward.
  auto all = autograd::register_multi_grad_hook(
      {encoder.weight, encoder.bias}, [&r](const variable_list&) { ++r.multi_all_calls; });
  auto any = autograd::register_multi_grad_hook(
      {head.weight, head.bias}, [&r](const Tensor&) { ++r.multi_any_calls; },
      autograd::MultiGradMode::kAny);

  for (int step = 0; step < options.steps; ++step) {
    auto batch = data.batch(static_cast<uint64_t>(step), 8);
    Tensor h = relu(encoder(batch.x.to(options.device)));
    Tensor mask = Tensor::full(h.shape(), 1.f, options.device);
    Args gated = gate.call({h, mask, std::string("train")});
    Tensor logits = head(std::get<Tensor>(gated[0]));
    if (step == 0) r.legacy_grad_input_node = logits.grad_fn()->name();
    Tensor loss = cross_entropy(logits, batch.y);
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    r.losses.push_back(loss.item());
  }
  // always_call: a logger that runs even when forward throws.
  Broken broken;
  broken.set_path("broken");
  broken.register_forward_hook(nn::Module::ArgsForwardHookFn([&r](nn::Module&, const Args&, const Args&) {
                                 ++r.always_call_runs;
                                 return std::nullopt;
                               }),
                               {.always_call = true});
  try {
    broken(Tensor::zeros({1, 6}, options.device));
  } catch (const std::runtime_error&) {
  }
  all.remove();
  any.remove();
  nn::remove_module_hook(global);
  nn::set_warning_handler(previous);
  return r;
}

std::string format_result(const ModuleApiOptions& options, const ModuleApiResult& r) {
  std::ostringstream os;
  os << "module-api: encoder -> gate(h, mask, \"train\", scale=) -> head, " << r.losses.size()
     << " SGD step(s), loss " << r.losses.front() << " -> " << r.losses.back() << "\n";
  os << "  global module forward hook: " << r.global_forward_calls << " call(s)\n";
  os << "  gate's full backward hook: " << r.gate_backward_calls << " call(s); grad_input "
     << r.gate_grad_input << " (h, the mask that needs no grad, the str)\n";
  os << "  head's legacy backward hook: " << r.legacy_calls << " call(s) on "
     << r.legacy_grad_input_node << ", " << r.legacy_grad_inputs
     << " grad_input(s) for its 1 input (the wrong Node, as in PyTorch)\n";
  for (const auto& w : r.warnings) os << "  warning: " << w << "\n";
  os << "  multi-grad hooks: 'all' " << r.multi_all_calls << " call(s), 'any' "
     << r.multi_any_calls << " call(s) in " << options.steps << " backward(s)\n";
  os << "  always_call forward hook after a throwing forward: " << r.always_call_runs
     << " run(s)\n";
  return os.str();
}

}  // namespace hookscope::scenarios
