#pragma once
// float32 tensors with autograd metadata, named as in PyTorch.

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "autograd/hooks.h"
#include "tensor/device.h"

namespace hookscope {

class Node;
class Tensor;
using variable_list = std::vector<Tensor>;
using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);
int64_t numel_of(const Shape& shape);

// Contiguous float32 storage on one device. Small CPU tensors (scalars in
// autograd chains) keep their data inline: one allocation per tensor.
struct Storage {
  Device device = Device::kCPU;
  int device_index = -1;         // kCUDA: the device the block lives on; -1 on the CPU
  int64_t numel = 0;
  std::shared_ptr<void> cuda;    // device == kCUDA: a block from the caching allocator

  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void allocate_cpu(int64_t n) {
    numel = n;
    if (n <= kInline) {
      cpu_ = inline_;
    } else {
      heap_.resize(static_cast<size_t>(n));
      cpu_ = heap_.data();
    }
  }
  void adopt_cpu(std::vector<float> values) {
    numel = static_cast<int64_t>(values.size());
    heap_ = std::move(values);
    cpu_ = heap_.data();
  }
  float* cpu_data() { return cpu_; }
  float* cuda_data() { return static_cast<float*>(cuda.get()); }

 private:
  static constexpr int64_t kInline = 4;
  float* cpu_ = nullptr;
  std::vector<float> heap_;
  float inline_[kInline] = {};
};

// A tensor hook (Tensor::register_hook): sees the gradient flowing into the
// tensor; returning a defined tensor replaces it.
using TensorHookFn = std::function<Tensor(const Tensor& grad)>;
// Tensor::register_post_accumulate_grad_hook: runs after .grad was updated.
using PostAccumulateGradHookFn = std::function<void(const Tensor& param)>;

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  uint32_t output_nr = 0;
  std::shared_ptr<Node> grad_fn;           // non-leaf: the Function that made it
  std::weak_ptr<Node> grad_accumulator;    // leaf: as in PyTorch, held weakly
  std::shared_ptr<struct TensorImpl> grad; // accumulated gradient (leaf / retain_grad)
  std::string name;                        // parameter name, e.g. "0.weight"
  HookKey retain_grad_key;
  // Note [Leaf hooks live on the tensor]
  // A leaf's tensor hooks and post-accumulate hooks live here, not on its
  // AccumulateGrad, exactly as in PyTorch: the AccumulateGrad is held weakly
  // and may be freed and re-created between iterations, while hooks the user
  // registered on a parameter must survive that. AccumulateGrad reads these
  // lists when it runs. Their events name the AccumulateGrad current at the
  // time (it is created if needed when a hook is registered), and a later
  // AccumulateGrad of the same leaf carries the previous one's id, so the
  // analysis can follow the hooks across re-creation.
  HookList<TensorHookFn> leaf_tensor_pre_hooks;
  HookList<PostAccumulateGradHookFn> post_accumulate_hooks;
  uint64_t last_accumulator_id = 0;
};

struct TensorImpl {
  Shape shape;
  std::shared_ptr<Storage> storage;
  std::unique_ptr<AutogradMeta> autograd;
  ~TensorImpl();
};

class Tensor {
 public:
  Tensor() = default;
  explicit Tensor(std::shared_ptr<TensorImpl> impl) : impl_(std::move(impl)) {}

  // ---- factories (CPU) ----
  static Tensor empty(const Shape& shape, Device device = Device::kCPU);
  static Tensor zeros(const Shape& shape, Device device = Device::kCPU);
  static Tensor full(const Shape& shape, float value, Device device = Device::kCPU);
  static Tensor from_vector(const Shape& shape, std::vector<float> values);
  static Tensor scalar(float value);
  // Uniform in [lo, hi) / normal(0, std) from a seeded generator.
  static Tensor uniform(const Shape& shape, float lo, float hi, uint64_t seed);
  static Tensor randn(const Shape& shape, float std, uint64_t seed);

  bool defined() const { return impl_ != nullptr; }
  const Shape& shape() const;
  int64_t dim() const { return static_cast<int64_t>(shape().size()); }
  int64_t size(int64_t d) const;
  int64_t numel() const;
  Device device() const;
  // The CUDA device the data lives on; -1 for a CPU tensor.
  int device_index() const;
  // "cpu", "cuda:0", ... for messages.
  std::string device_str() const;

  // CPU data access; throws for a tensor on another device.
  float* data();
  const float* data() const;
  // The data on its own device (device memory for a CUDA tensor): for
  // kernels and collectives, never to be dereferenced on the host.
  float* data_ptr();
  const float* data_ptr() const;
  std::vector<float> to_vector() const;  // copies to host from any device
  float item() const;                     // single-element tensors

  Tensor to(Device device) const;  // copy to another device (no autograd)
  Tensor clone() const;            // deep copy of the data, no autograd history
  Tensor detach() const;           // shares data, no autograd history

  // ---- autograd ----
  bool requires_grad() const;
  Tensor& set_requires_grad(bool requires_grad);  // leaves only
  bool is_leaf() const;
  const std::shared_ptr<Node>& grad_fn() const;
  uint32_t output_nr() const;
  Tensor grad() const;
  void zero_grad();  // drops .grad (as set_to_none=True)
  void set_grad(const Tensor& grad);
  void retain_grad();
  bool retains_grad() const;
  const std::string& name() const;
  Tensor& set_name(std::string name);  // shows as the AccumulateGrad's label

  // The leaf's AccumulateGrad, created if it does not exist (weakly held here).
  std::shared_ptr<Node> grad_accumulator() const;

  // Tensor hook: on a leaf it runs before accumulation; on a non-leaf it is a
  // tensor pre hook of grad_fn for this output. Returns a key for remove_hook.
  HookKey register_hook(TensorHookFn fn, OwnerId owner = user_owner());
  bool remove_hook(HookKey key, OwnerId remover = user_owner());
  HookKey register_post_accumulate_grad_hook(PostAccumulateGradHookFn fn,
                                             OwnerId owner = user_owner());
  bool remove_post_accumulate_grad_hook(HookKey key, OwnerId remover = user_owner());

  // Computes gradients of this tensor w.r.t. graph leaves (see autograd/engine.h);
  // with `inputs`, only into those.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false,
                const variable_list& inputs = {}) const;

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  AutogradMeta* autograd_meta() const { return impl_ ? impl_->autograd.get() : nullptr; }
  AutogradMeta& materialize_autograd_meta();

  // Internal: make this tensor the output_nr-th output of grad_fn.
  void set_history(std::shared_ptr<Node> grad_fn, uint32_t output_nr);

  std::string to_string(int max_elems = 8) const;

 private:
  void check_defined(const char* what) const;
  std::shared_ptr<TensorImpl> impl_;
};

// Grad mode: ops record history only when enabled (per thread, default on).
struct GradMode {
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

class NoGradGuard {
 public:
  NoGradGuard() : prev_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(prev_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool prev_;
};

}  // namespace hookscope
