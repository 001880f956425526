// Writes the trace the GUI frame-time figure is measured on (docs/performance.md;
// bench/gui_trace.h says what is in it). Then:
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
#include "gui_trace.h"
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
  trace::TraceData data = bench::make_gui_trace_data(functions, events);
  const size_t num_events = data.events.size();
  const trace::WriterStats stats =
      testing::write_trace_file(std::move(data), out, "make_gui_trace " + std::to_string(functions) + " Functions");
  std::printf("wrote %s: %d Functions, %zu events, %llu bytes\n", out.c_str(), functions, num_events,
              static_cast<unsigned long long>(stats.bytes_written));
  return 0;
}
