#include "tensor/device.h"

#include <stdexcept>

#include "tensor/cuda_memory.h"

namespace hookscope {

std::string device_name(Device device) {
  return device == Device::kCPU ? "cpu" : "cuda";
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::kCPU;
  if (name == "cuda") return Device::kCUDA;
  throw std::invalid_argument("unknown device '" + name + "': expected cpu or cuda");
}

std::string device_string(Device device, int index) {
  if (device == Device::kCPU || index < 0) return device_name(device);
  return device_name(device) + ":" + std::to_string(index);
}

void check_device_usable(Device device) {
  if (device == Device::kCPU) return;
  std::string why;
  if (!cuda_available(&why)) {
    throw std::invalid_argument("--device cuda: no CUDA device is usable here (" + why +
                                "); use --device cpu");
  }
}

#ifndef HOOKSCOPE_WITH_CUDA
bool cuda_compiled() { return false; }
int cuda_device_count() { return 0; }
bool cuda_available(std::string* why) {
  if (why) {
    *why = "this build has no CUDA support (nvcc was not found at configure time, or "
           "HOOKSCOPE_CUDA=OFF)";
  }
  return false;
}
int cuda_current_device() { return -1; }
std::string cuda_device_description(int) { return ""; }
CudaMemoryStats cuda_memory_stats(int) { return {}; }
void cuda_empty_cache() {}
void cuda_synchronize() {}
void cuda_set_device(int index) {
  std::string why;
  cuda_available(&why);
  throw std::runtime_error("cuda_set_device(" + std::to_string(index) + "): " + why);
}
#endif

}  // namespace hookscope
