#pragma once
// Shared by the CUDA sources (kernels, allocator) and the NCCL process group:
// error checks, the stream and cuBLAS handle of each device, the caching
// allocator. Only compiled with CUDA; .cu files include it as C++17.

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <mutex>
#include <string>

namespace hookscope::cuda {

// Throws std::runtime_error "<what> failed on cuda:<d>: <CUDA's message> (file:line)".
[[noreturn]] void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* what, const char* file,
                                     int line);

#define HOOKSCOPE_CUDA_CHECK(expr)                                                   \
  do {                                                                               \
    const cudaError_t hs_err_ = (expr);                                              \
    if (hs_err_ != cudaSuccess) {                                                    \
      ::hookscope::cuda::throw_cuda_error(hs_err_, #expr, __FILE__, __LINE__);       \
    }                                                                                \
  } while (0)

#define HOOKSCOPE_CUBLAS_CHECK(expr)                                                 \
  do {                                                                               \
    const cublasStatus_t hs_st_ = (expr);                                            \
    if (hs_st_ != CUBLAS_STATUS_SUCCESS) {                                           \
      ::hookscope::cuda::throw_cublas_error(hs_st_, #expr, __FILE__, __LINE__);      \
    }                                                                                \
  } while (0)

constexpr int kMaxDevices = 64;

// The cuBLAS functions hookscope calls, from the library opened on first use
// (Note [cuBLAS loaded on first use], cublas_api.cu). Throws when it cannot
// be loaded, saying what to install.
struct CublasApi {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  decltype(&cublasSetMathMode) set_math_mode = nullptr;
  decltype(&cublasSgemm_v2) sgemm = nullptr;
};
const CublasApi& cublas();

int current_device();

// Makes `device` current for the calling thread for the guard's lifetime.
class DeviceGuard {
 public:
  explicit DeviceGuard(int device);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;

 private:
  int previous_ = -1;
  bool changed_ = false;
};

// Note [One stream per device]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every kernel, copy and cuBLAS call for a device's tensors goes to that
// device's one compute stream (non-blocking, created on first use, never
// destroyed). So ops are ordered among themselves without synchronisation;
// a host read (copy_to_host) synchronises the stream; and the caching
// allocator may hand a freed block to the next allocation at once, because
// everything that touched the block was queued on the same stream before.
// The only other stream is the NCCL communication stream: it waits on an
// event recorded on the compute stream before a collective, the compute
// stream waits on the collective's end event in Work::wait(), and the
// process group keeps a collective's tensor alive until its end event has
// passed (or the communicator was aborted), so a block never returns to the
// cache while the communication stream may still use it.
cudaStream_t compute_stream(int device);
// Small per-process stream numbers for traces (1, 2, ...): the compute
// stream of `device`, and fresh numbers for other streams.
int compute_stream_number(int device);
int next_stream_number();

// Runs fn(handle) under the device's cuBLAS lock; the handle is bound to
// compute_stream(device).
template <typename Fn>
void with_cublas(int device, Fn&& fn);
cublasHandle_t cublas_handle_locked(int device, std::unique_lock<std::mutex>& lock);

template <typename Fn>
void with_cublas(int device, Fn&& fn) {
  std::unique_lock<std::mutex> lock;
  cublasHandle_t h = cublas_handle_locked(device, lock);
  fn(h);
}

// The caching allocator: plain cudaMalloc underneath (never managed memory),
// freed blocks kept per device and size for reuse (Note [One stream per
// device]). The block goes back to the cache when the last reference drops.
std::shared_ptr<void> allocate(size_t bytes, int device);

}  // namespace hookscope::cuda
