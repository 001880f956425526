// The CPU block cache (Note [CPU block cache] in tensor/tensor.h).
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "tensor/tensor.h"

namespace hookscope {
namespace {

constexpr size_t kCachedMinBytes = 64u << 10;   // smaller blocks: plain malloc
constexpr size_t kCacheCapBytes = 256u << 20;   // at most this much kept free

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<float*>> free_by_bytes;
  size_t cached_bytes = 0;
};

BlockCache& cache() {
  static auto* c = new BlockCache();  // never destroyed: Storages may outlive statics
  return *c;
}

size_t bytes_of(int64_t numel) { return static_cast<size_t>(numel) * sizeof(float); }

}  // namespace

float* cpu_block_acquire(int64_t numel) {
  const size_t bytes = bytes_of(numel);
  if (bytes >= kCachedMinBytes) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free_by_bytes.find(bytes);
    if (it != c.free_by_bytes.end() && !it->second.empty()) {
      float* block = it->second.back();
      it->second.pop_back();
      c.cached_bytes -= bytes;
      return block;
    }
  }
  void* p = std::malloc(bytes == 0 ? 1 : bytes);
  if (!p) throw std::bad_alloc();
  return static_cast<float*>(p);
}

void cpu_block_release(float* block, int64_t numel) {
  if (!block) return;
  const size_t bytes = bytes_of(numel);
  if (bytes >= kCachedMinBytes) {
    BlockCache& c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    if (c.cached_bytes + bytes <= kCacheCapBytes) {
      c.free_by_bytes[bytes].push_back(block);
      c.cached_bytes += bytes;
      return;
    }
  }
  std::free(block);
}

Storage::~Storage() { cpu_block_release(block_, numel); }

}  // namespace hookscope
