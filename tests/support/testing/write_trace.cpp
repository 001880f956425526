#include "testing/write_trace.h"

#include <algorithm>
#include <memory>
#include <vector>

#include "analysis/model.h"
#include "trace/strings.h"

namespace hookscope::testing {

trace::WriterStats write_trace_file(trace::TraceData data, const std::string& path, const std::string& scenario) {
  std::vector<uint32_t> global(data.strings.size());
  for (size_t i = 0; i < data.strings.size(); ++i) global[i] = trace::intern(data.strings[i]);
  for (auto& e : data.events) {
    if (analysis::event_arg_is_string(e.kind) && e.arg < global.size()) e.arg = global[e.arg];
  }
  trace::TraceHeader header;
  header.scenario = scenario;
  trace::TraceFileWriter writer(path, header);
  for (size_t i = 0; i < data.events.size(); i += trace::kChunkEvents) {
    auto chunk = std::make_unique<trace::Chunk>();
    chunk->count = static_cast<uint32_t>(std::min<size_t>(trace::kChunkEvents, data.events.size() - i));
    std::copy_n(data.events.begin() + static_cast<long>(i), chunk->count, chunk->events);
    writer.on_chunk(std::move(chunk));
  }
  writer.close();
  return writer.stats();
}

}  // namespace hookscope::testing
