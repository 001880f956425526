#pragma once
// A small nn library: enough to train the MLPs the scenarios run.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "autograd/hooks.h"
#include "nn/module_args.h"
#include "tensor/tensor.h"

namespace hookscope::nn {

struct ModuleHooks;

struct NamedParameter {
  std::string name;  // "0.weight", "2.bias", ...
  Tensor tensor;
};

// register_*_hook's keyword options (module.py): `prepend` fires the hook
// before those already registered; `always_call` (forward hooks) runs it
// even when forward or an earlier hook throws (Note [Module hooks]).
struct HookOptions {
  bool prepend = false;
  bool always_call = false;
};

class Module {
 public:
  // Module hooks (Note [Module hooks]). Hooks on Tensors are for modules
  // called with one Tensor and returning one; a hook returning an undefined
  // Tensor keeps the value it was given (Python: returning None).
  //  forward pre hook: sees the input before forward; may replace it.
  using ForwardPreHookFn = std::function<Tensor(Module& module, const Tensor& input)>;
  //  forward hook: sees input and output after forward; may replace the output.
  using ForwardHookFn =
      std::function<Tensor(Module& module, const Tensor& input, const Tensor& output)>;
  //  full backward pre hook: the gradient w.r.t. the output; may replace it.
  using BackwardPreHookFn = std::function<Tensor(Module& module, const Tensor& grad_output)>;
  //  full backward hook: gradients w.r.t. the input (undefined when the input
  //  does not require grad) and the output; may replace the input's.
  using BackwardHookFn = std::function<Tensor(Module& module, const Tensor& grad_input,
                                              const Tensor& grad_output)>;
  // The same hooks on any arguments (Note [Module arguments]); std::nullopt
  // keeps the value. The Kwargs forms are PyTorch's with_kwargs=True.
  using ArgsForwardPreHookFn = std::function<std::optional<Args>(Module&, const Args& args)>;
  using KwargsForwardPreHookFn = std::function<std::optional<std::pair<Args, Kwargs>>(
      Module&, const Args& args, const Kwargs& kwargs)>;
  using ArgsForwardHookFn =
      std::function<std::optional<Args>(Module&, const Args& args, const Args& output)>;
  using KwargsForwardHookFn = std::function<std::optional<Args>(
      Module&, const Args& args, const Kwargs& kwargs, const Args& output)>;
  using GradsBackwardPreHookFn =
      std::function<std::optional<Grads>(Module&, const Grads& grad_output)>;
  using GradsBackwardHookFn = std::function<std::optional<Grads>(
      Module&, const Grads& grad_input, const Grads& grad_output)>;

  Module();
  virtual ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  // A module overrides one of the two: forward for one Tensor in, one out;
  // forward_args for anything else (Note [Module arguments]).
  virtual Tensor forward(const Tensor& x);
  virtual Args forward_args(const Args& args, const Kwargs& kwargs);
  virtual std::string name() const = 0;
  // Parameters in registration order, names prefixed with `prefix`.
  virtual std::vector<NamedParameter> named_parameters(const std::string& prefix = "") const {
    (void)prefix;
    return {};
  }
  std::vector<Tensor> parameters() const;
  void zero_grad();
  // Calls forward with the module's hooks and the global module hooks, as
  // PyTorch's Module.__call__ (module_call.cpp).
  Args call(Args args, Kwargs kwargs = {});
  // call() for one Tensor in and one out.
  Tensor operator()(const Tensor& x);

  HookKey register_forward_pre_hook(ForwardPreHookFn fn, HookOptions options = {});
  HookKey register_forward_pre_hook(ArgsForwardPreHookFn fn, HookOptions options = {});
  HookKey register_forward_pre_hook(KwargsForwardPreHookFn fn, HookOptions options = {});
  HookKey register_forward_hook(ForwardHookFn fn, HookOptions options = {});
  HookKey register_forward_hook(ArgsForwardHookFn fn, HookOptions options = {});
  HookKey register_forward_hook(KwargsForwardHookFn fn, HookOptions options = {});
  HookKey register_full_backward_pre_hook(BackwardPreHookFn fn, HookOptions options = {});
  HookKey register_full_backward_pre_hook(GradsBackwardPreHookFn fn, HookOptions options = {});
  HookKey register_full_backward_hook(BackwardHookFn fn, HookOptions options = {});
  HookKey register_full_backward_hook(GradsBackwardHookFn fn, HookOptions options = {});
  // The deprecated Module.register_backward_hook, with PyTorch's behaviour:
  // a post hook on the Node that made the first tensor of each call's result,
  // so grad_input is that Node's gradients, not the module's (Note [Legacy
  // module backward hooks]). Not with full backward hooks on one module.
  HookKey register_backward_hook(GradsBackwardHookFn fn);
  // Removes a hook of any kind by key (RemovableHandle.remove()). False, and
  // a failed removal in the trace, for a key that names no live hook here.
  bool remove_hook(HookKey key);
  size_t num_hooks() const;

