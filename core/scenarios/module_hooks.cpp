#include "scenarios/module_hooks.h"

#include <any>
#include <sstream>
#include <stdexcept>

#include "autograd/saved_variable.h"
#include "nn/nn.h"
#include "tensor/ops.h"

namespace hookscope::scenarios {

ModuleHooksResult run_module_hooks(const ModuleHooksOptions& options) {
  if (options.steps < 2) throw std::invalid_argument("module-hooks: --steps must be >= 2");
  check_device_usable(options.device);
  ModuleHooksResult result;
  nn::SyntheticClassification data(6, 3, options.seed);
  auto model = nn::mlp({6, 12, 3}, options.seed, options.device);
  nn::SGD sgd(model->parameters(), 0.1f);
  nn::Module& first = (*model)[0];
  nn::Module& last = (*model)[2];

  // An activation logger on the first layer, a gradient scaler-in-waiting on
  // the last (observes only), and the probe whose removal is the story.
  first.register_forward_hook([&result](nn::Module&, const Tensor&, const Tensor&) {
    ++result.forward_hook_calls;
    return Tensor();
  });
  last.register_full_backward_pre_hook([&result](nn::Module&, const Tensor&) {
    ++result.backward_pre_hook_calls;
    return Tensor();
  });
  bool removed = false;
  HookKey probe = last.register_full_backward_hook(
      [&result, &removed](nn::Module&, const Tensor&, const Tensor&) {
        ++result.backward_hook_calls;
        if (removed) ++result.calls_after_removal;
        return Tensor();
      });
  const OwnerId offloader = create_owner(OwnerKind::kUser, "activation offloader");

  for (int step = 0; step < options.steps; ++step) {
    auto batch = data.batch(static_cast<uint64_t>(step), 16);
    Tensor loss;
    if (step == options.steps - 1) {
      // The last step saves its activations through saved-tensor hooks, as an
      // offloading scheme would (here: a copy kept on the host).
      SavedTensorsHooks hooks(
          [&result](const Tensor& t) -> std::any {
            ++result.saved_tensors_packed;
            return t.to(Device::kCPU);
          },
          [&result, device = options.device](const std::any& p) {
            ++result.saved_tensors_unpacked;
            return std::any_cast<Tensor>(p).to(device);
          },
          offloader);
      loss = cross_entropy((*model)(batch.x.to(options.device)), batch.y);
    } else {
      loss = cross_entropy((*model)(batch.x.to(options.device)), batch.y);
    }
    if (step == 1) {
      // handle.remove() after forward, before backward: the module took its
      // backward hooks when it was called, so the probe still fires in this
      // backward (PyTorch #25723, "expected behavior").
      removed = last.remove_hook(probe);
    }
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    result.losses.push_back(loss.item());
  }
  destroy_owner(offloader);
  return result;
}

std::string format_result(const ModuleHooksOptions& options, const ModuleHooksResult& r) {
  std::ostringstream os;
  os << "module-hooks: MLP 6-12-3, " << r.losses.size() << " SGD step(s), loss "
     << r.losses.front() << " -> " << r.losses.back() << "\n";
  os << "  full backward hook on module '2': " << r.backward_hook_calls << " call(s), "
     << r.calls_after_removal
     << " after its removal in step 1 (it was taken when the module was called: #25723)\n";
  os << "  forward hook calls: " << r.forward_hook_calls
     << ", backward pre hook calls: " << r.backward_pre_hook_calls << "\n";
  os << "  saved tensors in step " << options.steps - 1 << ": " << r.saved_tensors_packed
     << " packed, " << r.saved_tensors_unpacked << " unpacked\n";
  return os.str();
}

}  // namespace hookscope::scenarios
