#pragma once
// Fresh memory about to be written front to back: its pages populated in one
// call instead of a fault per 4 KiB (Note [Tables populated at once] in
// core/analysis/model_builder.h; the packed events' arenas too).

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>

namespace hookscope::trace {

// Advice only: MADV_POPULATE_WRITE needs Linux 5.14; where it is refused (or
// unknown to the headers) the pages fault in as they would have.
inline void populate_pages(void* p, size_t bytes) {
#ifdef MADV_POPULATE_WRITE
  constexpr uintptr_t kPage = 4096;
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(p) + kPage - 1) & ~(kPage - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(p) + bytes) & ~(kPage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
#else
  (void)p, (void)bytes;
#endif
}

}  // namespace hookscope::trace
