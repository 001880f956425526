// Note [Returning freed memory]: after a load, blocks above the loader's
// mmap threshold live in mmaps of their own and go back to the OS when
// freed, even after a larger block was freed (glibc would otherwise raise its
// threshold to that size and serve the next from an arena).
#include <doctest/doctest.h>

#include <cstdlib>  // defines __GLIBC__ where it is glibc

#if HOOKSCOPE_APP_UI && defined(__GLIBC__)
#include <malloc.h>

#include <cstring>
#include <filesystem>
#include <memory>

#include "loader.h"
#include "testing/test_util.h"

using namespace hookscope;

TEST_CASE("loader: after a load, large blocks are mmapped and unmapped when freed") {
  // In a fresh process: after other tests, a free chunk of the heap can serve
  // the 4 MiB block below before glibc ever considers an mmap for it.
  if (std::getenv("HOOKSCOPE_LOADER_MEMORY_CHILD") == nullptr) {
    const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
    const testing::CommandResult r = testing::run_command(
        "HOOKSCOPE_LOADER_MEMORY_CHILD=1 '" + self + "' -tc='loader: after a load*'");
    INFO(r.out);
    CHECK(r.exit == 0);
    CHECK(r.out.find("1 passed") != std::string::npos);
    return;
  }
  const std::filesystem::path sample = std::filesystem::path(HOOKSCOPE_SAMPLES_DIR) / "recovery-none.hstrace";
  REQUIRE(std::filesystem::exists(sample));
  const app::LoadResult r = app::load_traces({sample.string()});
  REQUIRE(r.model);
  {
    // Freeing a 16 MiB mmapped block raises glibc's dynamic threshold to 16 MiB.
    auto big = std::make_unique<char[]>(16 << 20);
    std::memset(big.get(), 1, 16 << 20);
  }
  const size_t before = mallinfo2().hblkhd;
  auto block = std::make_unique<char[]>(4 << 20);
  std::memset(block.get(), 1, 4 << 20);
  CHECK(mallinfo2().hblkhd >= before + (4 << 20));  // its own mmap
  block.reset();
  CHECK(mallinfo2().hblkhd == before);  // unmapped
  app::release_free_memory();  // and trimming is harmless at any time
  CHECK(r.model->num_events() > 0);
}
#endif
