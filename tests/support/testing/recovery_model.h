#pragma once
// What the app's logic tests (tests/app/test_session.cpp,
// test_event_filter.cpp) step through and filter: a policy-none recovery
// (two ranks, one failure, DDP rebuilt, the old Reducer's hooks left),
// recorded once per test process; and the events a brute-force scan selects,
// the answer an index or a filter must give.

#include <functional>
#include <memory>
#include <vector>

#include "analysis/model.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"

namespace hookscope::testing {

inline const std::shared_ptr<const analysis::Model>& shared_recovery() {
  static const auto model = [] {
    scenarios::DdpScenarioOptions o;
    o.name = "recovery";
    o.policy = trace::DestroyPolicy::kNone;
    o.steps = 5;
    o.recoveries = 1;
    auto data = record_trace([&] { scenarios::run_ddp_scenario(o); });
    return std::make_shared<const analysis::Model>(std::move(data));
  }();
  return model;
}

// The events of `m` for which `pred(index)` holds, in order.
inline std::vector<size_t> brute_force(const analysis::Model& m, const std::function<bool(size_t)>& pred) {
  std::vector<size_t> out;
  for (size_t i = 0; i < m.num_events(); ++i) {
    if (pred(i)) out.push_back(i);
  }
  return out;
}

}  // namespace hookscope::testing
