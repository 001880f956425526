// Cursor::seek steps to near events (Note [Seeking by steps]) and must land
// on exactly the state state_at gives, whichever way it gets there.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <stdexcept>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"
#include "trace/recorder.h"

using namespace hookscope;
using namespace hookscope::analysis;

namespace {

// Seeks near (stepped) and far (state_at), forward and back, from wherever
// the last seek left the cursor.
void check_seeks(const Model& m, uint64_t seed) {
  Cursor c(m);
  std::mt19937_64 rng(seed);
  const size_t n = m.num_events();
  for (int k = 0; k < 60; ++k) {
    size_t to;
    if (k % 3 == 0) {
      to = rng() % n;  // far
    } else {
      const long delta = static_cast<long>(rng() % 600) - 300;  // near: within the step budget
      to = static_cast<size_t>(std::clamp<long>(static_cast<long>(c.index()) + delta, 0,
                                                static_cast<long>(n) - 1));
    }
    c.seek(to);
    REQUIRE(c.index() == to);
    REQUIRE(c.state() == m.state_at(to));
    if (c.next()) REQUIRE(c.state() == m.state_at(to + 1));  // stepping goes on from there
  }
  CHECK_THROWS_AS(c.seek(n), std::out_of_range);
}

}  // namespace

TEST_CASE("Cursor::seek by steps equals state_at on a DDP-like synthetic trace") {
  SyntheticOptions o;
  o.events = 6'000;
  o.parameters = 4;
  o.rebuild_every = 3;
  o.policy = trace::DestroyPolicy::kNone;
  Model m(make_synthetic_trace(o), ModelOptions{256, 8.0});
  check_seeks(m, 1);
}

TEST_CASE("Cursor::seek by steps equals state_at on a DDP recovery trace (ranks as threads)") {
  Model m(testing::record_recovery_trace(), ModelOptions{256, 8.0});
  REQUIRE_FALSE(m.reducers().empty());
  check_seeks(m, 2);
}
