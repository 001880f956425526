#pragma once
// The trace the GUI figures are measured on (frame time, playback): a
// graph of N Functions (transformer blocks, render/sample_graphs.h) that stay
// alive, with Reducer post hooks on every AccumulateGrad (one Reducer
// destroyed: alarms) and probes, followed by hook fires until the trace holds
// E events. bench/make_gui_trace.cpp writes it to a file; bench_playback
// seeks in it in memory.

#include <cstddef>
#include <vector>

#include "render/sample_graphs.h"
#include "trace/trace_data.h"

namespace hookscope::bench {

inline trace::TraceData make_gui_trace_data(int functions, size_t events) {
  trace::TraceData data = render::make_sample_trace(render::make_transformer_graph(functions));
  // Training goes on: every hook fires in turn, a few µs apart.
  std::vector<trace::Event> hooks;
  for (const auto& e : data.events) {
    if (e.kind == trace::EventKind::kHookAdded) hooks.push_back(e);
  }
  uint64_t t = data.events.back().t_ns;
  for (size_t i = 0; data.events.size() < events && !hooks.empty(); ++i) {
    trace::Event fire = hooks[i % hooks.size()];
    fire.kind = trace::EventKind::kHookFired;
    fire.actor = 0;
    t += 1500 + (i * 7919) % 3000;
    fire.t_ns = t;
    data.events.push_back(fire);
  }
  return data;
}

}  // namespace hookscope::bench
