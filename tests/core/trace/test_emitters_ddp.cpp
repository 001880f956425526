// The typed DDP/scenario emitters (trace/emitters_ddp.h) put each field
// where the analysis reads it: a Reducer's life told through them comes
// back out of the Model as the same numbers.
#include <doctest/doctest.h>

#include "analysis/model.h"
#include "autograd/hooks.h"
#include "testing/test_util.h"
#include "trace/emitters_ddp.h"
#include "trace/strings.h"

using namespace hookscope;
using trace::EventKind;

TEST_CASE("typed emitters: a Reducer's lifecycle reads back from the Model field by field") {
  trace::MemoryRecorder rec;
  rec.start();
  const OwnerId owner = create_owner(OwnerKind::kReducer, "Reducer under test");
  trace::emit_reducer_constructed(owner, 5, 2);
  trace::emit_prepare_for_backward(owner, 0);
  trace::emit_bucket_ready(owner, 77, 0, 3);
  trace::emit_collective_begin(owner, trace::CollectiveOp::kAllreduce, 77, 4096, 0);
  trace::emit_collective_end(owner, trace::CollectiveStatus::kTimeout, 77, 1234, trace::kPlacementHost);
  trace::emit_buckets_finalized(owner, 0);
  trace::emit_failure(trace::FailureMode::kThrow, 1, trace::intern("a test failure"));
  trace::emit_recovery_step(trace::RecoveryStep::kDdpRebuilt, trace::intern("rebuilt"));
  trace::emit_train_step(4, 0x3f800000u);  // loss 1.0f
  trace::emit_reducer_destroyed(owner, trace::DestroyPolicy::kNone, 0);
  destroy_owner(owner);
  trace::TraceData data = rec.take_trace();
  CHECK(data.source == "memory");

  // The raw fields, as EventKind's comments (trace/event.h) define them.
  const trace::Event* failure = nullptr;
  const trace::Event* step = nullptr;
  for (const auto& e : data.events) {
    if (e.kind == EventKind::kFailure) failure = &e;
    if (e.kind == EventKind::kTrainStep) step = &e;
  }
  REQUIRE(failure);
  CHECK(failure->actor == 1);
  CHECK(failure->sub == static_cast<uint8_t>(trace::FailureMode::kThrow));
  CHECK(data.str(failure->arg) == "a test failure");
  REQUIRE(step);
  CHECK(step->arg == 4);
  CHECK(step->key == 0x3f800000u);

  // And as the analysis reads them.
  analysis::Model m(std::move(data));
  REQUIRE(m.reducers().size() == 1);
  const auto& r = m.reducers()[0];
  CHECK(r.num_parameters == 5);
  CHECK(r.num_buckets == 2);
  CHECK(r.policy == trace::DestroyPolicy::kNone);
  CHECK(r.hooks_removed == 0);
  CHECK(r.destroyed_at != analysis::kNever);
  CHECK(r.prepares.size() == 1);
  REQUIRE(m.collectives().size() == 1);
  CHECK(m.collectives()[0].id == 77);
  CHECK(m.collectives()[0].status == trace::CollectiveStatus::kTimeout);
  CHECK(m.collectives()[0].end_at != analysis::kNever);
}
