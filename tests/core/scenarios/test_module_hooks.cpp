// The module-hooks scenario: PyTorch #25723 recorded as a trace.
#include <doctest/doctest.h>

#include <map>

#include "scenarios/module_hooks.h"
#include "trace/recorder.h"
#include "testing/test_util.h"

using namespace hookscope;

TEST_CASE("module-hooks scenario: the removed full backward hook fires once after its removal, in the trace too") {
  scenarios::ModuleHooksOptions o;
  o.steps = 4;
  trace::MemoryRecorder rec;
  rec.start();
  auto r = scenarios::run_module_hooks(o);
  rec.finish();
  CHECK(r.losses.size() == 4);
  CHECK(r.losses.back() < r.losses.front());
  CHECK(r.backward_hook_calls == 2);   // steps 0 and 1
  CHECK(r.calls_after_removal == 1);   // step 1, after handle.remove()
  CHECK(r.forward_hook_calls == 4);
  CHECK(r.backward_pre_hook_calls == 4);
  CHECK(r.saved_tensors_packed > 0);
  CHECK(r.saved_tensors_unpacked == r.saved_tensors_packed);

  // In the events: the module backward hook's key is removed, then fires once
  // more (what analysis reports as a fire after removal), then never again.
  const auto events = testing::recorded(rec);
  uint64_t key = 0;
  for (const auto& e : events) {
    if (e.kind == trace::EventKind::kHookAdded &&
        e.sub == static_cast<uint8_t>(trace::HookKind::kModuleBackward)) {
      key = e.key;
      CHECK(e.node == 0);
    }
  }
  REQUIRE(key != 0);
  int fires_before = 0, fires_after = 0;
  bool removed = false;
  for (const auto& e : events) {
    if (e.key != key) continue;
    if (e.kind == trace::EventKind::kHookRemoved) removed = true;
    if (e.kind == trace::EventKind::kHookFired) {
      CHECK(e.node != 0);  // the BackwardHookFunction Node it ran through
      ++(removed ? fires_after : fires_before);
    }
  }
  CHECK(removed);
  CHECK(fires_before == 1);
  CHECK(fires_after == 1);
  int packed = 0, unpacked = 0;
  for (const auto& e : events) {
    packed += e.kind == trace::EventKind::kSavedTensorPacked;
    unpacked += e.kind == trace::EventKind::kSavedTensorUnpacked;
  }
  CHECK(packed == r.saved_tensors_packed);
  CHECK(unpacked == r.saved_tensors_unpacked);
  CHECK_THROWS_WITH(scenarios::run_module_hooks({1, 0, Device::kCPU}), doctest::Contains("--steps"));
}
