#pragma once

#include <cstdint>
#include <string>

namespace hookscope {

enum class Device : uint8_t { kCPU = 0, kCUDA = 1 };

std::string device_name(Device device);
// Parses "cpu" / "cuda"; throws std::invalid_argument naming the accepted values.
Device parse_device(const std::string& name);

// True when this build has CUDA support compiled in.
bool cuda_compiled();
// True when CUDA is compiled in and a device is present. When false, `why`
// (if given) says which of the two is missing, for skip messages.
bool cuda_available(std::string* why = nullptr);
int cuda_device_count();

}  // namespace hookscope