  // The module's qualified name in its model ("0", "encoder.layers.3"; "" for
  // the root). Containers set their children's; set it before adding hooks,
  // since the hooks' owner is named once, when the first hook is added.
  const std::string& path() const { return path_; }
  virtual void set_path(std::string path) { path_ = std::move(path); }
  // The owner of this module's hooks (OwnerKind::kModule, label = path or
  // "(root)"), created with the first hook.
  OwnerId hook_owner();

 private:
  std::string path_;
  std::unique_ptr<ModuleHooks> hooks_;
};

// Global module hooks (torch.nn.modules.module.register_module_*_hook): they
// run for every module's call, before the module's own hooks of the same
// kind; owner "global module hooks" (Note [Module hooks]). Thread-safe.
HookKey register_module_forward_pre_hook(Module::ArgsForwardPreHookFn fn);
HookKey register_module_forward_hook(Module::ArgsForwardHookFn fn, HookOptions options = {});
HookKey register_module_forward_hook(Module::KwargsForwardHookFn fn, HookOptions options = {});
HookKey register_module_full_backward_pre_hook(Module::GradsBackwardPreHookFn fn);
HookKey register_module_full_backward_hook(Module::GradsBackwardHookFn fn);
// RemovableHandle.remove() for a global module hook.
bool remove_module_hook(HookKey key);
OwnerId global_module_hooks_owner();

// Where PyTorch calls warnings.warn (deprecated module hooks, an always_call
// hook that threw): the handler gets the warning's text (under a lock: it must
// not call set_warning_handler). Default: each text once, one line
// on stderr. Returns the previous handler.
using WarningHandler = std::function<void(const std::string& message)>;
WarningHandler set_warning_handler(WarningHandler handler);
void warn(const std::string& message);

// y = x @ W^T + b, W: [out, in], initialised as PyTorch's (Kaiming uniform).
class Linear : public Module {
 public:
  Linear(int64_t in_features, int64_t out_features, uint64_t seed, Device device = Device::kCPU);
  Tensor forward(const Tensor& x) override;
  std::string name() const override;
  std::vector<NamedParameter> named_parameters(const std::string& prefix = "") const override;
  Tensor weight, bias;

 private:
  int64_t in_, out_;
};

class ReLU : public Module {
 public:
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "ReLU()"; }
};

class Sequential : public Module {
 public:
  Sequential() = default;
  // Adds a child named by its position ("0", "1", ...: under this module's path).
  void push_back(std::shared_ptr<Module> m);
  void set_path(std::string path) override;
  Tensor forward(const Tensor& x) override;
  std::string name() const override { return "Sequential"; }
  std::vector<NamedParameter> named_parameters(const std::string& prefix = "") const override;
  size_t size() const { return modules_.size(); }
  Module& operator[](size_t i) { return *modules_.at(i); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// Linear/ReLU stack: sizes {784, 256, 256, 10} gives
// Linear(784,256) ReLU Linear(256,256) ReLU Linear(256,10); parameters are
// named by position ("0.weight", "0.bias", "2.weight", ...) and every
// parameter tensor carries its name (shown on its AccumulateGrad).
std::shared_ptr<Sequential> mlp(const std::vector<int64_t>& sizes, uint64_t seed,
                                Device device = Device::kCPU);

// Plain SGD: p -= lr * p.grad (parameters without a grad are skipped).
class SGD {
 public:
  SGD(std::vector<Tensor> params, float lr) : params_(std::move(params)), lr_(lr) {}
  void step();
  void zero_grad();

 private:
  std::vector<Tensor> params_;
  float lr_;
};

// A seeded synthetic classification task: `classes` Gaussian blobs in
// `features` dimensions. batch(step, rank, world) returns this rank's shard of
// global batch `step` (the shards of all ranks together are the full batch).
class SyntheticClassification {
 public:
  SyntheticClassification(int64_t features, int64_t classes, uint64_t seed);
  struct Batch {
    Tensor x;                     // [rows, features]
    std::vector<int64_t> y;       // [rows]
  };
  Batch batch(uint64_t step, int64_t global_batch, int rank = 0, int world = 1) const;
  int64_t features() const { return features_; }
  int64_t classes() const { return classes_; }

 private:
  int64_t features_, classes_;
  uint64_t seed_;
  std::vector<float> centers_;  // [classes, features]
};

}  // namespace hookscope::nn
