// CUDA kernels for every Kernels method, on the device's compute stream
// (Note [One stream per device]); cuBLAS sgemm for matmul. Mirrors
// kernels_cpu.cpp: same formulas, sums of many terms accumulated in double
// as there, so results agree with the CPU within 1e-4.
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "tensor/cuda/cuda_context.h"
#include "tensor/kernels.h"

namespace hookscope {
namespace {

constexpr int kThreads = 256;  // every kernel below assumes blockDim.x == kThreads
constexpr int64_t kMaxBlocks = 4096;

int blocks_for(int64_t n) {
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>((n + kThreads - 1) / kThreads,
                                                                 kMaxBlocks)));
}

#define HS_GRID_STRIDE(i, n)                                                          \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

// ---- elementwise --------------------------------------------------------------

__global__ void fill_kernel(float* out, int64_t n, float value) {
  HS_GRID_STRIDE(i, n) out[i] = value;
}

__global__ void unary_kernel(int op, const float* a, float* y, int64_t n) {
  HS_GRID_STRIDE(i, n) {
    const float x = a[i];
    switch (static_cast<UnaryOp>(op)) {
      case UnaryOp::kNeg: y[i] = -x; break;
      case UnaryOp::kRelu: y[i] = x > 0.f ? x : 0.f; break;
      case UnaryOp::kTanh: y[i] = tanhf(x); break;
      case UnaryOp::kSigmoid: y[i] = 1.f / (1.f + expf(-x)); break;
      case UnaryOp::kExp: y[i] = expf(x); break;
      case UnaryOp::kLog: y[i] = logf(x); break;
    }
  }
}

__global__ void unary_grad_kernel(int op, const float* g, const float* s, float* o, int64_t n) {
  HS_GRID_STRIDE(i, n) {
    switch (static_cast<UnaryGradOp>(op)) {
      case UnaryGradOp::kRelu: o[i] = s[i] > 0.f ? g[i] : 0.f; break;
      case UnaryGradOp::kTanh: o[i] = g[i] * (1.f - s[i] * s[i]); break;
      case UnaryGradOp::kSigmoid: o[i] = g[i] * s[i] * (1.f - s[i]); break;
      case UnaryGradOp::kExp: o[i] = g[i] * s[i]; break;
      case UnaryGradOp::kLog: o[i] = g[i] / s[i]; break;
    }
  }
}

__global__ void binary_kernel(int op, const float* x, const float* y, float* o, int64_t n) {
  HS_GRID_STRIDE(i, n) {
    switch (static_cast<BinaryOp>(op)) {
      case BinaryOp::kAdd: o[i] = x[i] + y[i]; break;
      case BinaryOp::kSub: o[i] = x[i] - y[i]; break;
      case BinaryOp::kMul: o[i] = x[i] * y[i]; break;
      case BinaryOp::kDiv: o[i] = x[i] / y[i]; break;
    }
  }
}

__global__ void scale_kernel(const float* x, float alpha, float* o, int64_t n) {
  HS_GRID_STRIDE(i, n) o[i] = x[i] * alpha;
}

__global__ void axpy_kernel(float alpha, const float* x, float* y, int64_t n) {
  HS_GRID_STRIDE(i, n) y[i] += alpha * x[i];
}

__global__ void add_bias_kernel(const float* x, const float* bias, float* o, int64_t n,
                                int64_t cols) {
  HS_GRID_STRIDE(i, n) o[i] = x[i] + bias[i % cols];
}

// One thread per column; rows summed in order, in float, as on the CPU.
__global__ void sum_rows_kernel(const float* x, float* o, int64_t rows, int64_t cols) {
  HS_GRID_STRIDE(c, cols) {
    float acc = 0.f;
    for (int64_t r = 0; r < rows; ++r) acc += x[r * cols + c];
    o[c] = acc;
  }
}

__global__ void broadcast_scalar_kernel(const float* grad, float alpha, float* o, int64_t n) {
  const float v = grad[0] * alpha;
  HS_GRID_STRIDE(i, n) o[i] = v;
}

