#pragma once
// What the panels share (issue 11: one home each): colours as ImGui wants
// them, hook keys and kinds as text, the Events rows' severity colours. The
// App's shared widgets (event links, owner labels, selecting) are App
// members defined in panel_common.cpp.

#include <imgui.h>

#include <cstdint>
#include <string>

#include "render/story.h"

namespace hookscope::app {

inline ImVec4 col(uint32_t packed) { return ImGui::ColorConvertU32ToFloat4(packed); }
// Note [Hook keys in text].
std::string key_text(uint64_t key);
// trace::to_string(HookKind) as a C string, "?" out of range.
const char* kind_name(int kind);
// The colour of an event's severity (Note [Run story]); 0 for none.
uint32_t severity_color(render::Severity s);

}  // namespace hookscope::app
