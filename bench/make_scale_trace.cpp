// Writes the issue-16 scale trace (item 4): a graph of N live Functions
// (transformer blocks, tests/support/render/sample_graphs.h) with Reducer and
// probe hooks, then hook fires until the trace holds E events. Memory stays
// capped: only the graph is built in memory; the fires are made one chunk at
// a time and handed to the writer, so 100M events need no 4.8 GB array.
//   make_scale_trace OUT.hstrace [FUNCTIONS=1000000] [EVENTS=100000000]
// bench/scale_gui.sh makes it and measures the GUI opening it.
#include <cstdio>
#include <exception>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "render/sample_graphs.h"
#include "trace/strings.h"
#include "trace/writer.h"

using namespace hookscope;

namespace {

int run(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: make_scale_trace OUT.hstrace [FUNCTIONS=1000000] [EVENTS=100000000]\n");
    return 2;
  }
  const std::string out = argv[1];
  const long functions = argc > 2 ? std::atol(argv[2]) : 1'000'000;
  const unsigned long long events = argc > 3 ? std::strtoull(argv[3], nullptr, 10) : 100'000'000ull;
  if (functions < 10 || functions > 50'000'000 || events < 1000) {
    std::fprintf(stderr, "make_scale_trace: 10 <= FUNCTIONS <= 50000000 and EVENTS >= 1000, please\n");
    return 2;
  }
  trace::TraceData data =
      render::make_sample_trace(render::make_transformer_graph(static_cast<int>(functions)));
  // The writer ships the process's string table: move the trace's ids into it.
  std::vector<uint32_t> global(data.strings.size());
  for (size_t i = 0; i < data.strings.size(); ++i) global[i] = trace::intern(data.strings[i]);
  std::vector<trace::Event> hooks;
  for (auto& e : data.events) {
    if (analysis::event_arg_is_string(e.kind) && e.arg < global.size()) e.arg = global[e.arg];
    if (e.kind == trace::EventKind::kHookAdded) hooks.push_back(e);
  }
  trace::TraceHeader header;
  header.scenario = "make_scale_trace " + std::to_string(functions) + " Functions";
  trace::TraceFileWriter writer(out, header);
  uint64_t written = 0;
  auto ship = [&](auto&& fill) {
    auto chunk = std::make_unique<trace::Chunk>();
    chunk->count = static_cast<uint32_t>(fill(chunk->events));
    written += chunk->count;
    writer.on_chunk(std::move(chunk));
  };
  for (size_t i = 0; i < data.events.size(); i += trace::kChunkEvents) {
    ship([&](trace::Event* to) {
      const size_t n = std::min<size_t>(trace::kChunkEvents, data.events.size() - i);
      std::copy_n(data.events.begin() + static_cast<long>(i), n, to);
      return n;
    });
  }
  // Training goes on: the hooks fire in turn, a few µs apart.
  uint64_t t = data.events.back().t_ns;
  const size_t graph_events = data.events.size();
  data = {};
  size_t next = 0;
  while (written < events && !hooks.empty()) {
    ship([&](trace::Event* to) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(trace::kChunkEvents, events - written));
      for (size_t k = 0; k < n; ++k, ++next) {
        trace::Event fire = hooks[next % hooks.size()];
        fire.kind = trace::EventKind::kHookFired;
        fire.actor = 0;
        t += 1500 + (next * 7919) % 3000;
        fire.t_ns = t;
        to[k] = fire;
      }
      return n;
    });
  }
  writer.close();
  std::printf("wrote %s: %ld Functions, %zu graph events, %llu events, %llu bytes\n", out.c_str(), functions,
              graph_events, static_cast<unsigned long long>(written),
              static_cast<unsigned long long>(writer.stats().bytes_written));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {  // a directory that does not exist, a full disk
    std::fprintf(stderr, "make_scale_trace: %s\n", e.what());
    return 1;
  }
}
