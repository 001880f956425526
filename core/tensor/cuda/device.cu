// CUDA runtime queries. Compiled only when the build has CUDA (HOOKSCOPE_WITH_CUDA).
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "tensor/device.h"

namespace hookscope {

bool cuda_compiled() { return true; }

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

namespace {

// The runtime is linked statically and opens the driver itself (Note [GPU
// libraries opened on first use]); when it could not, its own words are
// "CUDA driver version is insufficient", which sends a user hunting for a
// driver upgrade on a machine that has no driver: name the library instead.
std::string runtime_error_text(cudaError_t err) {
  if (err != cudaErrorInsufficientDriver && err != cudaErrorNoDevice) {
    return cudaGetErrorString(err);
  }
  void* driver = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (driver != nullptr) {
    ::dlclose(driver);
    return cudaGetErrorString(err);
  }
  return std::string("no NVIDIA driver: libcuda.so.1 could not be loaded (") + ::dlerror() +
         "); install the NVIDIA driver, or put the folder holding libcuda.so.1 on "
         "LD_LIBRARY_PATH";
}

}  // namespace

bool cuda_available(std::string* why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    if (why) {
      *why = std::string("CUDA is compiled in, but ") +
             (err != cudaSuccess ? runtime_error_text(err) : "the machine has 0 devices");
    }
    cudaGetLastError();
    return false;
  }
  return true;
}

int cuda_current_device() {
  if (!cuda_available()) return -1;
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) {
    cudaGetLastError();
    return -1;
  }
  return d;
}

void cuda_set_device(int index) {
  std::string why;
  if (!cuda_available(&why)) {
    throw std::runtime_error("cuda_set_device(" + std::to_string(index) + "): " + why);
  }
  const int n = cuda_device_count();
  if (index < 0 || index >= n) {
    throw std::runtime_error("cuda_set_device(" + std::to_string(index) + "): this machine has " +
                             std::to_string(n) + " CUDA device(s)");
  }
  const cudaError_t err = cudaSetDevice(index);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cudaSetDevice(" + std::to_string(index) +
                             ") failed: " + cudaGetErrorString(err));
  }
}

std::string cuda_device_description(int index) {
  if (index < 0 || index >= cuda_device_count()) return "";
  cudaDeviceProp prop;
  if (cudaGetDeviceProperties(&prop, index) != cudaSuccess) {
    cudaGetLastError();
    return "";
  }
  char buf[96];
  std::snprintf(buf, sizeof(buf), ", %.1f GiB, sm_%d%d",
                static_cast<double>(prop.totalGlobalMem) / (1024.0 * 1024.0 * 1024.0), prop.major,
                prop.minor);
  return std::string(prop.name) + buf;
}

}  // namespace hookscope
