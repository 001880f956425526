#include <fmt/format.h>

#include <map>

#include "analysis/state.h"
#include "export/export.h"

namespace hookscope::exporters {

namespace {
// Note [Untrusted text]: valid UTF-8, no control characters, quotes escaped.
std::string dot_escape(const std::string& s) {
  std::string out;
  for (char c : terminal_safe(s)) {
    if (c == '\n' || c == '\t') c = ' ';
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}
}  // namespace

void write_dot(const analysis::Model& m, size_t at, std::FILE* out) {
  const analysis::State st = m.state_at(at);
  std::map<analysis::OwnerIndex, bool> live;
  for (const auto& o : st.owners) live[o.owner] = o.live;
  fmt::print(out, "digraph autograd {{\n  rankdir=TB;\n  node [shape=box, fontname=\"DejaVu Sans\", fontsize=10];\n");
  fmt::print(out, "  label=\"autograd graph after event {} of {}\";\n", at, m.num_events());
  std::map<analysis::FunctionIndex, bool> shown;
  for (const auto& f : st.functions) {
    shown[f.function] = true;
    const auto& info = m.functions()[f.function];
    std::string label = dot_escape(m.function_name(f.function)) + fmt::format("\\n#{} (rank {})", info.id, info.rank);
    bool alarm = false;
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      for (const auto& h : f.hooks[static_cast<size_t>(k)]) {
        const auto& hi = m.hooks()[h.hook];
        const bool owner_live = hi.owner == analysis::kNoIndex || live[hi.owner];
        alarm = alarm || !owner_live;
        label += fmt::format("\\n{} hook key {} by {}{}, fired {}x",
                             trace::to_string(static_cast<trace::HookKind>(k)), hi.key,
                             dot_escape(hi.owner == analysis::kNoIndex ? "?" : m.owner_name(hi.owner)),
                             owner_live ? "" : " (DESTROYED)", h.fires);
      }
    }
    fmt::print(out, "  f{} [label=\"{}\"{}];\n", f.function, label,
               alarm ? ", color=red, penwidth=2, fontcolor=red" : "");
  }
  for (const auto& e : m.edges()) {
    if (shown.count(e.from) && shown.count(e.to)) fmt::print(out, "  f{} -> f{};\n", e.from, e.to);
  }
  fmt::print(out, "}}\n");
}

}  // namespace hookscope::exporters
