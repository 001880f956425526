// The module-api scenario (docs/semantics.md, Scenario): what a user reads
// in its summary and finds in its trace.
#include <doctest/doctest.h>

#include <set>

#include "scenarios/module_api.h"
#include "trace/recorder.h"
#include "testing/test_util.h"

using namespace hookscope;

TEST_CASE("module-api scenario: tuple grads with zeros and None, the legacy hook's wrong Node, once-per-backward multi-grad hooks") {
  trace::MemoryRecorder rec;
  rec.start();
  scenarios::ModuleApiOptions o;
  o.steps = 3;
  const auto r = scenarios::run_module_api(o);
  rec.finish();
  REQUIRE(r.losses.size() == 3);
  CHECK(r.losses.back() < r.losses.front());
  CHECK(r.gate_backward_calls == 3);
  CHECK(r.gate_grad_input == "(T, zeros, None)");
  CHECK(r.legacy_calls == 3);
  CHECK(r.legacy_grad_input_node == "AddmmBackward0");
  CHECK(r.legacy_grad_inputs == 3);
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].find("non-full backward hook") != std::string::npos);
  CHECK(r.multi_all_calls == 3);
  CHECK(r.multi_any_calls == 3);
  CHECK(r.always_call_runs == 1);
  // encoder, gate, head per step; not the broken module: its forward threw
  // and the global hook is not always_call.
  CHECK(r.global_forward_calls == 3 * 3);
  // Every hook kind of the story is in the trace, added and fired.
  std::set<uint8_t> added, fired;
  for (const auto& e : testing::recorded(rec)) {
    if (e.kind == trace::EventKind::kHookAdded) added.insert(e.sub);
    if (e.kind == trace::EventKind::kHookFired) fired.insert(e.sub);
  }
  for (auto k : {trace::HookKind::kModuleForwardPre, trace::HookKind::kModuleForward,
                 trace::HookKind::kModuleBackward, trace::HookKind::kModuleLegacyBackward,
                 trace::HookKind::kTensorPre}) {
    CAPTURE(static_cast<int>(k));
    CHECK(added.count(static_cast<uint8_t>(k)));
    CHECK(fired.count(static_cast<uint8_t>(k)));
  }
  const std::string text = scenarios::format_result(o, r);
  CHECK(text.find("grad_input (T, zeros, None)") != std::string::npos);
  CHECK(text.find("on AddmmBackward0, 3 grad_input(s)") != std::string::npos);
}
