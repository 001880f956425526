#pragma once
// Writes a trace made in memory (analysis::TraceBuilder, sample_graphs'
// make_sample_trace) to a .hstrace file, as the benchmarks' trace generators
// (bench/make_*_trace.cpp) and tests need it.

#include <string>

#include "trace/trace_data.h"
#include "trace/writer.h"

namespace hookscope::testing {

// `data`'s string ids are its own table's; the writer ships the process's
// string table, so they are interned there first. `scenario` goes into the
// header. Returns what the writer wrote (bytes_written, ...).
trace::WriterStats write_trace_file(trace::TraceData data, const std::string& path, const std::string& scenario);

}  // namespace hookscope::testing
