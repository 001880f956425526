#pragma once
// The models the graph view tests draw (pending, indexed, alarms, box
// sizes): one recording of each per test process, shared by every file that
// includes this; and the view opened on one, settled.

#include "analysis/model.h"
#include "render/draw/graph_view.h"
#include "scenarios/autograd_demo.h"
#include "trace/recorder.h"
#include "test_util.h"

namespace hookscope::testing {

// A policy-none recovery run (failure, rebuild, stale fires).
inline const analysis::Model& graph_recovery_model() {
  static const analysis::Model m(record_recovery_trace(), analysis::ModelOptions{256, 8.0});
  return m;
}

// Leaf hooks that move to the tensor between steps (ghost boxes).
inline const analysis::Model& graph_autograd_model() {
  static const analysis::Model m = [] {
    trace::MemoryRecorder rec;
    rec.start();
    scenarios::run_autograd_demo({6, 0});
    return analysis::Model(rec.take_trace(), analysis::ModelOptions{64, 64.0});
  }();
  return m;
}

// `view` on `model` with its layout and LiveIndex done: what the tests draw on.
inline void open_settled(render::GraphView& view, const analysis::Model& model, bool compact) {
  view.set_model(&model);
  view.set_compact(compact);
  view.wait_for_layout();
  view.wait_for_live_index();
}

}  // namespace hookscope::testing
