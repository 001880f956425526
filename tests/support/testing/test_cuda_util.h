#pragma once
// Helpers of the GPU tests (tests/core/*/test_cuda*.cpp): the skip pattern and
// CPU-vs-GPU comparison.

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "tensor/device.h"
#include "tensor/tensor.h"

namespace hookscope::testing {

// GPU results must match the CPU path within this (sums run in another order).
constexpr float kGpuTolerance = 1e-4f;

// True when a GPU test can run; otherwise reports why as the test's MESSAGE.
inline bool gpu_or_skip() {
  std::string why;
  if (cuda_available(&why)) return true;
  MESSAGE("skipping GPU test: " << why);
  return false;
}

inline float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  float m = 0.f;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

// Both tensors copied to the host; shapes must agree.
inline float max_abs_diff(const Tensor& a, const Tensor& b) {
  REQUIRE(a.shape() == b.shape());
  return max_abs_diff(a.to_vector(), b.to_vector());
}

// doctest::Contains for a std::string built at run time.
inline doctest::Contains contains(const std::string& s) { return doctest::Contains(s.c_str()); }

}  // namespace hookscope::testing
