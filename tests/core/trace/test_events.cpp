// The events the runtime emits, and the recorder that collects them.
#include <doctest/doctest.h>

#include <thread>
#include <vector>

#include "autograd/node.h"
#include "tensor/ops.h"
#include "trace/emit.h"
#include "trace/recorder.h"
#include "testing/test_util.h"
#include "trace/strings.h"

using namespace hookscope;
using trace::Event;
using trace::EventKind;

TEST_CASE("the exact event sequence of a small backward") {
  user_owner();  // created before recording: announced by the start snapshot
  trace::MemoryRecorder rec;
  rec.start();
  uint64_t acc_id, tanh_id, sum_id;
  HookKey key;
  OwnerId owner = create_owner(OwnerKind::kUser, "test owner");
  {
    Tensor x = Tensor::from_vector({3}, {1, 2, 3}).set_requires_grad(true).set_name("x");
    Tensor loss = sum(tanh(x));
    acc_id = x.grad_accumulator()->id();
    tanh_id = loss.grad_fn()->next_edge(0).function->id();
    sum_id = loss.grad_fn()->id();
    key = loss.grad_fn()->add_post_hook([](variable_list&, const variable_list&) {}, owner);
    loss.backward();
    CHECK(loss.grad_fn()->del_post_hook(key, owner));
  }
  destroy_owner(owner);
  rec.finish();
  std::vector<Event> ev = testing::recorded(rec);

  struct Want {
    EventKind kind;
    uint64_t node;
  };
  const std::vector<Want> want = {
      {EventKind::kOwnerCreated, 0},
      {EventKind::kNodeCreated, acc_id},
      {EventKind::kNodeLabel, acc_id},
      {EventKind::kNodeCreated, tanh_id},
      {EventKind::kNodeEdge, tanh_id},
      {EventKind::kNodeCreated, sum_id},
      {EventKind::kNodeEdge, sum_id},
      {EventKind::kHookAdded, sum_id},
      {EventKind::kBackwardBegin, 0},
      {EventKind::kApplyBegin, sum_id},
      {EventKind::kApplyEnd, sum_id},
      {EventKind::kHookFired, sum_id},
      {EventKind::kApplyBegin, tanh_id},
      {EventKind::kApplyEnd, tanh_id},
      {EventKind::kApplyBegin, acc_id},
      {EventKind::kApplyEnd, acc_id},
      {EventKind::kBackwardEnd, 0},
      {EventKind::kHookRemoved, sum_id},
      // loss goes first (its grad_fn with it), then x and its accumulator.
      {EventKind::kNodeReleased, sum_id},
      {EventKind::kNodeReleased, tanh_id},
      {EventKind::kNodeReleased, acc_id},
      {EventKind::kOwnerDestroyed, 0},
  };
  REQUIRE(ev.size() == want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CAPTURE(trace::to_string(ev[i].kind));
    CHECK(ev[i].kind == want[i].kind);
    CHECK(ev[i].node == want[i].node);
    if (i) CHECK(ev[i].t_ns >= ev[i - 1].t_ns);
  }
  CHECK(trace::lookup(static_cast<uint32_t>(ev[0].arg)) == "test owner");
  CHECK(trace::lookup(static_cast<uint32_t>(ev[1].arg)) == "AccumulateGrad");
  CHECK(ev[1].sub == trace::kNodeIsLeafAccumulator);
  CHECK(trace::lookup(static_cast<uint32_t>(ev[2].arg)) == "x [3]");
  CHECK(trace::lookup(static_cast<uint32_t>(ev[3].arg)) == "TanhBackward0");
  CHECK(ev[4].arg == acc_id);  // edge TanhBackward0 -> AccumulateGrad
  CHECK(ev[7].key == key.value);
  CHECK(ev[7].owner == owner);
  CHECK(ev[7].sub == static_cast<uint8_t>(HookKind::kPost));
  CHECK(ev[11].key == key.value);
  CHECK(ev[17].actor == owner);
  CHECK(ev[17].arg == static_cast<uint64_t>(trace::RemoveCause::kByKey));
  CHECK(ev[16].arg == 3);  // three Functions executed
}

