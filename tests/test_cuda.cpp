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
