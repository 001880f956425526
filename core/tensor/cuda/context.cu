// Error checks, device guards, the compute stream and cuBLAS handle of each
// device (Note [One stream per device]).
#include <atomic>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_context.h"
#include "tensor/device.h"

namespace hookscope::cuda {

namespace {

std::string where(const char* file, int line) {
  std::string f = file;
  const size_t slash = f.find_last_of('/');
  if (slash != std::string::npos) f = f.substr(slash + 1);
  return f + ":" + std::to_string(line);
}

const char* cublas_status_name(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_MAPPING_ERROR: return "CUBLAS_STATUS_MAPPING_ERROR";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case CUBLAS_STATUS_LICENSE_ERROR: return "CUBLAS_STATUS_LICENSE_ERROR";
    default: return "unknown cuBLAS status";
  }
}

struct DeviceState {
  cudaStream_t stream = nullptr;
  int stream_number = 0;
  std::mutex blas_mutex;
  cublasHandle_t blas = nullptr;  // created on first matmul, under blas_mutex
};

std::atomic<int> g_stream_numbers{0};
std::mutex g_states_mutex;
DeviceState* g_states[kMaxDevices] = {};

void check_index(int device) {
  if (device < 0 || device >= kMaxDevices) {
    throw std::runtime_error("CUDA device index " + std::to_string(device) +
                             " is out of range (0.." + std::to_string(kMaxDevices - 1) + ")");
  }
}

// Never destroyed: tensors in static storage may outlive any destructor order.
DeviceState& state(int device) {
  check_index(device);
  std::lock_guard<std::mutex> lock(g_states_mutex);
  DeviceState*& s = g_states[device];
  if (s == nullptr) {
    auto* fresh = new DeviceState();
    DeviceGuard guard(device);
    HOOKSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&fresh->stream, cudaStreamNonBlocking));
    fresh->stream_number = next_stream_number();
    s = fresh;
  }
  return *s;
}

}  // namespace

void throw_cuda_error(cudaError_t err, const char* what, const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  cudaGetLastError();  // clear a non-sticky error so the next call starts clean
  throw std::runtime_error(std::string(what) + " failed on " +
                           device_string(Device::kCUDA, device) + ": " +
                           cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ") at " +
                           where(file, line));
}

void throw_cublas_error(cublasStatus_t status, const char* what, const char* file, int line) {
  int device = -1;
  cudaGetDevice(&device);
  throw std::runtime_error(std::string(what) + " failed on " +
                           device_string(Device::kCUDA, device) + ": " +
                           cublas_status_name(status) + " at " + where(file, line));
}

int current_device() {
  int d = 0;
  HOOKSCOPE_CUDA_CHECK(cudaGetDevice(&d));
  return d;
}

DeviceGuard::DeviceGuard(int device) {
  HOOKSCOPE_CUDA_CHECK(cudaGetDevice(&previous_));
  if (previous_ != device) {
    HOOKSCOPE_CUDA_CHECK(cudaSetDevice(device));
    changed_ = true;
  }
}

DeviceGuard::~DeviceGuard() {
  if (changed_) cudaSetDevice(previous_);  // a destructor cannot throw; nothing to do on failure
}

cudaStream_t compute_stream(int device) { return state(device).stream; }
int compute_stream_number(int device) { return state(device).stream_number; }
int next_stream_number() { return ++g_stream_numbers; }

cublasHandle_t cublas_handle_locked(int device, std::unique_lock<std::mutex>& lock) {
  DeviceState& s = state(device);
  lock = std::unique_lock<std::mutex>(s.blas_mutex);
  if (s.blas == nullptr) {
    DeviceGuard guard(device);
    const CublasApi& api = cublas();  // Note [cuBLAS loaded on first use]
    cublasHandle_t h = nullptr;
    HOOKSCOPE_CUBLAS_CHECK(api.create(&h));
    HOOKSCOPE_CUBLAS_CHECK(api.set_stream(h, s.stream));
    // FP32 arithmetic without TF32 tensor cores (the default mode; said here
    // because TF32's 10-bit mantissa would break the 1e-4 match with the CPU).
    HOOKSCOPE_CUBLAS_CHECK(api.set_math_mode(h, CUBLAS_DEFAULT_MATH));
    s.blas = h;
  }
  return s.blas;
}

}  // namespace hookscope::cuda
