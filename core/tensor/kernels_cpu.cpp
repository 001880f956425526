// CPU kernels: plain loops, OpenBLAS for matmul.
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

#include "tensor/kernels.h"

namespace hookscope {
namespace {

class CpuKernels final : public Kernels {
 public:
  std::shared_ptr<Storage> allocate(int64_t numel) override {
    auto s = std::make_shared<Storage>();
    s->device = Device::kCPU;
    s->allocate_cpu(numel);
    return s;
  }
  void fill(Tensor& out, float value) override {
    std::fill_n(out.data(), out.numel(), value);
  }
  void copy_from_host(Tensor& out, const float* src) override {
    std::memcpy(out.data(), src, sizeof(float) * out.numel());
  }
  void copy_to_host(const Tensor& src, float* dst) override {
    std::memcpy(dst, src.data(), sizeof(float) * src.numel());
  }
  void copy_range(const Tensor& src, int64_t src_offset, Tensor& dst, int64_t dst_offset,
                  int64_t count) override {
    std::memcpy(dst.data() + dst_offset, src.data() + src_offset, sizeof(float) * count);
  }
  void fill_range(Tensor& out, int64_t offset, int64_t count, float value) override {
    std::fill_n(out.data() + offset, count, value);
  }

  void unary(UnaryOp op, const Tensor& x, Tensor& out) override {
    const float* a = x.data();
    float* y = out.data();
    const int64_t n = x.numel();
    switch (op) {
      case UnaryOp::kNeg: for (int64_t i = 0; i < n; ++i) y[i] = -a[i]; break;
      case UnaryOp::kRelu: for (int64_t i = 0; i < n; ++i) y[i] = a[i] > 0.f ? a[i] : 0.f; break;
      case UnaryOp::kTanh: for (int64_t i = 0; i < n; ++i) y[i] = std::tanh(a[i]); break;
      case UnaryOp::kSigmoid:
        for (int64_t i = 0; i < n; ++i) y[i] = 1.f / (1.f + std::exp(-a[i]));
        break;
      case UnaryOp::kExp: for (int64_t i = 0; i < n; ++i) y[i] = std::exp(a[i]); break;
      case UnaryOp::kLog: for (int64_t i = 0; i < n; ++i) y[i] = std::log(a[i]); break;
    }
  }

  void unary_grad(UnaryGradOp op, const Tensor& grad, const Tensor& saved,
                  Tensor& out) override {
    const float* g = grad.data();
    const float* s = saved.data();
    float* o = out.data();
    const int64_t n = grad.numel();
    switch (op) {
      case UnaryGradOp::kRelu:
        // Both loads unconditional: a select, which vectorises; a load
        // only when s > 0 compiled to a branch per element that random
        // signs mispredict half the time (2 ns an element).
        for (int64_t i = 0; i < n; ++i) {
          const float gi = g[i], si = s[i];
          o[i] = si > 0.f ? gi : 0.f;
        }
        break;
      case UnaryGradOp::kTanh: for (int64_t i = 0; i < n; ++i) o[i] = g[i] * (1.f - s[i] * s[i]); break;
      case UnaryGradOp::kSigmoid: for (int64_t i = 0; i < n; ++i) o[i] = g[i] * s[i] * (1.f - s[i]); break;
      case UnaryGradOp::kExp: for (int64_t i = 0; i < n; ++i) o[i] = g[i] * s[i]; break;
      case UnaryGradOp::kLog: for (int64_t i = 0; i < n; ++i) o[i] = g[i] / s[i]; break;
    }
  }

  void binary(BinaryOp op, const Tensor& a, const Tensor& b, Tensor& out) override {
    const float* x = a.data();
    const float* y = b.data();
    float* o = out.data();
    const int64_t n = a.numel();
    switch (op) {
      case BinaryOp::kAdd: for (int64_t i = 0; i < n; ++i) o[i] = x[i] + y[i]; break;
      case BinaryOp::kSub: for (int64_t i = 0; i < n; ++i) o[i] = x[i] - y[i]; break;
      case BinaryOp::kMul: for (int64_t i = 0; i < n; ++i) o[i] = x[i] * y[i]; break;
      case BinaryOp::kDiv: for (int64_t i = 0; i < n; ++i) o[i] = x[i] / y[i]; break;
    }
  }

  void scale(const Tensor& a, float alpha, Tensor& out) override {
    const float* x = a.data();
    float* o = out.data();
    for (int64_t i = 0, n = a.numel(); i < n; ++i) o[i] = x[i] * alpha;
  }

  void axpy(float alpha, const Tensor& x, Tensor& y) override {
    cblas_saxpy(static_cast<int>(x.numel()), alpha, x.data(), 1, y.data(), 1);
  }

  void matmul(const Tensor& a, bool trans_a, const Tensor& b, bool trans_b,
              Tensor& out) override {
    const int m = static_cast<int>(out.size(0));
    const int n = static_cast<int>(out.size(1));
    const int k = static_cast<int>(trans_a ? a.size(0) : a.size(1));
    cblas_sgemm(CblasRowMajor, trans_a ? CblasTrans : CblasNoTrans,
                trans_b ? CblasTrans : CblasNoTrans, m, n, k, 1.f, a.data(),
                static_cast<int>(a.size(1)), b.data(), static_cast<int>(b.size(1)), 0.f,
                out.data(), n);
  }

  void add_bias(const Tensor& x, const Tensor& bias, Tensor& out) override {
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* a = x.data();
    const float* bb = bias.data();
    float* o = out.data();
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) o[r * cols + c] = a[r * cols + c] + bb[c];
    }
  }

