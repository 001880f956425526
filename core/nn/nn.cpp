#include "nn/nn.h"

#include <cmath>
#include <random>
#include <stdexcept>

#include "tensor/kernels.h"
#include "tensor/ops.h"

namespace hookscope::nn {

std::vector<Tensor> Module::parameters() const {
  std::vector<Tensor> out;
  for (auto& p : named_parameters()) out.push_back(p.tensor);
  return out;
}

void Module::zero_grad() {
  for (auto& p : named_parameters()) p.tensor.zero_grad();
}

Linear::Linear(int64_t in_features, int64_t out_features, uint64_t seed, Device device)
    : in_(in_features), out_(out_features) {
  const float bound = 1.f / std::sqrt(static_cast<float>(in_features));
  weight = Tensor::uniform({out_features, in_features}, -bound, bound, seed).to(device);
  bias = Tensor::uniform({out_features}, -bound, bound, seed ^ 0x9e3779b97f4a7c15ULL).to(device);
  weight.set_requires_grad(true);
  bias.set_requires_grad(true);
}

Tensor Linear::forward(const Tensor& x) {
  if (x.dim() != 2 || x.size(1) != in_) {
    throw std::invalid_argument(name() + ": expected input of shape [batch, " +
                                std::to_string(in_) + "], got " + shape_str(x.shape()));
  }
  return linear(x, weight, bias);
}

std::string Linear::name() const {
  return "Linear(in_features=" + std::to_string(in_) + ", out_features=" +
         std::to_string(out_) + ")";
}

std::vector<NamedParameter> Linear::named_parameters(const std::string& prefix) const {
  return {{prefix + "weight", weight}, {prefix + "bias", bias}};
}

Tensor ReLU::forward(const Tensor& x) { return relu(x); }

namespace {
std::string child_path(const std::string& parent, size_t i) {
  return parent.empty() ? std::to_string(i) : parent + "." + std::to_string(i);
}
}  // namespace

void Sequential::push_back(std::shared_ptr<Module> m) {
  if (!m) throw std::invalid_argument("Sequential::push_back: got a null module");
  m->set_path(child_path(path(), modules_.size()));
  modules_.push_back(std::move(m));
}

void Sequential::set_path(std::string path) {
  Module::set_path(std::move(path));
  for (size_t i = 0; i < modules_.size(); ++i) modules_[i]->set_path(child_path(this->path(), i));
}

Tensor Sequential::forward(const Tensor& x) {
  Tensor h = x;
  for (auto& m : modules_) h = (*m)(h);  // through __call__: children's hooks run
  return h;
}

std::vector<NamedParameter> Sequential::named_parameters(const std::string& prefix) const {
  std::vector<NamedParameter> out;
  for (size_t i = 0; i < modules_.size(); ++i) {
    for (auto& p : modules_[i]->named_parameters(prefix + std::to_string(i) + ".")) {
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::shared_ptr<Sequential> mlp(const std::vector<int64_t>& sizes, uint64_t seed,
                                Device device) {
  if (sizes.size() < 2) throw std::invalid_argument("mlp: need at least input and output sizes");
  auto seq = std::make_shared<Sequential>();
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    seq->push_back(std::make_shared<Linear>(sizes[i], sizes[i + 1], seed + 7919 * i, device));
    if (i + 2 < sizes.size()) seq->push_back(std::make_shared<ReLU>());
  }
  for (auto& p : seq->named_parameters()) p.tensor.set_name(p.name);
  return seq;
}

void SGD::step() {
  NoGradGuard guard;
  for (Tensor& p : params_) {
    Tensor g = p.grad();
    if (!g.defined()) continue;
    kernels_for(p.device()).axpy(-lr_, g, p);
  }
}

void SGD::zero_grad() {
  for (Tensor& p : params_) p.zero_grad();
}

SyntheticClassification::SyntheticClassification(int64_t features, int64_t classes,
                                                 uint64_t seed)
    : features_(features), classes_(classes), seed_(seed) {
  std::mt19937_64 gen(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  centers_.resize(static_cast<size_t>(classes * features));
  for (float& c : centers_) c = dist(gen);
}

SyntheticClassification::Batch SyntheticClassification::batch(uint64_t step,
                                                               int64_t global_batch, int rank,
                                                               int world) const {
  if (world <= 0 || rank < 0 || rank >= world || global_batch % world != 0) {
    throw std::invalid_argument("batch: global batch " + std::to_string(global_batch) +
                                " cannot be split evenly over " + std::to_string(world) +
                                " ranks (rank " + std::to_string(rank) + ")");
  }
  const int64_t rows = global_batch / world;
  Batch b;
  b.y.resize(static_cast<size_t>(rows));
  std::vector<float> x(static_cast<size_t>(rows * features_));
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t global_row = rank * rows + r;
    std::mt19937_64 gen(seed_ * 1000003ULL + step * 65537ULL + static_cast<uint64_t>(global_row));
    std::normal_distribution<float> noise(0.f, 0.5f);
    const int64_t cls = static_cast<int64_t>(gen() % static_cast<uint64_t>(classes_));
    b.y[static_cast<size_t>(r)] = cls;
    for (int64_t f = 0; f < features_; ++f) {
      x[static_cast<size_t>(r * features_ + f)] =
          centers_[static_cast<size_t>(cls * features_ + f)] + noise(gen);
    }
  }
  b.x = Tensor::from_vector({rows, features_}, std::move(x));
  return b;
}

}  // namespace hookscope::nn
