#include "scenarios/autograd_demo.h"

#include <stdexcept>

#include "autograd/node.h"
#include "nn/nn.h"
#include "tensor/ops.h"

namespace hookscope::scenarios {

AutogradDemoResult run_autograd_demo(const AutogradDemoOptions& options) {
  if (options.steps < 1) throw std::invalid_argument("autograd-demo: --steps must be >= 1");
  check_device_usable(options.device);
  AutogradDemoResult result;
  nn::SyntheticClassification data(8, 3, options.seed);
  auto model = nn::mlp({8, 16, 16, 3}, options.seed, options.device);
  nn::SGD sgd(model->parameters(), 0.1f);
  auto params = model->named_parameters();
  const OwnerId clip_owner = create_owner(OwnerKind::kUser, "grad clipper");
  const OwnerId probe_owner = create_owner(OwnerKind::kUser, "probe");

  // A tensor hook on the first weight that clips its gradient, and a
  // post-accumulate hook on the last bias that counts updates.
  int clipped = 0, accumulated = 0;
  HookKey clip_key = params[0].tensor.register_hook(
      [&clipped](const Tensor& g) {
        ++clipped;
        return g;  // observe only
      },
      clip_owner);
  ++result.hooks_added;
  HookKey acc_key = params.back().tensor.register_post_accumulate_grad_hook(
      [&accumulated](const Tensor&) { ++accumulated; }, probe_owner);
  ++result.hooks_added;

  HookKey stale;
  for (int step = 0; step < options.steps; ++step) {
    auto batch = data.batch(static_cast<uint64_t>(step), 32);
    Tensor loss = cross_entropy((*model)(batch.x.to(options.device)), batch.y);
    // A pre hook and a post hook on the loss's grad_fn, and a post hook on the
    // first weight's AccumulateGrad; the post hook removes itself when it fires.
    std::shared_ptr<Node> fn = loss.grad_fn();
    fn->add_pre_hook([](variable_list&) {}, probe_owner);
    ++result.hooks_added;
    auto acc = params[0].tensor.grad_accumulator();
    auto self_key = std::make_shared<HookKey>();
    *self_key = acc->add_post_hook(
        [acc_weak = std::weak_ptr<Node>(acc), self_key, &result, probe_owner](
            variable_list&, const variable_list&) {
          if (auto a = acc_weak.lock()) {
            if (a->del_post_hook(*self_key, probe_owner)) ++result.hooks_removed;
          }
        },
        probe_owner);
    ++result.hooks_added;
    if (step == 1) stale = *self_key;  // removed during that step's backward
    if (step == options.steps - 1 && stale) {
      // The ABA case PR #21591 worried about: a key whose hook is gone must
      // not remove anything, even after many newer hooks were added.
      if (!acc->del_post_hook(stale, probe_owner)) ++result.stale_removals_refused;
      if (params.back().tensor.remove_post_accumulate_grad_hook(acc_key, probe_owner)) {
        ++result.hooks_removed;
      }
    }
    sgd.zero_grad();
    loss.backward();
    sgd.step();
    result.losses.push_back(loss.item());
  }
  if (params[0].tensor.remove_hook(clip_key, clip_owner)) ++result.hooks_removed;
  destroy_owner(clip_owner);
  destroy_owner(probe_owner);
  return result;
}

}  // namespace hookscope::scenarios
