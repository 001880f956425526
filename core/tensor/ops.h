#pragma once
// Differentiable ops. Each records a backward Function named as PyTorch
// names it (MulBackward0, MmBackward0, ...) when grad mode is on and an input
// requires grad. Shape errors throw std::invalid_argument naming the shapes.

#include <cstdint>
#include <vector>

#include "tensor/tensor.h"

namespace hookscope {

// Elementwise, equal shapes.
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor mul_scalar(const Tensor& a, float s);
Tensor neg(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);

// [n, k] @ [k, m] -> [n, m] (OpenBLAS sgemm on CPU).
Tensor matmul(const Tensor& a, const Tensor& b);
// Linear layer: x [n, in] @ weight[out, in]^T + bias[out], one Function
// (AddmmBackward0) with no copy of the transposed weight.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);
// [n, m] + [m], the bias broadcast over rows.
Tensor add_bias(const Tensor& x, const Tensor& bias);
// Reductions over all elements, to a 0-dim tensor.
Tensor sum(const Tensor& a);
Tensor mean(const Tensor& a);
// Same elements, new shape (one dimension may be -1). Shares storage.
Tensor reshape(const Tensor& a, Shape shape);
// 2-D transpose.
Tensor transpose(const Tensor& a);

// Losses (mean over the batch).
Tensor mse_loss(const Tensor& input, const Tensor& target);
Tensor log_softmax(const Tensor& logits);  // over the last dim of [n, c]
Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& target);
Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& target);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator*(const Tensor& a, float s) { return mul_scalar(a, s); }
inline Tensor operator-(const Tensor& a) { return neg(a); }

}  // namespace hookscope
