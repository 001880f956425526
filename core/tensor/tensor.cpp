#include "tensor/tensor.h"

#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "tensor/kernels.h"
#include "trace/emit.h"
#include "trace/strings.h"

namespace hookscope {

using trace::EventKind;

std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

int64_t numel_of(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw std::invalid_argument("negative dimension in shape " + shape_str(shape));
    n *= d;
  }
  return n;
}

TensorImpl::~TensorImpl() {
  // Note [Leaf hooks live on the tensor]: they go when the leaf goes.
  if (!autograd || !trace::recording()) return;
  const uint64_t node = autograd->last_accumulator_id;
  for (const auto* e : autograd->leaf_tensor_pre_hooks.live_entries()) {
    trace::emit(EventKind::kHookRemoved, static_cast<uint8_t>(HookKind::kTensorPre), node,
                e->key.value, static_cast<uint64_t>(trace::RemoveCause::kTensorReleased),
                e->owner);
  }
  for (const auto* e : autograd->post_accumulate_hooks.live_entries()) {
    trace::emit(EventKind::kHookRemoved, static_cast<uint8_t>(HookKind::kPostAccumulate),
                node, e->key.value,
                static_cast<uint64_t>(trace::RemoveCause::kTensorReleased), e->owner);
  }
}

// ---- factories --------------------------------------------------------------

Tensor Tensor::empty(const Shape& shape, Device device) {
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->storage = kernels_for(device).allocate(numel_of(shape));
  return Tensor(std::move(impl));
}

Tensor Tensor::zeros(const Shape& shape, Device device) { return full(shape, 0.f, device); }

Tensor Tensor::full(const Shape& shape, float value, Device device) {
  Tensor t = empty(shape, device);
  kernels_for(device).fill(t, value);
  return t;
}

Tensor Tensor::from_vector(const Shape& shape, std::vector<float> values) {
  if (static_cast<int64_t>(values.size()) != numel_of(shape)) {
    throw std::invalid_argument("from_vector: " + std::to_string(values.size()) +
                                " values do not fill shape " + shape_str(shape));
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->storage = std::make_shared<Storage>();
  impl->storage->adopt_cpu(std::move(values));
  return Tensor(std::move(impl));
}

Tensor Tensor::scalar(float value) { return from_vector({}, {value}); }

Tensor Tensor::uniform(const Shape& shape, float lo, float hi, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = dist(gen);
  return from_vector(shape, std::move(v));
}

Tensor Tensor::randn(const Shape& shape, float std, uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.f, std);
  std::vector<float> v(static_cast<size_t>(numel_of(shape)));
  for (float& x : v) x = dist(gen);
  return from_vector(shape, std::move(v));
}

// ---- accessors --------------------------------------------------------------

void Tensor::check_defined(const char* what) const {
  if (!impl_) throw std::logic_error(std::string(what) + " called on an undefined tensor");
}

const Shape& Tensor::shape() const {
  check_defined("shape()");
  return impl_->shape;
}

int64_t Tensor::size(int64_t d) const {
  const Shape& s = shape();
  int64_t n = static_cast<int64_t>(s.size());
  if (d < 0) d += n;
  if (d < 0 || d >= n) {
    throw std::out_of_range("size(" + std::to_string(d) + ") of a tensor of shape " +
                            shape_str(s));
  }
  return s[static_cast<size_t>(d)];
}

int64_t Tensor::numel() const { return numel_of(shape()); }

Device Tensor::device() const {
  check_defined("device()");
  return impl_->storage->device;
}

int Tensor::device_index() const {
  check_defined("device_index()");
  return impl_->storage->device_index;
}

std::string Tensor::device_str() const { return device_string(device(), device_index()); }

float* Tensor::data() {
  check_defined("data()");
  if (impl_->storage->device != Device::kCPU) {
    throw std::logic_error("data() needs a CPU tensor; this one is on " + device_str() +
                           " (use to(Device::kCPU))");
  }
  return impl_->storage->cpu_data();
}

const float* Tensor::data() const { return const_cast<Tensor*>(this)->data(); }

float* Tensor::data_ptr() {
  check_defined("data_ptr()");
  Storage& s = *impl_->storage;
  return s.device == Device::kCPU ? s.cpu_data() : s.cuda_data();
}