__global__ void transpose_kernel(const float* x, float* o, int64_t rows, int64_t cols) {
  HS_GRID_STRIDE(i, rows * cols) {
    const int64_t r = i / cols, c = i % cols;
    o[c * rows + r] = x[i];
  }
}

// ---- reductions (one block; shared-memory tree of kThreads partials) -----------

__device__ double block_sum(double v, double* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] += shared[threadIdx.x + s];
    __syncthreads();
  }
  const double total = shared[0];
  __syncthreads();  // shared is reused by the caller's next reduction
  return total;
}

__device__ float block_max(float v, float* shared) {
  shared[threadIdx.x] = v;
  __syncthreads();
  for (int s = kThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) shared[threadIdx.x] = fmaxf(shared[threadIdx.x], shared[threadIdx.x + s]);
    __syncthreads();
  }
  const float m = shared[0];
  __syncthreads();
  return m;
}

__global__ void sum_all_kernel(const float* x, int64_t n, float* out) {
  __shared__ double shared[kThreads];
  double acc = 0.0;
  for (int64_t i = threadIdx.x; i < n; i += kThreads) acc += x[i];
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total);
}

// One block per row.
__global__ void log_softmax_kernel(const float* x, float* o, int64_t cols) {
  __shared__ double dshared[kThreads];
  __shared__ float fshared[kThreads];
  const float* a = x + static_cast<int64_t>(blockIdx.x) * cols;
  float* y = o + static_cast<int64_t>(blockIdx.x) * cols;
  float mx = -INFINITY;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) mx = fmaxf(mx, a[c]);
  mx = block_max(mx, fshared);
  double s = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) s += exp(static_cast<double>(a[c] - mx));
  s = block_sum(s, dshared);
  const float lse = mx + static_cast<float>(log(s));
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) y[c] = a[c] - lse;
}

__global__ void log_softmax_grad_kernel(const float* grad, const float* out, float* gi,
                                        int64_t cols) {
  __shared__ double shared[kThreads];
  const int64_t base = static_cast<int64_t>(blockIdx.x) * cols;
  double gs = 0.0;
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) gs += grad[base + c];
  const float total = static_cast<float>(block_sum(gs, shared));
  for (int64_t c = threadIdx.x; c < cols; c += kThreads) {
    gi[base + c] = grad[base + c] - expf(out[base + c]) * total;
  }
}

__global__ void nll_loss_kernel(const float* logp, const int64_t* target, int64_t rows,
                                int64_t cols, float* out) {
  __shared__ double shared[kThreads];
  double acc = 0.0;
  for (int64_t r = threadIdx.x; r < rows; r += kThreads) acc -= logp[r * cols + target[r]];
  const double total = block_sum(acc, shared);
  if (threadIdx.x == 0) out[0] = static_cast<float>(total / static_cast<double>(rows));
}

__global__ void nll_loss_grad_kernel(const float* grad, const int64_t* target, int64_t rows,
                                     int64_t cols, float* gi) {
  const float g = grad[0] / static_cast<float>(rows);
  HS_GRID_STRIDE(r, rows) gi[r * cols + target[r]] = -g;
}

// ---- the Kernels implementation ---------------------------------------------------

class CudaKernels final : public Kernels {
 public:
  std::shared_ptr<Storage> allocate(int64_t numel) override {
    const int device = cuda::current_device();
    auto s = std::make_shared<Storage>();
    s->device = Device::kCUDA;
    s->device_index = device;
    s->numel = numel;
    s->cuda = cuda::allocate(static_cast<size_t>(numel) * sizeof(float), device);
    return s;
  }

  void fill(Tensor& out, float value) override {
    const int d = on_device("fill", {&out});
    launch_1d(out.numel(), d, [&](int blocks, cudaStream_t s) {
      fill_kernel<<<blocks, kThreads, 0, s>>>(out.data_ptr(), out.numel(), value);
    });
  }

