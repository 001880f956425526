// The caching allocator (Note [One stream per device]) and its counters.
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "tensor/cuda/cuda_context.h"
#include "tensor/cuda_memory.h"
#include "tensor/device.h"

namespace hookscope::cuda {

namespace {

// Small blocks round to 512 bytes, large ones to 2 MiB, so similar sizes
// share cached blocks.
constexpr size_t kSmallRound = 512;
constexpr size_t kLargeRound = 2u << 20;
constexpr size_t kSmallLimit = 1u << 20;

size_t round_size(size_t bytes) {
  if (bytes == 0) bytes = 1;
  const size_t r = bytes < kSmallLimit ? kSmallRound : kLargeRound;
  return (bytes + r - 1) / r * r;
}

std::string mib(uint64_t bytes) {
  return std::to_string(bytes / (1u << 20)) + "." +
         std::to_string((bytes % (1u << 20)) * 10 / (1u << 20)) + " MiB";
}

struct DeviceCache {
  std::mutex mutex;
  std::multimap<size_t, void*> free_blocks;  // size -> block, for best fit
  CudaMemoryStats stats;

  // Caller holds mutex.
  void release_cached(int device) {
    DeviceGuard guard(device);
    for (auto& [size, ptr] : free_blocks) {
      cudaFree(ptr);  // errors here would come from an earlier kernel; nothing to undo
      stats.reserved_bytes -= size;
      ++stats.cuda_frees;
    }
    free_blocks.clear();
  }
};

DeviceCache* cache(int device) {
  static DeviceCache* caches = new DeviceCache[kMaxDevices];  // never destroyed
  if (device < 0 || device >= kMaxDevices) {
    throw std::runtime_error("CUDA device index " + std::to_string(device) + " is out of range");
  }
  return &caches[device];
}

void give_back(int device, void* ptr, size_t size) {
  DeviceCache* c = cache(device);
  std::lock_guard<std::mutex> lock(c->mutex);
  c->free_blocks.emplace(size, ptr);
  c->stats.allocated_bytes -= size;
}

}  // namespace

std::shared_ptr<void> allocate(size_t bytes, int device) {
  const size_t size = round_size(bytes);
  DeviceCache* c = cache(device);
  void* ptr = nullptr;
  size_t got = size;
  {
    std::lock_guard<std::mutex> lock(c->mutex);
    // Best fit, but never a block more than twice the size asked for.
    auto it = c->free_blocks.lower_bound(size);
    if (it != c->free_blocks.end() && it->first <= 2 * size) {
      got = it->first;
      ptr = it->second;
      c->free_blocks.erase(it);
      ++c->stats.cache_hits;
    } else {
      DeviceGuard guard(device);
      cudaError_t err = cudaMalloc(&ptr, size);
      if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        c->release_cached(device);  // cudaFree synchronises: the cached blocks are idle
        err = cudaMalloc(&ptr, size);
      }
      if (err == cudaErrorMemoryAllocation) {
        cudaGetLastError();
        throw std::runtime_error(
            "CUDA out of memory on " + device_string(Device::kCUDA, device) +
            ": tried to allocate " + mib(size) + "; " + mib(c->stats.allocated_bytes) +
            " held by tensors, " + mib(c->stats.reserved_bytes) +
            " reserved by hookscope (use a smaller --batch or model)");
      }
      HOOKSCOPE_CUDA_CHECK(err);
      ++c->stats.cuda_mallocs;
      c->stats.reserved_bytes += size;
    }
    c->stats.allocated_bytes += got;
    if (c->stats.allocated_bytes > c->stats.peak_allocated_bytes) {
      c->stats.peak_allocated_bytes = c->stats.allocated_bytes;
    }
  }
  return std::shared_ptr<void>(ptr, [device, got](void* p) { give_back(device, p, got); });
}

}  // namespace hookscope::cuda

namespace hookscope {

CudaMemoryStats cuda_memory_stats(int device) {
  if (device < 0) device = cuda_current_device();
  if (device < 0) return {};
  cuda::DeviceCache* c = cuda::cache(device);
  std::lock_guard<std::mutex> lock(c->mutex);
  return c->stats;
}

void cuda_empty_cache() {
  const int n = cuda_device_count();
  for (int d = 0; d < n && d < cuda::kMaxDevices; ++d) {
    cuda::DeviceCache* c = cuda::cache(d);
    std::lock_guard<std::mutex> lock(c->mutex);
    if (!c->free_blocks.empty()) c->release_cached(d);
  }
}

void cuda_synchronize() {
  const int d = cuda::current_device();
  HOOKSCOPE_CUDA_CHECK(cudaStreamSynchronize(cuda::compute_stream(d)));
}

}  // namespace hookscope
