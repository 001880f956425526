// Prints the table of event kinds (trace/event_table.h, Note [Typed events])
// as JSON for tests/check_bridge_emits.py, which checks the torch bridge's
// _C.emit calls against it without building the bridge or importing torch.
#include <cstdio>
#include <string>

#include "trace/event.h"

int main() {
  using namespace hookscope::trace;
  std::string out = "[";
  for (const EventKindInfo& k : event_table()) {
    if (out.size() > 1) out += ",";
    out += "\n{\"name\":\"" + std::string(k.name) + "\",\"view\":\"" + std::string(k.view) +
           "\",\"value\":" + std::to_string(static_cast<int>(k.kind)) + ",\"fields\":[";
    for (size_t i = 0; i < k.fields.size(); ++i) {
      const EventFieldInfo& f = k.fields[i];
      out += std::string(i ? "," : "") + "{\"name\":\"" + std::string(f.name) + "\",\"type\":\"" +
             std::string(f.type) + "\",\"slot\":\"" + std::string(f.slot) +
             "\",\"required\":" + (f.required ? "true" : "false") +
             ",\"given\":" + (f.given ? "true" : "false") + "}";
    }
    out += "]}";
  }
  out += "\n]\n";
  std::fputs(out.c_str(), stdout);
  return 0;
}
