#pragma once
// Runs a test body on ranks over real Gloo and checks that none failed.

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "testing/test_util.h"

namespace hookscope::testing {

// `fn(rank, group)` on two ranks as threads; each rank's error, if any, fails the test.
template <class Fn>
void on_two_ranks(Fn fn) {
  const std::vector<std::string> errors = run_gloo_ranks(2, fn);
  CHECK(errors[0] == "");
  CHECK(errors[1] == "");
}

}  // namespace hookscope::testing
