#pragma once
// What the panels share (one home each, so they agree): colours as ImGui wants
// them, hook keys and kinds as text, the Events rows' severity colours. The
// App's shared widgets (event links, owner labels, selecting) are App
// members defined in panel_common.cpp.

#include <imgui.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "analysis/model.h"
#include "analysis/state.h"

#include "render/layout/story.h"

namespace hookscope::app {

inline ImVec4 col(uint32_t packed) { return ImGui::ColorConvertU32ToFloat4(packed); }
// Event i's time since the first event, in ms. In doubles: a hostile trace's
// times span more than int64 (signed overflow, found by the GUI fuzzer).
inline double ms_since_first(const analysis::Model& m, size_t i) {
  return (static_cast<double>(m.time_ns(i)) - static_cast<double>(m.time_ns(0))) / 1e6;
}
// "1 bucket", "3 buckets": a count and its noun, plural when not one.
std::string count_of(size_t n, const char* noun);
// The Diagnostics panel's line when nothing was found: which hooks are
// still attached at the trace's last event, per owner (panel_diagnostics.cpp).
std::string attached_at_end(const analysis::Model& m);
// Note [Hook keys in text].
std::string key_text(uint64_t key);
// trace::to_string(HookKind) as a C string, "?" out of range.
const char* kind_name(int kind);

// Note [Drawable text]
// ~~~~~~~~~~~~~~~~~~~~
// Text from a trace (labels, names, what explain says about them) can be
// megabytes long, and ImGui 1.86 reserves 4 vertices per byte of what it
// draws while a window's draw list indexes 65,536 with 16-bit indices: a
// 1 MB module label in the Why panel aborted the app ("Too many vertices in
// ImDrawList using 16-bit indices"). Panels draw such text through
// drawable(): at most kMaxDrawnBytes bytes, cut at a UTF-8 boundary, with
// how much was left out. The data keeps the whole text (the CLI prints it).
constexpr size_t kMaxDrawnBytes = 1024;
// Bytes of `text` to draw: all of it up to kMaxDrawnBytes, else a UTF-8 boundary below.
size_t drawable_length(std::string_view text);
// `text`, or its first drawable_length() bytes and "... (N more bytes)".
std::string drawable(std::string_view text);

// Begins a panel window that needs a trace: false (the window already ended)
// when it is collapsed or no trace with events is open, which it then says.
bool begin_trace_panel(const char* title, bool* open, const analysis::Model* model);
class Session;
// The full State at the session's current event, or nullptr after drawing
// "computing the state at #N..." in its place (Note [Lazy seeks in the GUI]):
// a panel never shows the State of another event.
const analysis::State* full_state_or_pending(const Session& session);
// What full_state_or_pending() said last (tests): how many times it drew
// "computing..." so far, and for which event the last time.
struct PendingNotes {
  size_t drawn = 0;
  size_t last_at = 0;
};
const PendingNotes& pending_notes();
// The colour of an event's severity (Note [Run story]); 0 for none.
uint32_t severity_color(render::Severity s);

}  // namespace hookscope::app
