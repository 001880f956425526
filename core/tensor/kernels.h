#pragma once
// The device dispatch point: every op's math goes through the Kernels of the
// device its tensors live on. CPU kernels are in kernels_cpu.cpp; CUDA
// kernels (cuda/kernels_cuda.cu) are looked up when the build has CUDA.
// Kernels may assume the shapes were checked by the op; the CUDA kernels
// check that every tensor is on the same device (Note [One CUDA device per
// thread]).

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace hookscope {

enum class UnaryOp : uint8_t { kNeg, kRelu, kTanh, kSigmoid, kExp, kLog };
enum class BinaryOp : uint8_t { kAdd, kSub, kMul, kDiv };
// Gradient of a unary op from the upstream gradient and the op's saved input
// (relu, log) or output (tanh, sigmoid, exp).
enum class UnaryGradOp : uint8_t { kRelu, kTanh, kSigmoid, kExp, kLog };

class Kernels {
 public:
  virtual ~Kernels() = default;
  virtual std::shared_ptr<Storage> allocate(int64_t numel) = 0;
  virtual void fill(Tensor& out, float value) = 0;
  virtual void copy_from_host(Tensor& out, const float* src) = 0;
  virtual void copy_to_host(const Tensor& src, float* dst) = 0;
  // dst[dst_offset + i] = src[src_offset + i] for i < count (flat element
  // offsets; DDP buckets). Both tensors on this device.
  virtual void copy_range(const Tensor& src, int64_t src_offset, Tensor& dst,
                          int64_t dst_offset, int64_t count) = 0;
  // out[offset + i] = value for i < count.
  virtual void fill_range(Tensor& out, int64_t offset, int64_t count, float value) = 0;

  virtual void unary(UnaryOp op, const Tensor& x, Tensor& out) = 0;
  virtual void unary_grad(UnaryGradOp op, const Tensor& grad, const Tensor& saved,
                          Tensor& out) = 0;
  virtual void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) = 0;
  // out = a * alpha
  virtual void scale(const Tensor& a, float alpha, Tensor& out) = 0;
  // y += alpha * x (in place; gradient accumulation, SGD)
  virtual void axpy(float alpha, const Tensor& x, Tensor& y) = 0;
  // out[m,n] = op(a) @ op(b), op = transpose when the flag is set
  virtual void matmul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
                      Tensor& out) = 0;
  // out[r,c] = x[r,c] + bias[c]
  virtual void add_bias(const Tensor& x, const Tensor& bias, Tensor& out) = 0;
  // out[c] = sum_r x[r,c]
  virtual void sum_rows(const Tensor& x, Tensor& out) = 0;
  // out[] = sum of all elements
  virtual void sum_all(const Tensor& x, Tensor& out) = 0;
  // out = fill of grad (a 1-element tensor) times alpha, shaped like out
  virtual void broadcast_scalar(const Tensor& grad, float alpha, Tensor& out) = 0;
  virtual void transpose2d(const Tensor& x, Tensor& out) = 0;
  // Row-wise over the last dimension of a 2-D tensor.
  virtual void log_softmax(const Tensor& x, Tensor& out) = 0;
  virtual void log_softmax_grad(const Tensor& grad, const Tensor& out_saved,
                                Tensor& grad_in) = 0;
  // Mean negative log-likelihood; targets are class indices (one per row).
  virtual void nll_loss(const Tensor& logp, const std::vector<int64_t>& target,
                        Tensor& out) = 0;
  virtual void nll_loss_grad(const Tensor& grad, const std::vector<int64_t>& target,
                             Tensor& grad_in) = 0;
};

// Throws std::runtime_error saying why when the device has no kernels.
Kernels& kernels_for(Device device);

// The OpenBLAS kernels in use ("SkylakeX", "Haswell", ...), and whether
// the environment forced them (Note [Which OpenBLAS kernels]).
std::string blas_core();
// Replaces the CUDA kernels (by default those of cuda/kernels_cuda.cu when
// the build has CUDA). kernels_for(kCUDA) still requires a usable device.
void register_cuda_kernels(Kernels* kernels);

}  // namespace hookscope
