#include "tensor/device.h"

#include <stdexcept>

namespace hookscope {

std::string device_name(Device device) {
  return device == Device::kCPU ? "cpu" : "cuda";
}

Device parse_device(const std::string& name) {
  if (name == "cpu") return Device::kCPU;
  if (name == "cuda") return Device::kCUDA;
  throw std::invalid_argument("unknown device '" + name + "': expected cpu or cuda");
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
#endif

}  // namespace hookscope
