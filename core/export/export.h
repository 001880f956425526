#pragma once
// Exporters of a loaded model: Chrome Trace Event JSON (opens in Perfetto and
// chrome://tracing), JSON Lines (one self-describing event per line), and
// Graphviz DOT of the graph with every Function's hooks at one event.

#include <cstddef>
#include <cstdio>
#include <string>

#include "analysis/model.h"

namespace hookscope::exporters {

// Note [Chrome trace export]
// pid = rank, tid = the recording thread. Complete events ("X") for backward
// passes, Function applies and collectives; instant events for hook add,
// remove, fire, failed removal and the DDP and recovery milestones; flow
// arrows from the hook fire that completed a bucket, through the bucket
// becoming ready, to the collective that reduced it; process_name and
// thread_name metadata. Timestamps in microseconds from the first event.
void write_chrome_trace(const analysis::Model& model, std::FILE* out);
void write_jsonl(const analysis::Model& model, std::FILE* out);
// The graph of Functions alive right after event `at`, each with its hooks
// (owner, key); hooks whose owner is destroyed are drawn in red.
void write_dot(const analysis::Model& model, size_t at, std::FILE* out);

// Escapes `s` for a JSON string body (no surrounding quotes).
std::string json_escape(const std::string& s);

}  // namespace hookscope::exporters
