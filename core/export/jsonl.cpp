#include <fmt/format.h>

#include "export/export.h"

namespace hookscope::exporters {

using trace::EventKind;

std::string jsonl_line(const analysis::Model& m, size_t i) {
  std::string line;
  {
    const trace::Event e = m.event(i);
    const uint32_t s = m.source(i);
    line = fmt::format(R"({{"index":{},"t_ns":{},"rank":{},"thread":{},"source":{},"kind":"{}")", i,
                       m.time_ns(i), e.rank, e.thread, s, trace::to_string(e.kind));
    if (e.node) {
      const auto f = m.find_function(s, e.node);
      line += fmt::format(R"(,"node":{},"function":"{}")", e.node,
                          json_escape(f == analysis::kNoIndex ? fmt::format("Function #{}", e.node)
                                                              : m.function_name(f)));
    }
    if (trace::is_hook_event(e.kind)) {
      line += fmt::format(R"(,"key":{},"hook_kind":"{}")", e.key, trace::to_string(trace::shown_hook_kind(e)));
    } else if (e.key) {
      line += fmt::format(R"(,"key":{})", e.key);
    }
    if (e.owner) {
      const auto o = m.find_owner(s, e.owner);
      line += fmt::format(R"(,"owner":{},"owner_label":"{}")", e.owner,
                          json_escape(o == analysis::kNoIndex ? "?" : m.owner_name(o)));
    }
    if (e.kind == EventKind::kHookRemoved) {
      line += fmt::format(R"(,"cause":"{}")", trace::to_string(e.as<trace::ev::HookRemoved>().cause));
    }
    if (e.kind == EventKind::kHookFired && trace::hook_kind_of(e) == trace::HookKind::kCommHook) {
      const auto fire = e.as<trace::ev::HookFired>();  // bucket 0 too, which "actor" leaves out
      line += fmt::format(R"(,"bucket":{},"bytes":{})", fire.bucket, fire.bytes);
    }
    // Beside the named keys, a line keeps the record's raw arg/actor/sub (the
    // JSON Lines format scripts and tests read); the one exporter that may.
    if (const uint32_t by = trace::remover_of(e)) {
      const auto o = m.find_owner(s, by);
      line += fmt::format(R"(,"by":{},"by_label":"{}")", by,
                          json_escape(o == analysis::kNoIndex ? "?" : m.owner_name(o)));
    } else if (e.actor) {
      line += fmt::format(R"(,"actor":{})", e.actor);
    }
    if (analysis::event_arg_is_string(e.kind)) {
      line += fmt::format(R"(,"text":"{}")", json_escape(m.str(static_cast<uint32_t>(trace::string_arg(e)))));
    } else if (e.arg && e.kind != EventKind::kHookRemoved) {
      line += fmt::format(R"(,"arg":{})", e.arg);
    }
    line += fmt::format(R"(,"sub":{},"describe":"{}"}})", e.sub, json_escape(m.describe(i)));
  }
  return line;
}

void write_jsonl(const analysis::Model& m, std::FILE* out) {
  for (size_t i = 0; i < m.num_events(); ++i) {
    std::string line = jsonl_line(m, i);
    line += '\n';
    std::fwrite(line.data(), 1, line.size(), out);
  }
}

}  // namespace hookscope::exporters
