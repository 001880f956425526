#include "tensor/tensor.h"

#include <cmath>
#include <random>
#include <sstream>
#include <stdexcept>

#include "tensor/kernels.h"

namespace hookscope {

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

}  // namespace hookscope
