// Writes the trace the GUI frame-time figure is measured on (issue 6 §8,
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
#include "trace/strings.h"
#include "trace/writer.h"

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
  // The writer ships the process's string table: move the trace's ids into it.
  std::vector<uint32_t> global(data.strings.size());
  for (size_t i = 0; i < data.strings.size(); ++i) global[i] = trace::intern(data.strings[i]);
  for (auto& e : data.events) {
    if (analysis::event_arg_is_string(e.kind) && e.arg < global.size()) e.arg = global[e.arg];
  }
  trace::TraceHeader header;
  header.scenario = "make_gui_trace " + std::to_string(functions) + " Functions";
  trace::TraceFileWriter writer(out, header);
  for (size_t i = 0; i < data.events.size(); i += trace::kChunkEvents) {
    auto chunk = std::make_unique<trace::Chunk>();
    chunk->count = static_cast<uint32_t>(std::min<size_t>(trace::kChunkEvents, data.events.size() - i));
    std::copy_n(data.events.begin() + static_cast<long>(i), chunk->count, chunk->events);
    writer.on_chunk(std::move(chunk));
  }
  writer.close();
  std::printf("wrote %s: %d Functions, %zu events, %llu bytes\n", out.c_str(), functions, data.events.size(),
              static_cast<unsigned long long>(writer.stats().bytes_written));
  return 0;
}