TEST_CASE("hooks left on a Function when it is released are recorded as removed with that cause") {
  user_owner();
  trace::MemoryRecorder rec;
  rec.start();
  {
    auto n = std::make_shared<FunctionNode>("X", [](const variable_list&) { return variable_list{}; });
    n->add_post_hook([](variable_list&, const variable_list&) {});
  }
  rec.finish();
  std::vector<Event> ev = testing::recorded(rec);
  REQUIRE(ev.size() == 3);
  CHECK(ev[1].kind == EventKind::kHookRemoved);
  CHECK(ev[1].arg == static_cast<uint64_t>(trace::RemoveCause::kNodeReleased));
  CHECK(ev[2].kind == EventKind::kNodeReleased);
}

TEST_CASE("nothing is recorded without a recorder, or while paused") {
  trace::emit(EventKind::kBackwardBegin);
  trace::MemoryRecorder rec;
  rec.start();
  trace::emit(EventKind::kBackwardBegin, 0, 1);
  trace::set_recording(false);
  trace::emit(EventKind::kBackwardBegin, 0, 2);
  trace::set_recording(true);
  trace::emit(EventKind::kBackwardBegin, 0, 3);
  rec.finish();
  trace::emit(EventKind::kBackwardBegin, 0, 4);
  auto ev = testing::recorded(rec);
  REQUIRE(ev.size() == 2);
  CHECK(ev[0].node == 1);
  CHECK(ev[1].node == 3);
}

TEST_CASE("only one recorder at a time") {
  trace::MemoryRecorder a, b;
  a.start();
  CHECK_THROWS_WITH_AS(b.start(), doctest::Contains("already attached"), std::logic_error);
  a.finish();
  b.start();
  b.finish();
}

TEST_CASE("events from several threads: nothing lost, per-thread order kept, ranks stamped") {
  constexpr int kThreads = 4;
  constexpr uint64_t kPerThread = 3 * trace::kChunkEvents + 17;  // spans chunks
  trace::MemoryRecorder rec;
  rec.start();
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t] {
      trace::set_thread_rank(static_cast<uint16_t>(t));
      for (uint64_t i = 0; i < kPerThread; ++i) {
        trace::emit(EventKind::kHookFired, 0, static_cast<uint64_t>(t), i);
      }
    });
  }
  for (auto& th : threads) th.join();
  rec.finish();
  auto ev = testing::recorded(rec);
  REQUIRE(ev.size() == kThreads * kPerThread);
  std::vector<uint64_t> next(kThreads, 0);
  for (size_t i = 0; i < ev.size(); ++i) {
    const Event& e = ev[i];
    REQUIRE(e.node < kThreads);
    CHECK(e.key == next[e.node]);  // per-thread order
    CHECK(e.rank == e.node);
    ++next[e.node];
    if (i) CHECK(ev[i - 1].t_ns <= e.t_ns);
  }
}

TEST_CASE("a recording that starts late still names the live owners") {
  OwnerId early = create_owner(OwnerKind::kReducer, "Reducer early");
  trace::MemoryRecorder rec;
  rec.start();
  rec.finish();
  bool found = false;
  for (const Event& e : rec.events()) {
    if (e.kind == EventKind::kOwnerCreated && e.owner == early) {
      found = true;
      CHECK(e.sub == static_cast<uint8_t>(OwnerKind::kReducer));
      CHECK(trace::lookup(static_cast<uint32_t>(e.arg)) == "Reducer early");
    }
  }
  CHECK(found);
  destroy_owner(early);
}

TEST_CASE("string table interns once") {
  uint32_t a = trace::intern("MulBackward0");
  CHECK(trace::intern("MulBackward0") == a);
  CHECK(trace::lookup(a) == "MulBackward0");
  CHECK(trace::intern("") == 0);
  CHECK_THROWS_AS(trace::lookup(0xFFFFFFF0u), std::out_of_range);
}
