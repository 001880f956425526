// StateView and StateWorker (Note [Lazy state]): what they say about any
// Function at any event is what state_at says, and the worker never hands
// over the state of another event.

#include <doctest/doctest.h>

#include <stdexcept>

#include "analysis/model.h"
#include "analysis/state_view.h"
#include "analysis/synthetic.h"
#include "scenarios/autograd_demo.h"
#include "testing/test_util.h"
#include "trace/recorder.h"

using namespace hookscope;
using namespace hookscope::analysis;

namespace {

// At every `stride`-th event: every Function's liveness, hooks and the
// tensor hooks of each, against the full state.
size_t check_views(const Model& m, size_t stride) {
  FunctionAt got;
  std::vector<HookAt> tensor;
  size_t live_seen = 0, hooks_seen = 0, tensor_seen = 0;
  for (size_t e = 0; e < m.num_events(); e += stride) {
    const State st = m.state_at(e);
    const StateView v(m, e);
    REQUIRE(v.index() == e);
    for (FunctionIndex f = 0; f < m.functions().size(); ++f) {
      const FunctionAt* want = st.find(f);
      REQUIRE(v.live(f) == (want != nullptr));
      REQUIRE(v.function_at(f, got) == (want != nullptr));
      if (want) {
        REQUIRE(got == *want);
        ++live_seen;
        hooks_seen += got.num_hooks();
      }
      v.tensor_hooks_of(f, tensor);
      std::vector<HookAt> expected;
      for (const HookAt& h : st.tensor_hooks) {
        if (h.function == f) expected.push_back(h);
      }
      REQUIRE(tensor == expected);
      tensor_seen += tensor.size();
    }
  }
  // The traces exercise what is compared.
  CHECK(live_seen > 0);
  CHECK(hooks_seen > 0);
  MESSAGE("compared ", live_seen, " live Functions, ", hooks_seen, " hooks, ", tensor_seen, " tensor hooks");
  return tensor_seen;
}

}  // namespace

TEST_CASE("state view: every Function at every event as state_at says, on a DDP recovery trace") {
  const Model m(testing::record_recovery_trace(), ModelOptions{256, 8.0});
  REQUIRE(m.num_events() > 100);
  check_views(m, std::max<size_t>(1, m.num_events() / 400));
  CHECK_THROWS_AS(StateView(m, m.num_events()), std::out_of_range);
  const StateView v(m, 0);
  FunctionAt fa;
  CHECK_FALSE(v.function_at(static_cast<FunctionIndex>(m.functions().size()), fa));  // no such Function
}

TEST_CASE("state view: an autograd demo, whose leaf hooks move to the tensor between steps") {
  trace::MemoryRecorder rec;
  rec.start();
  scenarios::run_autograd_demo({6, 0});
  const Model m(rec.take_trace(), ModelOptions{64, 64.0});
  CHECK(check_views(m, 1) > 0);  // the tensor hooks are compared too
}

TEST_CASE("state view: a synthetic trace with rebuilds and leaked hooks") {
  SyntheticOptions o;
  o.events = 4'000;
  o.parameters = 4;
  o.rebuild_every = 3;
  o.policy = trace::DestroyPolicy::kNone;
  const Model m(make_synthetic_trace(o), ModelOptions{256, 8.0});
  check_views(m, 7);
}

TEST_CASE("state worker: hands over only the state of the event asked, the latest request wins") {
  const Model m(testing::record_recovery_trace(), ModelOptions{256, 8.0});
  const size_t last = m.num_events() - 1;
  StateWorker w(m);
  CHECK(w.get(last) == nullptr);  // nothing asked yet
  w.request(last);
  const auto s = w.wait(last);
  REQUIRE(s != nullptr);
  CHECK(*s == m.state_at(last));
  CHECK(w.get(last) == s);
  CHECK(w.get(last / 2) == nullptr);  // another event: pending, not the last one's
  // Many requests in a row: the last is built; none other is ever handed over as it.
  for (size_t e = 0; e < last; e += std::max<size_t>(1, last / 50)) {
    w.request(e);
    if (const auto got = w.get(e)) CHECK(got->index == e);
  }
  w.request(last / 3);
  const auto third = w.wait(last / 3);
  REQUIRE(third != nullptr);
  CHECK(*third == m.state_at(last / 3));
  w.request(m.num_events());  // past the end: ignored
  CHECK(w.get(last / 3) == third);
}

TEST_CASE("state worker: take() hands the built state over once; a Cursor adopts it and steps on as from state_at") {
  const Model m(testing::record_recovery_trace(), ModelOptions{256, 8.0});
  const size_t last = m.num_events() - 1;
  StateWorker w(m);
  CHECK(w.take() == nullptr);  // nothing built
  w.request(last);
  REQUIRE(w.wait(last) != nullptr);
  std::shared_ptr<State> taken = w.take();
  REQUIRE(taken != nullptr);
  CHECK(*taken == m.state_at(last));
  CHECK(w.get(last) == nullptr);  // handed over: pending again, not rebuilt unasked
  CHECK(w.take() == nullptr);

  Cursor c(m, 0);
  CHECK(c.steps_to(1));
  CHECK_FALSE(c.steps_to(last));  // far: a seek would call state_at
  c.adopt(std::move(*taken));
  CHECK(taken->index == 0);  // the Cursor's old state, left for the caller to free
  CHECK(c.index() == last);
  CHECK(c.state() == m.state_at(last));
  REQUIRE(c.prev());
  CHECK(c.state() == m.state_at(last - 1));
  c.seek(last - 40);
  CHECK(c.state() == m.state_at(last - 40));

  w.request(last / 2);  // asked again: built again
  const auto half = w.wait(last / 2);
  REQUIRE(half != nullptr);
  CHECK(*half == m.state_at(last / 2));
}
