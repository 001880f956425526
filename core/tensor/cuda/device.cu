// CUDA runtime queries. Compiled only when the build has CUDA (HOOKSCOPE_WITH_CUDA).
#include <cuda_runtime.h>

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

bool cuda_available(std::string* why) {
  int n = 0;
  cudaError_t err = cudaGetDeviceCount(&n);
  if (err != cudaSuccess || n == 0) {
    if (why) {
      *why = std::string("CUDA is compiled in but no GPU is usable here (") +
             (err != cudaSuccess ? cudaGetErrorString(err) : "0 devices") + ")";
    }
    cudaGetLastError();
    return false;
  }
  return true;
}

}  // namespace hookscope
