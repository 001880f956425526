// Helpers the panels share (app/panel_common.h) and the App's shared
// widgets: "#i" event links, owner labels with their colour, selecting.
#include "panel_common.h"

#include <cstdio>

#include <fmt/format.h>

#include "analysis/owner_status.h"
#include "app.h"
#include "render/layout/colors.h"

namespace hookscope::app {

using analysis::kNoIndex;
using render::palette;

std::string count_of(size_t n, const char* noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

std::string key_text(uint64_t key) { return trace::format_hook_key(key); }

const char* kind_name(int kind) {
  if (kind < 0 || kind >= trace::kNumHookKinds) return "?";
  return trace::to_string(static_cast<trace::HookKind>(kind)).data();  // literals: NUL-terminated
}

size_t drawable_length(std::string_view text) {
  if (text.size() <= kMaxDrawnBytes) return text.size();
  size_t n = kMaxDrawnBytes;
  while (n > 0 && (static_cast<unsigned char>(text[n]) & 0xC0) == 0x80) --n;  // not inside a character
  return n;
}

std::string drawable(std::string_view text) {
  const size_t n = drawable_length(text);
  if (n == text.size()) return std::string(text);
  return fmt::format("{}\xe2\x80\xa6 ({} more bytes)", text.substr(0, n), text.size() - n);
}

namespace {
PendingNotes& notes() {
  static PendingNotes n;
  return n;
}
}  // namespace

const PendingNotes& pending_notes() { return notes(); }

const analysis::State* full_state_or_pending(const Session& session) {
  if (const analysis::State* st = session.full_state()) return st;
  ImGui::TextDisabled("computing the state at #%zu\xe2\x80\xa6", session.current());
  ++notes().drawn;
  notes().last_at = session.current();
  return nullptr;
}

uint32_t severity_color(render::Severity s) {
  const render::Palette& p = palette();
  switch (s) {
    case render::Severity::kFailure: return p.alarm;
    case render::Severity::kStaleFire: return p.stale;
    case render::Severity::kDestruction: return p.destroyed;
    case render::Severity::kFailedRemoval: return p.warning;
    case render::Severity::kLifecycle: return p.running;
    case render::Severity::kNone: break;
  }
  return 0;
}

// ---------------------------------------------------------------- shared helpers

bool App::event_link(size_t event) {
  const analysis::Model* m = session_.model();
  char text[24];
  std::snprintf(text, sizeof(text), "#%zu", event);
  const bool here = event == session_.current();
  ImGui::PushStyleColor(ImGuiCol_Text, col(here ? palette().selected : palette().text_label));
  ImGui::TextUnformatted(text);
  ImGui::PopStyleColor();
  if (!m || event >= m->num_events() || !ImGui::IsItemHovered()) return false;
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  ImGui::GetWindowDrawList()->AddLine(ImVec2(a.x, b.y), b, palette().text_label);
  ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
  ImGui::BeginTooltip();
  ImGui::TextUnformatted(m->describe(event).c_str());
  ImGui::TextDisabled(here ? "the current event" : "click: go to this event");
  ImGui::EndTooltip();
  if (!ImGui::IsMouseClicked(ImGuiMouseButton_Left)) return false;
  jump_to(event);
  return true;
}

void App::owner_label(analysis::OwnerIndex owner, bool dead) {
  const analysis::Model* m = session_.model();
  if (!m || owner >= m->owners().size()) {
    ImGui::TextDisabled("no owner");
    return;
  }
  const float h = ImGui::GetTextLineHeight();
  const float side = h * 0.7f;
  const ImVec2 p = ImGui::GetCursorScreenPos();
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 a(p.x + 1.f, p.y + (h - side) * 0.5f), b(a.x + side, a.y + side);
  // Note [Lingering owners]: replaced but alive is an alarm of its own colour.
  const bool lingering = !dead && analysis::owner_status(*m, owner, static_cast<analysis::EventIndex>(
                                                                       session_.current())) ==
                                      analysis::OwnerStatus::kLingering;
  const uint32_t ring = dead ? palette().alarm : palette().lingering;
  if (dead || lingering) dl->AddRectFilled(ImVec2(a.x - 1.5f, a.y - 1.5f), ImVec2(b.x + 1.5f, b.y + 1.5f), ring);
  dl->AddRectFilled(a, b, render::owner_color(*session_.model(), owner));
  if (owner == session_.selected_owner()) dl->AddRect(ImVec2(a.x - 1.f, a.y - 1.f), ImVec2(b.x + 1.f, b.y + 1.f), IM_COL32_WHITE);
  ImGui::Dummy(ImVec2(side + 3.f, h));
  ImGui::SameLine(0.f, 2.f);
  const std::string name = m->owner_name(owner);
  if (dead || lingering) ImGui::PushStyleColor(ImGuiCol_Text, col(ring));
  ImGui::TextUnformatted(name.c_str());
  if (dead || lingering) ImGui::PopStyleColor();
  if (ImGui::IsItemHovered()) {
    ImGui::SetMouseCursor(ImGuiMouseCursor_Hand);
    const analysis::OwnerInfo& o = m->owners()[owner];
    ImGui::SetTooltip("%s: %s, rank %u, owner id %u\nclick: select it (its hooks light up in the graph)",
                      name.c_str(), std::string(trace::to_string(o.kind)).c_str(),
                      static_cast<unsigned>(o.rank), o.id);
    if (ImGui::IsMouseClicked(ImGuiMouseButton_Left)) select_owner(owner);
  }
}

void App::select_owner(analysis::OwnerIndex owner) {
  session_.select_owner(owner);
}

void App::select_function(analysis::FunctionIndex function) {
  session_.select_function(function);
  if (function != kNoIndex) graph_.focus(function);
}

bool begin_trace_panel(const char* title, bool* open, const analysis::Model* model) {
  if (!ImGui::Begin(title, open)) {
    ImGui::End();
    return false;
  }
  if (!model || model->num_events() == 0) {
    ImGui::TextDisabled("No trace open.");
    ImGui::End();
    return false;
  }
  return true;
}

}  // namespace hookscope::app