const float* Tensor::data_ptr() const { return const_cast<Tensor*>(this)->data_ptr(); }

std::vector<float> Tensor::to_vector() const {
  check_defined("to_vector()");
  std::vector<float> out(static_cast<size_t>(numel()));
  kernels_for(device()).copy_to_host(*this, out.data());
  return out;
}

float Tensor::item() const {
  if (numel() != 1) {
    throw std::invalid_argument("item() needs a tensor with one element, got shape " +
                                shape_str(shape()));
  }
  return to_vector()[0];
}

Tensor Tensor::to(Device target) const {
  check_defined("to()");
  if (target == device()) return *this;
  Tensor out = empty(shape(), target);
  std::vector<float> host = to_vector();
  kernels_for(target).copy_from_host(out, host.data());
  return out;
}

Tensor Tensor::clone() const {
  check_defined("clone()");
  Tensor out = empty(shape(), device());
  kernels_for(device()).scale(*this, 1.f, out);
  return out;
}

Tensor Tensor::detach() const {
  check_defined("detach()");
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = impl_->shape;
  impl->storage = impl_->storage;
  return Tensor(std::move(impl));
}

std::string Tensor::to_string(int max_elems) const {
  if (!impl_) return "Tensor(undefined)";
  std::ostringstream os;
  os << "Tensor(shape=" << shape_str(shape()) << ", device=" << device_str();
  if (device() == Device::kCPU) {
    os << ", data=[";
    const float* d = data();
    for (int64_t i = 0; i < std::min<int64_t>(numel(), max_elems); ++i) {
      os << (i ? ", " : "") << d[i];
    }
    if (numel() > max_elems) os << ", ...";
    os << "]";
  }
  os << ")";
  return os.str();
}

// ---- autograd ---------------------------------------------------------------

namespace {
thread_local bool tl_grad_enabled = true;
}
bool GradMode::is_enabled() { return tl_grad_enabled; }
void GradMode::set_enabled(bool enabled) { tl_grad_enabled = enabled; }

AutogradMeta& Tensor::materialize_autograd_meta() {
  check_defined("materialize_autograd_meta()");
  if (!impl_->autograd) impl_->autograd = std::make_unique<AutogradMeta>();
  return *impl_->autograd;
}

bool Tensor::requires_grad() const {
  auto* m = autograd_meta();
  return m && m->requires_grad;
}

Tensor& Tensor::set_requires_grad(bool requires_grad) {
  if (!is_leaf()) {
    throw std::logic_error(
        "set_requires_grad can only change leaf tensors; this tensor was produced by " +
        grad_fn()->name() + " (detach() it first)");
  }
  materialize_autograd_meta().requires_grad = requires_grad;
  return *this;
}

bool Tensor::is_leaf() const {
  auto* m = autograd_meta();
  return !m || !m->grad_fn;
}

const std::shared_ptr<Node>& Tensor::grad_fn() const {
  static const std::shared_ptr<Node> none;
  auto* m = autograd_meta();
  return m ? m->grad_fn : none;
}

uint32_t Tensor::output_nr() const {
  auto* m = autograd_meta();
  return m ? m->output_nr : 0;
}

Tensor Tensor::grad() const {
  auto* m = autograd_meta();
  return (m && m->grad) ? Tensor(m->grad) : Tensor();
}

void Tensor::zero_grad() {
  if (auto* m = autograd_meta()) m->grad.reset();
}

void Tensor::set_grad(const Tensor& grad) {
  if (grad.defined() && grad.shape() != shape()) {
    throw std::invalid_argument("set_grad: gradient of shape " + shape_str(grad.shape()) +
                                " for a tensor of shape " + shape_str(shape()));
  }
  materialize_autograd_meta().grad = grad.impl_ptr();
}

const std::string& Tensor::name() const {
  static const std::string none;
  auto* m = autograd_meta();
  return m ? m->name : none;
}

Tensor& Tensor::set_name(std::string name) {
  materialize_autograd_meta().name = std::move(name);
  return *this;
}

void Tensor::set_history(std::shared_ptr<Node> fn, uint32_t nr) {
  AutogradMeta& m = materialize_autograd_meta();
  m.requires_grad = true;
  m.grad_fn = std::move(fn);
  m.output_nr = nr;
}