  void sum_rows(const Tensor& x, Tensor& out) override {
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* a = x.data();
    float* o = out.data();
    std::fill_n(o, cols, 0.f);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t c = 0; c < cols; ++c) o[c] += a[r * cols + c];
    }
  }

  void sum_all(const Tensor& x, Tensor& out) override {
    double acc = 0.0;  // double: sums of many floats lose digits otherwise
    const float* a = x.data();
    for (int64_t i = 0, n = x.numel(); i < n; ++i) acc += a[i];
    out.data()[0] = static_cast<float>(acc);
  }

  void broadcast_scalar(const Tensor& grad, float alpha, Tensor& out) override {
    std::fill_n(out.data(), out.numel(), grad.data()[0] * alpha);
  }

  void transpose2d(const Tensor& x, Tensor& out) override {
    const int64_t rows = x.size(0), cols = x.size(1);
    const float* a = x.data();
    float* o = out.data();
    // OpenBLAS's blocked copy: an element-by-element loop writes down a
    // column, a cache miss per store, and made linear's two transposes a
    // third of an MLP step (Note [What each op saves]).
    if (rows > 0 && cols > 0) {
      cblas_somatcopy(CblasRowMajor, CblasTrans, static_cast<int>(rows), static_cast<int>(cols),
                      1.f, a, static_cast<int>(cols), o, static_cast<int>(rows));
    }
  }

  void log_softmax(const Tensor& x, Tensor& out) override {
    const int64_t rows = x.size(0), cols = x.size(1);
    for (int64_t r = 0; r < rows; ++r) {
      const float* a = x.data() + r * cols;
      float* o = out.data() + r * cols;
      float mx = *std::max_element(a, a + cols);
      double s = 0.0;
      for (int64_t c = 0; c < cols; ++c) s += std::exp(static_cast<double>(a[c] - mx));
      const float lse = mx + static_cast<float>(std::log(s));
      for (int64_t c = 0; c < cols; ++c) o[c] = a[c] - lse;
    }
  }

  void log_softmax_grad(const Tensor& grad, const Tensor& out_saved, Tensor& grad_in) override {
    const int64_t rows = grad.size(0), cols = grad.size(1);
    for (int64_t r = 0; r < rows; ++r) {
      const float* g = grad.data() + r * cols;
      const float* y = out_saved.data() + r * cols;
      float* o = grad_in.data() + r * cols;
      double gs = 0.0;
      for (int64_t c = 0; c < cols; ++c) gs += g[c];
      for (int64_t c = 0; c < cols; ++c) o[c] = g[c] - std::exp(y[c]) * static_cast<float>(gs);
    }
  }

  void nll_loss(const Tensor& logp, const std::vector<int64_t>& target, Tensor& out) override {
    const int64_t rows = logp.size(0), cols = logp.size(1);
    double acc = 0.0;
    for (int64_t r = 0; r < rows; ++r) acc -= logp.data()[r * cols + target[r]];
    out.data()[0] = static_cast<float>(acc / static_cast<double>(rows));
  }

  void nll_loss_grad(const Tensor& grad, const std::vector<int64_t>& target,
                     Tensor& grad_in) override {
    const int64_t rows = grad_in.size(0), cols = grad_in.size(1);
    float* o = grad_in.data();
    std::fill_n(o, rows * cols, 0.f);
    const float g = grad.data()[0] / static_cast<float>(rows);
    for (int64_t r = 0; r < rows; ++r) o[r * cols + target[r]] = -g;
  }
};

std::atomic<Kernels*> g_cuda_kernels{nullptr};

}  // namespace

#ifdef HOOKSCOPE_WITH_CUDA
// cuda/kernels_cuda.cu. Referenced here rather than registered from a static
// initializer, which the linker would drop from the static library.
Kernels* builtin_cuda_kernels();
#endif

void register_cuda_kernels(Kernels* kernels) { g_cuda_kernels.store(kernels); }

// Note [Which OpenBLAS kernels]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// OpenBLAS (Debian's is built for every x86 CPU) picks its kernels when it
// loads, by CPU model, unless OPENBLAS_CORETYPE names them. They decide the
// runtime's CPU speed: on our EPYC (AVX-512) machines it picks Cooperlake,
// but their environment sets OPENBLAS_CORETYPE=Haswell (AVX2), and the DDP
// benchmark's MLP step takes 0.70 ms instead of 0.42 ms. It is the user's
// choice, made before any code of ours runs; blas_core() names it
// (hookscope-cli --version, the benchmarks' labels), and says when the
// environment forced it.
std::string blas_core() {
  std::string core = openblas_get_corename();
  if (const char* forced = std::getenv("OPENBLAS_CORETYPE")) {
    core += std::string(" (OPENBLAS_CORETYPE=") + forced + ")";
  }
  return core;
}

Kernels& kernels_for(Device device) {
  static CpuKernels cpu;
  if (device == Device::kCPU) return cpu;
  // Asked once per process; a device that vanishes later fails in the kernels.
  static const std::string unusable = [] {
    std::string why;
    return cuda_available(&why) ? std::string() : why;
  }();
  Kernels* cuda = g_cuda_kernels.load();
#ifdef HOOKSCOPE_WITH_CUDA
  if (cuda == nullptr && unusable.empty()) {
    Kernels* expected = nullptr;
    g_cuda_kernels.compare_exchange_strong(expected, builtin_cuda_kernels());
    cuda = g_cuda_kernels.load();
  }
#endif
  const std::string& why = unusable;
  if (!why.empty() || cuda == nullptr) {
    throw std::runtime_error("cannot run on cuda: " +
                             (why.empty() ? std::string("no CUDA kernels in this build") : why) +
                             "; use --device cpu");
  }
  return *cuda;
}

}  // namespace hookscope
