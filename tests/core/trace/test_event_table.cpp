// The table of event kinds (trace/event_table.h, Note [Typed events]): every
// typed emitter fills the fields the table says every writer fills, a view
// reads back what a writer put, and a view refuses a record of another kind.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdio>
#include <set>
#include <string>

#include "testing/test_util.h"
#include "trace/emitters_autograd.h"
#include "trace/emitters_ddp.h"
#include "trace/file_format.h"

using namespace hookscope;
using trace::EventKind;
namespace ev = trace::ev;

namespace {

// Every emitter once, every argument non-zero (enums not their zero value),
// so that a slot left zero is a slot the emitter forgot.
std::vector<trace::Event> every_emitter() {
  trace::MemoryRecorder rec;
  rec.start();
  trace::emit_node_created(11, 12, trace::kNodeIsLeafAccumulator, 13);
  trace::emit_node_edge(11, 14, 2);
  trace::emit_node_label(11, 15);
  trace::emit_node_released(11);
  trace::emit_owner_created(21, trace::OwnerKind::kModule, 22, true);
  trace::emit_owner_destroyed(21);
  trace::emit_hook_added(11, 31, trace::HookKind::kPost, 21, 1);
  trace::emit_hook_fired(11, 31, trace::HookKind::kPost, 21);
  trace::emit_hook_removed(11, 31, trace::HookKind::kPost, 21, 23, trace::RemoveCause::kByType);
  trace::emit_hook_remove_failed(11, 32, trace::HookKind::kPre, 23);
  trace::emit_backward_begin(3, true);
  trace::emit_backward_end(9, false);
  trace::emit_apply_begin(11);
  trace::emit_apply_end(11);
  trace::emit_saved_tensor_packed(11, 2, 21);
  trace::emit_saved_tensor_unpacked(11, 2, 21);
  trace::emit_reducer_constructed(41, 6, 2);
  trace::emit_reducer_destroyed(41, trace::DestroyPolicy::kByType, 6);
  trace::emit_prepare_for_backward(41, 4);
  trace::emit_autograd_hook_noop(41, trace::NoopReason::kNoSync, 11, 31, 5);
  trace::emit_mark_ready(41, 11, 5, 1);
  trace::emit_marked_twice(41, 11, 16, 5);
  trace::emit_unused_parameter(41, 11, 16, 5);
  trace::emit_bucket_ready(41, 51, 1, 3);
  trace::emit_comm_hook_fired(41, 33, 2, 4352);
  trace::emit_collective_begin(41, trace::CollectiveOp::kBroadcast, 51, 4096, 1);
  trace::emit_collective_end(41, trace::CollectiveStatus::kError, 51, 1234, trace::cuda_placement(0, 1));
  trace::emit_buckets_finalized(41, 4);
  trace::emit_failure(trace::FailureMode::kKill, 1, 17);
  trace::emit_recovery_step(trace::RecoveryStep::kGroupFormed, 18);
  trace::emit_process_group_created(61, 2, 3);
  trace::emit_process_group_destroyed(61, true);
  trace::emit_train_step(7, 0x3f800000u);
  trace::TraceData data = rec.take_trace();
  // What start() announced (owners alive before it) is not ours.
  auto ours = std::find_if(data.events.begin(), data.events.end(), [](const trace::Event& e) {
    return e.kind == EventKind::kNodeCreated && e.node == 11;
  });
  return {ours, data.events.end()};
}

}  // namespace

TEST_CASE("event table: every kind has one row, one typed emitter, and each emitter fills every REQ field") {
  const std::vector<trace::Event> events = every_emitter();
  std::set<EventKind> seen;
  for (const trace::Event& e : events) {
    const trace::EventKindInfo* info = trace::event_kind_info(e.kind);
    REQUIRE_MESSAGE(info != nullptr, "no row for kind ", static_cast<int>(e.kind));
    seen.insert(e.kind);
    // A GIVEN field (a hook's Function) is zero exactly for a hook on no
    // Function (Note [Hooks on no Function]): the comm hook's fire here.
    const bool on_no_function =
        trace::is_hook_event(e.kind) && trace::hook_on_no_function(e.kind, trace::hook_kind_of(e));
    for (const trace::EventFieldInfo& f : info->fields) {
      if (f.required) CHECK_MESSAGE(f.given, info->name, ": ", f.name, " is REQ, so every writer passes it");
      if (!f.required && !(f.given && !on_no_function)) continue;
      CHECK_MESSAGE(trace::slot_value(e, f.slot) != 0, info->name, ": the emitter left ", f.name, " (",
                    f.slot, ") zero");
    }
  }
  // One emitter per row: a kind added to the table without one shows here.
  CHECK(seen.size() == trace::event_table().size());
}

