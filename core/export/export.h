#pragma once
// Exporters of a loaded model: Chrome Trace Event JSON (opens in Perfetto and
// chrome://tracing), JSON Lines (one self-describing event per line), and
// Graphviz DOT of the graph with every Function's hooks at one event.

#include <cstddef>
#include <cstdio>
#include <string>
#include <string_view>

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

// One event as a JSON Lines record (no newline): the format of `export
// --format jsonl` and `events --format jsonl`.
std::string jsonl_line(const analysis::Model& model, size_t index);

// Note [Untrusted text]
// ~~~~~~~~~~~~~~~~~~~~~
// Strings in a trace (Function names, labels, descriptions) are bytes from a
// file: "UTF-8 by convention, not checked". Everything hookscope prints goes
// through one of these, so JSON output is always valid UTF-8 (invalid bytes
// become U+FFFD) and terminal output never carries escape sequences
// (control characters are shown as \xNN). nlohmann::json dumps use
// error_handler_t::replace for the same reason.
// Escapes `s` for a JSON string body (no surrounding quotes); valid UTF-8.
std::string json_escape(std::string_view s);
// `s` with invalid UTF-8 replaced by U+FFFD.
std::string valid_utf8(std::string_view s);
// `s` safe to print on a terminal: valid UTF-8, controls but \n and \t as \xNN.
std::string terminal_safe(std::string_view s);

}  // namespace hookscope::exporters
