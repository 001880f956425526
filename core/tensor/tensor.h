#pragma once
// float32 tensors with autograd metadata, named as in PyTorch.
//
// Note [Layers]
// ~~~~~~~~~~~~~
// tensor/ sits below autograd/, as ATen below torch/csrc/autograd: nothing in
// core/tensor includes core/autograd. The autograd half of Tensor's API
// (requires_grad, grad_fn, hooks, backward) is declared here and defined in
// autograd/variable.cpp, next to AutogradMeta (as PyTorch's variable.cpp);
// the differentiable ops declared in tensor/ops.h are defined in
// autograd/ops.cpp (as PyTorch's VariableType wraps ATen's kernels).

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "trace/hook_key.h"

namespace hookscope {

class Node;
class Tensor;
using variable_list = std::vector<Tensor>;
using Shape = std::vector<int64_t>;

std::string shape_str(const Shape& shape);
int64_t numel_of(const Shape& shape);

// Note [CPU block cache]
// CPU blocks of 64 KiB and more are kept when freed and handed out again for
// the same size (bounded, process-wide), so a training step that allocates
// the same tensors every step neither page-faults nor goes back to the
// kernel for them (what PyTorch's CUDA caching allocator does on the GPU).
float* cpu_block_acquire(int64_t numel);
void cpu_block_release(float* block, int64_t numel);

// Contiguous float32 storage on one device. Small CPU tensors (scalars in
// autograd chains) keep their data inline: one allocation per tensor.
struct Storage {
  Device device = Device::kCPU;
  int device_index = -1;         // kCUDA: the device the block lives on; -1 on the CPU
  int64_t numel = 0;
  std::shared_ptr<void> cuda;    // device == kCUDA: a block from the caching allocator

  Storage() = default;
  ~Storage();  // returns a large CPU block to the block cache (tensor/cpu_allocator.cpp)
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  // Uninitialised, as at::empty: every kernel writes all of its output.
  void allocate_cpu(int64_t n) {
    cpu_block_release(block_, numel);
    block_ = nullptr;
    numel = n;
    if (n <= kInline) {
      cpu_ = inline_;
    } else {
      block_ = cpu_block_acquire(n);
      cpu_ = block_;
    }
  }
  void adopt_cpu(std::vector<float> values) {
    cpu_block_release(block_, numel);
    block_ = nullptr;
    numel = static_cast<int64_t>(values.size());
    heap_ = std::move(values);
    cpu_ = heap_.data();
  }
  // Note [Storage views]
  // A view of `n` floats at `data` inside another Storage (DDP's gradients as
  // views of the bucket, Note [Gradients as bucket views] in ddp/reducer.cpp):
  // `owner` keeps that memory alive; kernels see plain contiguous data.
  void alias_cpu(float* data, int64_t n, std::shared_ptr<void> owner) {
    cpu_block_release(block_, numel);
    block_ = nullptr;
    numel = n;
    cpu_ = data;
    owner_ = std::move(owner);
  }
  float* cpu_data() { return cpu_; }
  float* cuda_data() { return static_cast<float*>(cuda.get()); }

 private:
  static constexpr int64_t kInline = 4;
  float* cpu_ = nullptr;
  float* block_ = nullptr;  // from cpu_block_acquire, numel floats
  std::vector<float> heap_;
  std::shared_ptr<void> owner_;
  float inline_[kInline] = {};
};

// A tensor hook (Tensor::register_hook): sees the gradient flowing into the
// tensor; returning a defined tensor replaces it.
using TensorHookFn = std::function<Tensor(const Tensor& grad)>;
// Tensor::register_post_accumulate_grad_hook: runs after .grad was updated.
using PostAccumulateGradHookFn = std::function<void(const Tensor& param)>;

// Autograd metadata (requires_grad, grad_fn, .grad, leaf hooks): AutogradMeta,
// declared in autograd/variable.h (Note [Layers]); a tensor that never took
// part in autograd has none. A TensorImpl owns it through this interface, as
// c10's TensorImpl owns an AutogradMetaInterface, so that tensor/ can destroy
// it without knowing it (and links without autograd/).
struct AutogradMetaInterface {
  virtual ~AutogradMetaInterface() = default;
};
struct AutogradMeta;

struct TensorImpl {
  Shape shape;
  std::shared_ptr<Storage> storage;
  std::unique_ptr<AutogradMetaInterface> autograd;
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
  // Owner kDefaultHookOwner means the default user owner (user_owner()).
  HookKey register_hook(TensorHookFn fn, OwnerId owner = kDefaultHookOwner);
  bool remove_hook(HookKey key, OwnerId remover = kDefaultHookOwner);
  HookKey register_post_accumulate_grad_hook(PostAccumulateGradHookFn fn,
                                             OwnerId owner = kDefaultHookOwner);
  bool remove_post_accumulate_grad_hook(HookKey key, OwnerId remover = kDefaultHookOwner);

  // Computes gradients of this tensor w.r.t. graph leaves (see autograd/engine.h);
  // with `inputs`, only into those.
  void backward(const Tensor& gradient = Tensor(), bool retain_graph = false,
                const variable_list& inputs = {}) const;

  TensorImpl* impl() const { return impl_.get(); }
  const std::shared_ptr<TensorImpl>& impl_ptr() const { return impl_; }
  AutogradMeta* autograd_meta() const;  // inline in autograd/variable.h
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