TEST_CASE("event table: a hook event's Function is GIVEN, zero only for hooks on no Function") {
  using trace::HookKind;
  // Every hook event names its Function in `node`: GIVEN (every writer passes
  // it), not REQ, because zero is true for some hooks; no other field is GIVEN.
  for (const trace::EventKindInfo& k : trace::event_table()) {
    for (const trace::EventFieldInfo& f : k.fields) {
      const bool given_not_required = f.given && !f.required;
      CHECK_MESSAGE(given_not_required == (trace::is_hook_event(k.kind) && f.slot == "node"), k.name, ".", f.name);
    }
  }
  // Note [Module hooks in traces], Note [Comm hooks in traces]: which ones.
  for (EventKind e : {EventKind::kHookAdded, EventKind::kHookFired, EventKind::kHookRemoved,
                      EventKind::kHookRemoveFailed}) {
    CAPTURE(trace::to_string(e));
    for (HookKind h : {HookKind::kTensorPre, HookKind::kRetainGrad, HookKind::kPre, HookKind::kPost,
                       HookKind::kPostAccumulate}) {
      CHECK_FALSE(trace::hook_on_no_function(e, h));  // tensor and Node hooks (a Reducer's: kPost)
    }
    CHECK(trace::hook_on_no_function(e, HookKind::kCommHook));
    CHECK(trace::hook_on_no_function(e, HookKind::kModuleForwardPre));
    CHECK(trace::hook_on_no_function(e, HookKind::kModuleForward));
    // A module backward hook fires from the module's BackwardHookFunction Node.
    const bool fire = e == EventKind::kHookFired;
    CHECK(trace::hook_on_no_function(e, HookKind::kModuleBackwardPre) == !fire);
    CHECK(trace::hook_on_no_function(e, HookKind::kModuleBackward) == !fire);
    CHECK(trace::hook_on_no_function(e, HookKind::kModuleLegacyBackward) == !fire);
  }
}

TEST_CASE("event table: rows are consistent with the record and with to_string") {
  std::set<int> values;
  std::set<std::string> names;
  for (const trace::EventKindInfo& k : trace::event_table()) {
    CHECK(values.insert(static_cast<int>(k.kind)).second);
    CHECK(names.insert(std::string(k.name)).second);
    CHECK(trace::to_string(k.kind) == k.name);
    CHECK(trace::event_kind_from_string(k.name) == k.kind);
    CHECK(trace::event_kind_defined(k.kind));
    CHECK(static_cast<int>(k.kind) < static_cast<int>(EventKind::kCount));
    std::set<std::string_view> slots;
    for (const trace::EventFieldInfo& f : k.fields) {
      CHECK_MESSAGE(slots.insert(f.slot).second, k.name, ": two fields in slot ", f.slot);
      if (f.type == "StringId") CHECK_MESSAGE(f.slot == "arg", k.name, ": a string lives in arg");
    }
    CHECK(trace::event_arg_is_string(k.kind) ==
          std::any_of(k.fields.begin(), k.fields.end(), [](const auto& f) { return f.type == "StringId"; }));
  }
  CHECK_FALSE(trace::event_kind_defined(EventKind::kNone));
  CHECK_FALSE(trace::event_kind_defined(static_cast<EventKind>(20)));
}

