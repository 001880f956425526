#pragma once
// The CUDA caching allocator's counters, for tests, benchmarks and the GPU
// check. Without CUDA every counter is zero and the functions do nothing.

#include <cstdint>

namespace hookscope {

struct CudaMemoryStats {
  uint64_t allocated_bytes = 0;       // blocks held by live tensors (rounded sizes)
  uint64_t peak_allocated_bytes = 0;
  uint64_t reserved_bytes = 0;        // obtained with cudaMalloc: allocated + cached
  uint64_t cuda_mallocs = 0;          // cudaMalloc calls that succeeded
  uint64_t cache_hits = 0;            // allocations served from the cache
  uint64_t cuda_frees = 0;            // blocks given back with cudaFree (empty_cache, OOM retry)
};

// Counters of one device (-1: the calling thread's device).
CudaMemoryStats cuda_memory_stats(int device = -1);
// Gives every cached (unused) block of every device back to the driver.
void cuda_empty_cache();
// Waits until everything queued on the calling thread's device stream ran.
void cuda_synchronize();

}  // namespace hookscope