std::shared_ptr<Node> Tensor::grad_accumulator() const {
  auto* m = autograd_meta();
  if (!m || !m->requires_grad || m->grad_fn) return nullptr;
  if (auto acc = m->grad_accumulator.lock()) return acc;
  auto acc = std::make_shared<AccumulateGrad>(*this);
  const uint64_t previous = m->last_accumulator_id;
  m->grad_accumulator = acc;
  m->last_accumulator_id = acc->id();
  acc->record_created(trace::kNodeIsLeafAccumulator, previous);
  if (trace::recording()) {
    std::string label = m->name.empty() ? std::string("leaf") : m->name;
    label += " " + shape_str(shape());
    trace::emit(EventKind::kNodeLabel, 0, acc->id(), 0, trace::intern(label));
  }
  return acc;
}

void Tensor::retain_grad() {
  if (!requires_grad()) {
    throw std::logic_error("can't retain_grad on a tensor that has requires_grad=false");
  }
  if (is_leaf() || retains_grad()) return;  // leaves always keep .grad
  AutogradMeta& m = materialize_autograd_meta();
  std::weak_ptr<TensorImpl> weak = impl_;
  static const OwnerId owner = create_owner(OwnerKind::kRetainGrad, "retain_grad");
  m.retain_grad_key = m.grad_fn->add_retain_grad_hook(
      [weak](const Tensor& grad) {
        if (!grad.defined()) return Tensor();  // Note [Undefined gradients]
        if (auto impl = weak.lock()) {
          auto& meta = *impl->autograd;
          if (!meta.grad) {
            meta.grad = grad.clone().impl_ptr();
          } else {
            Tensor acc(meta.grad);
            kernels_for(acc.device()).axpy(1.f, grad, acc);
          }
        }
        return Tensor();
      },
      m.output_nr, owner);
  m.retains_grad = true;
}

bool Tensor::retains_grad() const {
  auto* m = autograd_meta();
  return m && m->retains_grad;
}

HookKey Tensor::register_hook(TensorHookFn fn, OwnerId owner) {
  if (!requires_grad()) {
    throw std::logic_error(
        "cannot register a hook on a tensor that doesn't require gradient");
  }
  if (!is_leaf()) return grad_fn()->add_tensor_pre_hook(std::move(fn), output_nr(), owner);
  return grad_accumulator()->add_tensor_pre_hook(std::move(fn), 0, owner);
}

bool Tensor::remove_hook(HookKey key, OwnerId remover) {
  if (!requires_grad()) return false;
  if (!is_leaf()) return grad_fn()->del_tensor_pre_hook(key, remover);
  return grad_accumulator()->del_tensor_pre_hook(key, remover);
}

HookKey Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHookFn fn,
                                                   OwnerId owner) {
  if (!requires_grad() || !is_leaf()) {
    throw std::logic_error(
        "post accumulate grad hooks can only be registered on leaf tensors that require "
        "grad");
  }
  auto acc = grad_accumulator();
  AutogradMeta& m = *autograd_meta();
  HookKey key = m.post_accumulate_hooks.add(std::move(fn), owner);
  trace::emit(EventKind::kHookAdded, static_cast<uint8_t>(HookKind::kPostAccumulate),
              acc->id(), key.value, 0, owner);
  return key;
}

bool Tensor::remove_post_accumulate_grad_hook(HookKey key, OwnerId remover) {
  auto* m = autograd_meta();
  const uint64_t node = m ? m->last_accumulator_id : 0;
  const auto kind = static_cast<uint8_t>(HookKind::kPostAccumulate);
  OwnerId owner = 0;
  if (!m || !m->post_accumulate_hooks.remove(key, &owner)) {
    trace::emit(EventKind::kHookRemoveFailed, kind, node, key.value, 0, 0, remover);
    return false;
  }
  trace::emit(EventKind::kHookRemoved, kind, node, key.value,
              static_cast<uint64_t>(trace::RemoveCause::kByKey), owner, remover);
  return true;
}

void Tensor::backward(const Tensor& gradient, bool retain_graph,
                      const variable_list& inputs) const {
  autograd::backward({*this}, {gradient}, retain_graph, inputs);
}

}  // namespace hookscope