TEST_CASE("event table: a view reads back what its writer put, in the slots old traces use") {
  const std::vector<trace::Event> events = every_emitter();
  auto first = [&](EventKind kind) {
    for (const trace::Event& e : events) {
      if (e.kind == kind) return e;
    }
    FAIL("no event of kind ", trace::to_string(kind));
    return trace::Event{};
  };
  const auto ready = first(EventKind::kMarkReady).as<ev::MarkReady>();
  CHECK(ready.owner == 41);
  CHECK(ready.node == 11);
  CHECK(ready.param == 5);
  CHECK(ready.bucket == 1);
  // The file layout is the one old readers know (Note [Event record]).
  CHECK(first(EventKind::kMarkReady).arg == 5);
  CHECK(first(EventKind::kMarkReady).actor == 1);
  CHECK(first(EventKind::kMarkedTwice).actor == 5);
  CHECK(first(EventKind::kBucketReady).arg == 1);

  const auto removed = first(EventKind::kHookRemoved).as<ev::HookRemoved>();
  CHECK(removed.hook_kind == trace::HookKind::kPost);
  CHECK(removed.remover == 23);
  CHECK(removed.cause == trace::RemoveCause::kByType);
  CHECK(first(EventKind::kOwnerCreated).actor == trace::kOwnerFromSnapshot);
  CHECK(first(EventKind::kOwnerCreated).as<ev::OwnerCreated>().from_snapshot);
  CHECK(first(EventKind::kBackwardEnd).as<ev::BackwardEnd>().ending == trace::BackwardEnding::kThrew);
  CHECK(first(EventKind::kBackwardEnd).sub == 2);
  // A comm hook's fire: node 0, the bucket in actor and its bytes in arg, as
  // the torch bridge writes them (Note [Comm hooks in traces]).
  trace::Event comm{};
  for (const trace::Event& e : events) {
    if (e.kind == EventKind::kHookFired && e.as<ev::HookFired>().hook_kind == trace::HookKind::kCommHook) comm = e;
  }
  REQUIRE(comm.kind == EventKind::kHookFired);
  CHECK(comm.node == 0);
  CHECK(comm.actor == 2);
  CHECK(comm.arg == 4352);
  CHECK(comm.as<ev::HookFired>().bytes == 4352);
  const auto end = first(EventKind::kCollectiveEnd).as<ev::CollectiveEnd>();
  CHECK(trace::placement_stream(end.placement) == 1);
  CHECK(end.duration_ns == 1234);

  // A round trip through the record keeps every field.
  const ev::CollectiveBegin begin{.owner = 3, .op = trace::CollectiveOp::kAllgather, .collective_id = 9,
                                  .bytes = 1ull << 40, .bucket = trace::kNoBucket};
  const auto back = trace::to_event(begin).as<ev::CollectiveBegin>();
  CHECK(back.owner == 3);
  CHECK(back.op == trace::CollectiveOp::kAllgather);
  CHECK(back.bytes == 1ull << 40);
  CHECK(back.bucket == trace::kNoBucket);
}

TEST_CASE("event table: a corrupt file's value too wide for a field stays out of range") {
  trace::Event e = trace::to_event(ev::ReducerDestroyed{.owner = 1, .policy = trace::DestroyPolicy::kNone});
  e.arg = 0x100;  // would wrap to kByKey if narrowed
  CHECK(static_cast<int>(e.as<ev::ReducerDestroyed>().policy) == 0xff);
  trace::Event m = trace::to_event(ev::MarkedTwice{});
  m.arg = 1ull << 33;  // a string id past 32 bits: no string, not string 0
  CHECK(m.as<ev::MarkedTwice>().param_name == UINT32_MAX);
}

TEST_CASE("event table: a view of another kind stops the program") {
  const trace::Event e = trace::to_event(ev::MarkReady{.owner = 1, .node = 2, .param = 3, .bucket = 4});
  CHECK(e.is<ev::MarkReady>());
  CHECK_FALSE(e.is<ev::BucketReady>());
  std::fflush(nullptr);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    std::signal(SIGABRT, SIG_DFL);  // not doctest's handler: this process is to die
    std::freopen("/dev/null", "w", stderr);
    std::freopen("/dev/null", "w", stdout);
    (void)e.as<ev::BucketReady>();
    _exit(0);
  }
  int status = 0;
  REQUIRE(waitpid(child, &status, 0) == child);
  CHECK(WIFSIGNALED(status));
  CHECK(WTERMSIG(status) == SIGABRT);
}
