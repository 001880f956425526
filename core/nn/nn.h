#pragma once
// A small nn library: enough to train the MLPs the scenarios run.

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tensor/tensor.h"

namespace hookscope::nn {

struct NamedParameter {
  std::string name;  // "0.weight", "2.bias", ...
  Tensor tensor;
};

class Module {
 public:
  virtual ~Module() = default;
  virtual Tensor forward(const Tensor& x) = 0;
  virtual std::string name() const = 0;
  // Parameters in registration order, names prefixed with `prefix`.
  virtual std::vector<NamedParameter> named_parameters(const std::string& prefix = "") const {
    (void)prefix;
    return {};
  }
  std::vector<Tensor> parameters() const;
  void zero_grad();
  Tensor operator()(const Tensor& x) { return forward(x); }
};

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
  void push_back(std::shared_ptr<Module> m) { modules_.push_back(std::move(m)); }
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
