// GPU tests skip, saying why, where no GPU (or no CUDA build) is present.
#include <doctest/doctest.h>

#include "tensor/device.h"
#include "tensor/shared_library.h"
#include "tensor/tensor.h"

using namespace hookscope;

TEST_CASE("cuda: availability is reported with a reason" * doctest::test_suite("gpu")) {
  std::string why;
  if (!cuda_available(&why)) {
    MESSAGE("skipping GPU checks: " << why);
    CHECK_FALSE(why.empty());
    CHECK(cuda_device_count() == 0);
    CHECK_THROWS_WITH_AS(Tensor::zeros({4}, Device::kCUDA), doctest::Contains("use --device cpu"),
                         std::runtime_error);
    return;
  }
  CHECK(cuda_device_count() >= 1);
}

TEST_CASE("device names parse") {
  CHECK(parse_device("cpu") == Device::kCPU);
  CHECK(parse_device("cuda") == Device::kCUDA);
  CHECK_THROWS_WITH_AS(parse_device("tpu"), doctest::Contains("expected cpu or cuda"),
                       std::invalid_argument);
}

// Note [GPU libraries opened on first use]: the messages a user gets when one is missing.
TEST_CASE("a library opened on first use: a missing one is named with what to do") {
  CHECK_THROWS_WITH_AS(open_shared_library("libhookscope-absent.so.7", "/nonexistent",
                                           "a test needs the absent library", "install it"),
                       doctest::Contains("a test needs the absent library, and "
                                         "libhookscope-absent.so.7 could not be loaded ("),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(open_shared_library("libhookscope-absent.so.7", nullptr, "x", "install it"),
                       doctest::Contains("): install it"), std::runtime_error);
  // A library without the expected function: it is not the version built against.
  const SharedLibrary libc = open_shared_library("libc.so.6", nullptr, "x", "y");
  CHECK(shared_library_symbol(libc, "malloc", "libc") != nullptr);
  CHECK_THROWS_WITH_AS(shared_library_symbol(libc, "cublasCreate_v2", "the cuBLAS 13 built against"),
                       doctest::Contains("libc.so.6 has no cublasCreate_v2: it is not the cuBLAS 13"),
                       std::runtime_error);
}

#if HOOKSCOPE_WITH_CUDA
#include <fstream>

#include "tensor/cuda/cuda_context.h"
#include "testing/test_util.h"

namespace {
bool mapped(const char* library) {  // whether `library` is in this process's memory map
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find(library) != std::string::npos) return true;
  }
  return false;
}
}  // namespace

// Note [GPU libraries opened on first use]: no GPU is needed to check it.
TEST_CASE("cuda: a process that never touches a GPU loads no CUDA library") {
  // ld.so lists what it loads: nothing of CUDA at start (the runtime is
  // linked statically and opens the driver at the first CUDA call).
  const testing::CommandResult r = testing::run_command("LD_DEBUG=libs " + std::string(HOOKSCOPE_CLI_PATH) +
                                                        " --version");
  REQUIRE(r.exit == 0);
  CHECK(r.out.find("hookscope-cli") != std::string::npos);
  for (const char* lib : {"libcudart", "libcublas", "libnccl", "libcuda.so"}) {
    INFO(lib);
    CHECK(r.out.find(lib) == std::string::npos);
  }
  // And the program does not name one among its needed libraries at all.
  const testing::CommandResult needed =
      testing::run_command("ldd " + std::string(HOOKSCOPE_CLI_PATH));
  REQUIRE(needed.exit == 0);
  CHECK(needed.out.find("/usr/local") == std::string::npos);
  CHECK(needed.out.find("not found") == std::string::npos);
}

TEST_CASE("cuda: without a driver, --device cuda names the missing library and --device cpu") {
  std::string why;
  if (cuda_available(&why)) {
    MESSAGE("skipping: this machine has a usable GPU");
    return;
  }
  if (mapped("libcuda.so")) {
    MESSAGE("skipping: a driver is loaded but no device is usable (" << why << ")");
    return;
  }
  CHECK(why.find("libcuda.so.1") != std::string::npos);
  CHECK(why.find("LD_LIBRARY_PATH") != std::string::npos);
  CHECK_THROWS_WITH_AS(check_device_usable(Device::kCUDA), doctest::Contains("use --device cpu"),
                       std::invalid_argument);
}

TEST_CASE("cuda: cuBLAS is not loaded at start, and loads with its four functions when first needed") {
  // Other tests of this process may have run a GPU matmul already; where none
  // can have (no device), the library must not be there yet.
  std::string why;
  if (!cuda_available(&why)) CHECK_FALSE(mapped("libcublas.so"));
  cuda::cublas();  // throws, naming what to install, when it cannot be loaded
  CHECK(mapped("libcublas.so"));
}
#endif