  void copy_from_host(Tensor& out, const float* src) override {
    const int d = on_device("copy_from_host", {&out});
    cuda::DeviceGuard guard(d);
    cudaStream_t s = cuda::compute_stream(d);
    if (out.numel() == 0) return;
    HOOKSCOPE_CUDA_CHECK(cudaMemcpyAsync(out.data_ptr(), src, bytes(out), cudaMemcpyHostToDevice, s));
    // The source is pageable memory the caller may free on return.
    HOOKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  void copy_to_host(const Tensor& src, float* dst) override {
    const int d = on_device("copy_to_host", {&src});
    cuda::DeviceGuard guard(d);
    cudaStream_t s = cuda::compute_stream(d);
    if (src.numel() == 0) return;
    HOOKSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst, src.data_ptr(), bytes(src), cudaMemcpyDeviceToHost, s));
    HOOKSCOPE_CUDA_CHECK(cudaStreamSynchronize(s));
  }

  void copy_range(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset,
                  int64_t count) override {
    const int d = on_device("copy_range", {&src, &dst});
    if (count <= 0) return;
    if (src_offset < 0 || dst_offset < 0 || src_offset + count > src.numel() ||
        dst_offset + count > dst.numel()) {
      throw std::out_of_range("copy_range: " + std::to_string(count) + " elements at offsets " +
                              std::to_string(src_offset) + " / " + std::to_string(dst_offset) +
                              " do not fit tensors of " + std::to_string(src.numel()) + " / " +
                              std::to_string(dst.numel()) + " elements");
    }
    cuda::DeviceGuard guard(d);
    HOOKSCOPE_CUDA_CHECK(cudaMemcpyAsync(dst.data_ptr() + dst_offset, src.data_ptr() + src_offset,
                                         static_cast<size_t>(count) * sizeof(float),
                                         cudaMemcpyDeviceToDevice, cuda::compute_stream(d)));
  }

  void fill_range(Tensor& out, int64_t offset, int64_t count, float value) override {
    const int d = on_device("fill_range", {&out});
    if (count <= 0) return;
    if (offset < 0 || offset + count > out.numel()) {
      throw std::out_of_range("fill_range: " + std::to_string(count) + " elements at offset " +
                              std::to_string(offset) + " do not fit a tensor of " +
                              std::to_string(out.numel()) + " elements");
    }
    launch_1d(count, d, [&](int blocks, cudaStream_t s) {
      fill_kernel<<<blocks, kThreads, 0, s>>>(out.data_ptr() + offset, count, value);
    });
  }

  void unary(UnaryOp op, const Tensor& x, Tensor& out) override {
    const int d = on_device("unary op", {&x, &out});
    launch_1d(x.numel(), d, [&](int blocks, cudaStream_t s) {
      unary_kernel<<<blocks, kThreads, 0, s>>>(static_cast<int>(op), x.data_ptr(), out.data_ptr(),
                                               x.numel());
    });
  }

  void unary_grad(UnaryGradOp op, const Tensor& grad, const Tensor& saved, Tensor& out) override {
    const int d = on_device("unary op backward", {&grad, &saved, &out});
    launch_1d(grad.numel(), d, [&](int blocks, cudaStream_t s) {
      unary_grad_kernel<<<blocks, kThreads, 0, s>>>(static_cast<int>(op), grad.data_ptr(),
                                                    saved.data_ptr(), out.data_ptr(), grad.numel());
    });
  }

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) override {
    const int d = on_device("binary op", {&a, &b, &out});
    launch_1d(a.numel(), d, [&](int blocks, cudaStream_t s) {
      binary_kernel<<<blocks, kThreads, 0, s>>>(static_cast<int>(op), a.data_ptr(), b.data_ptr(),
                                                out.data_ptr(), a.numel());
    });
  }

  void scale(const Tensor& a, float alpha, Tensor& out) override {
    const int d = on_device("scale", {&a, &out});
    launch_1d(a.numel(), d, [&](int blocks, cudaStream_t s) {
      scale_kernel<<<blocks, kThreads, 0, s>>>(a.data_ptr(), alpha, out.data_ptr(), a.numel());
    });
  }

  void axpy(float alpha, const Tensor& x, Tensor& y) override {
    const int d = on_device("axpy (gradient accumulation / SGD)", {&x, &y});
    launch_1d(x.numel(), d, [&](int blocks, cudaStream_t s) {
      axpy_kernel<<<blocks, kThreads, 0, s>>>(alpha, x.data_ptr(), y.data_ptr(), x.numel());
    });
  }

  // Row-major out[m,n] = op(A) op(B) is column-major out^T = op(B)^T op(A)^T:
  // cuBLAS reads each row-major operand as its transpose, so swapping the
  // operands (B first) with the same transpose flags gives out^T in column
  // major, which is out in row major. Leading dimensions are the row lengths.
  void matmul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b, Tensor& out) override {
    const int d = on_device("matmul", {&a, &b, &out});
    const int m = static_cast<int>(out.size(0));
    const int n = static_cast<int>(out.size(1));
    const int k = static_cast<int>(trans_a ? a.size(0) : a.size(1));
    if (m == 0 || n == 0) return;
    if (k == 0) {  // an empty sum: cuBLAS is not asked to handle it
      fill(out, 0.f);
      return;
    }
    const float one = 1.f, zero = 0.f;
    cuda::DeviceGuard guard(d);
    cuda::with_cublas(d, [&](cublasHandle_t h) {
      HOOKSCOPE_CUBLAS_CHECK(cuda::cublas().sgemm(
          h, trans_b ? CUBLAS_OP_T : CUBLAS_OP_N, trans_a ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &one,
          b.data_ptr(), static_cast<int>(b.size(1)), a.data_ptr(), static_cast<int>(a.size(1)), &zero,
          out.data_ptr(), n));
    });
  }

  void add_bias(const Tensor& x, const Tensor& bias, Tensor& out) override {
    const int d = on_device("add_bias", {&x, &bias, &out});
    const int64_t cols = x.size(1);
    if (cols == 0) return;
    launch_1d(x.numel(), d, [&](int blocks, cudaStream_t s) {
      add_bias_kernel<<<blocks, kThreads, 0, s>>>(x.data_ptr(), bias.data_ptr(), out.data_ptr(),
                                                  x.numel(), cols);
    });
  }

  void sum_rows(const Tensor& x, Tensor& out) override {
    const int d = on_device("sum over rows", {&x, &out});
    const int64_t rows = x.size(0), cols = x.size(1);
    launch_1d(cols, d, [&](int blocks, cudaStream_t s) {
      sum_rows_kernel<<<blocks, kThreads, 0, s>>>(x.data_ptr(), out.data_ptr(), rows, cols);
    });
  }

  void sum_all(const Tensor& x, Tensor& out) override {
    const int d = on_device("sum", {&x, &out});
    launch_blocks(1, d, [&](cudaStream_t s) {
      sum_all_kernel<<<1, kThreads, 0, s>>>(x.data_ptr(), x.numel(), out.data_ptr());
    });
  }

  void broadcast_scalar(const Tensor& grad, float alpha, Tensor& out) override {
    const int d = on_device("broadcast of a scalar gradient", {&grad, &out});
    launch_1d(out.numel(), d, [&](int blocks, cudaStream_t s) {
      broadcast_scalar_kernel<<<blocks, kThreads, 0, s>>>(grad.data_ptr(), alpha, out.data_ptr(),
                                                          out.numel());
    });
  }

  void transpose2d(const Tensor& x, Tensor& out) override {
    const int d = on_device("transpose", {&x, &out});
    launch_1d(x.numel(), d, [&](int blocks, cudaStream_t s) {
      transpose_kernel<<<blocks, kThreads, 0, s>>>(x.data_ptr(), out.data_ptr(), x.size(0),
                                                   x.size(1));
    });
  }

  void log_softmax(const Tensor& x, Tensor& out) override {
    const int d = on_device("log_softmax", {&x, &out});
    const int64_t rows = x.size(0), cols = x.size(1);
    launch_blocks(rows, d, [&](cudaStream_t s) {
      log_softmax_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(x.data_ptr(),
                                                                          out.data_ptr(), cols);
    });
  }

  void log_softmax_grad(const Tensor& grad, const Tensor& out_saved, Tensor& grad_in) override {
    const int d = on_device("log_softmax backward", {&grad, &out_saved, &grad_in});
    const int64_t rows = grad.size(0), cols = grad.size(1);
    launch_blocks(rows, d, [&](cudaStream_t s) {
      log_softmax_grad_kernel<<<static_cast<unsigned>(rows), kThreads, 0, s>>>(
          grad.data_ptr(), out_saved.data_ptr(), grad_in.data_ptr(), cols);
    });
  }

  void nll_loss(const Tensor& logp, const std::vector<int64_t>& target, Tensor& out) override {
    const int d = on_device("nll_loss", {&logp, &out});
    const int64_t rows = logp.size(0), cols = logp.size(1);
    auto t = targets_on_device(target, d);
    launch_blocks(1, d, [&](cudaStream_t s) {
      nll_loss_kernel<<<1, kThreads, 0, s>>>(logp.data_ptr(), static_cast<const int64_t*>(t.get()),
                                             rows, cols, out.data_ptr());
    });
  }

  void nll_loss_grad(const Tensor& grad, const std::vector<int64_t>& target,
                     Tensor& grad_in) override {
    const int d = on_device("nll_loss backward", {&grad, &grad_in});
    const int64_t rows = grad_in.size(0), cols = grad_in.size(1);
    fill(grad_in, 0.f);
    auto t = targets_on_device(target, d);
    launch_1d(rows, d, [&](int blocks, cudaStream_t s) {
      nll_loss_grad_kernel<<<blocks, kThreads, 0, s>>>(
          grad.data_ptr(), static_cast<const int64_t*>(t.get()), rows, cols, grad_in.data_ptr());
    });
  }

 private:
  static size_t bytes(const Tensor& t) { return static_cast<size_t>(t.numel()) * sizeof(float); }

  // Every tensor must be a CUDA tensor of one device; returns that device.
  // The error names the kernels' device (the first CUDA tensor's) and the
  // odd one out, whichever argument position the CPU tensor is in.
  static int on_device(const char* op, std::initializer_list<const Tensor*> tensors) {
    const Tensor* ref = nullptr;
    for (const Tensor* t : tensors) {
      if (t->device() == Device::kCUDA) {
        ref = t;
        break;
      }
    }
    for (const Tensor* t : tensors) {
      if (ref == nullptr || t->device() != Device::kCUDA ||
          t->device_index() != ref->device_index()) {
        const std::string expected =
            ref != nullptr ? ref->device_str()
                           : device_string(Device::kCUDA, cuda::current_device());
        throw std::invalid_argument(std::string(op) +
                                    ": expected all tensors on the same device, got " +
                                    expected + " and " + t->device_str());
      }
    }
    return ref->device_index();
  }

  template <typename Launch>
  static void launch_1d(int64_t n, int device, Launch&& launch) {
    if (n <= 0) return;
    cuda::DeviceGuard guard(device);
    launch(blocks_for(n), cuda::compute_stream(device));
    HOOKSCOPE_CUDA_CHECK(cudaGetLastError());
  }

  template <typename Launch>
  static void launch_blocks(int64_t blocks, int device, Launch&& launch) {
    if (blocks <= 0) return;
    if (blocks > 0x7fffffff) throw std::invalid_argument("too many rows for one kernel launch");
    cuda::DeviceGuard guard(device);
    launch(cuda::compute_stream(device));
    HOOKSCOPE_CUDA_CHECK(cudaGetLastError());
  }

  // Class indices copied to the device (the op checked their range). The
  // block goes back to the cache when the caller drops it; later users of
  // the block are ordered after this kernel on the same stream.
  static std::shared_ptr<void> targets_on_device(const std::vector<int64_t>& target, int device) {
    auto block = cuda::allocate(target.size() * sizeof(int64_t), device);
    if (!target.empty()) {
      cuda::DeviceGuard guard(device);
      // Pageable source: the call returns once the data is staged, so the
      // vector may go away afterwards.
      HOOKSCOPE_CUDA_CHECK(cudaMemcpyAsync(block.get(), target.data(),
                                           target.size() * sizeof(int64_t),
                                           cudaMemcpyHostToDevice, cuda::compute_stream(device)));
    }
    return block;
  }
};

}  // namespace

Kernels* builtin_cuda_kernels() {
  static CudaKernels* kernels = new CudaKernels();  // never destroyed (static tensors)
  return kernels;
}

}  // namespace hookscope
