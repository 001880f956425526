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

// Note [One CUDA device per thread]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As with cudaSetDevice, the CUDA device is a property of the calling host
// thread: Tensor::empty(shape, Device::kCUDA) allocates on it and every
// kernel launched for its tensors runs on that device's stream. DDP ranks
// that run as threads each call cuda_set_device(rank % cuda_device_count())
// first. A tensor of another device given to an op is a device mismatch
// error that names both devices ("cuda:0 and cuda:1").
//
// Throws std::runtime_error when CUDA is not usable or `index` is not a device.
void cuda_set_device(int index);
// The calling thread's CUDA device (0 unless set); -1 when CUDA is not usable.
int cuda_current_device();
// "NVIDIA H200, 139.8 GiB, sm_90" for reports; "" when not a usable device.
std::string cuda_device_description(int index);
// "cpu", "cuda:0", ...; index < 0 prints the bare device name.
std::string device_string(Device device, int index);

// Throws std::invalid_argument when `device` cannot run here, saying why and
// what to do instead ("... no CUDA device is usable ...; use --device cpu").
void check_device_usable(Device device);

}  // namespace hookscope
