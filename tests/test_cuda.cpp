// GPU tests skip, saying why, where no GPU (or no CUDA build) is present.
#include <doctest/doctest.h>

#include "tensor/device.h"
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

#if HOOKSCOPE_WITH_CUDA
#include <fstream>

#include "tensor/cuda/cuda_context.h"
#include "test_util.h"

namespace {
bool cublas_mapped() {  // whether libcublas is in this process's memory map
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.find("libcublas.so") != std::string::npos) return true;
  }
  return false;
}
}  // namespace

// Note [cuBLAS loaded on first use]: no GPU is needed to load the library.
TEST_CASE("cuda: cuBLAS is not loaded at start, and loads with its four functions when first needed") {
  // A process that needs no matmul never opens it: ld.so lists what it loads.
  const testing::CommandResult r = testing::run_command("LD_DEBUG=libs " + std::string(HOOKSCOPE_CLI_PATH) +
                                                        " --version");
  REQUIRE(r.exit == 0);
  CHECK(r.out.find("libcudart") != std::string::npos);  // the rest of CUDA is linked
  CHECK(r.out.find("libcublas") == std::string::npos);
  // Other tests of this process may have run a GPU matmul already; where none
  // can have (no device), the library must not be there yet.
  std::string why;
  if (!cuda_available(&why)) CHECK_FALSE(cublas_mapped());
  cuda::cublas();  // throws, naming what to install, when it cannot be loaded
  CHECK(cublas_mapped());
}
#endif
