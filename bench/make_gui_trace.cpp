// Writes the trace the GUI frame-time figure is measured on (issue 6 §8): a
// graph of N Functions (transformer blocks, render/sample_graphs.h) that
// stay alive, with Reducer post hooks on every AccumulateGrad (one Reducer
// destroyed: alarms) and probes, followed by hook fires until the trace
// holds E events. Then:
//   xvfb-run -a -s "-screen 0 1600x1000x24" build/app/hookscope big.hstrace --bench-frames 300
//   bench/gui_frames.sh runs both and repeats.
//
//   make_gui_trace OUT.hstrace [FUNCTIONS=20000] [EVENTS=10000000]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "render/sample_graphs.h"
#include "testing/write_trace.h"

using namespace hookscope;

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_gui_trace OUT.hstrace [FUNCTIONS=20000] [EVENTS=10000000]\n");
    return 2;
  }
  const std::string out = argv[1];
  const int functions = argc > 2 ? std::atoi(argv[2]) : 20000;
  const size_t events = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 10'000'000;
  if (functions < 10 || events < 1000) {
    std::fprintf(stderr, "make_gui_trace: FUNCTIONS >= 10 and EVENTS >= 1000, please\n");
    return 2;
  }
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
  const size_t num_events = data.events.size();
  const trace::WriterStats stats =
      testing::write_trace_file(std::move(data), out, "make_gui_trace " + std::to_string(functions) + " Functions");
  std::printf("wrote %s: %d Functions, %zu events, %llu bytes\n", out.c_str(), functions, num_events,
              static_cast<unsigned long long>(stats.bytes_written));
  return 0;
}
