// The Help window (F1): every key and what each panel shows; and the
// Go to event dialog (Ctrl+G).
#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "app.h"

namespace hookscope::app {

namespace {

// A row of the Help window: what to press (or which panel), what it does.
struct HelpRow {
  const char* name;
  const char* what;
};
constexpr HelpRow kKeys[] = {
    {"Left / Right", "previous / next event"},
    {"Ctrl+Left / Ctrl+Right", "previous / next event of the step kind (Timeline's \"step kind\"; by default the current event's kind)"},
    {"PgUp / PgDn", "previous / next Reducer lifecycle event: constructed, failure, destroyed, DDP rebuilt"},
    {"Home / End", "first / last event"},
    {"Ctrl+G", "go to event number"},
    {"Ctrl+B", "bookmark the current event (again: remove it)"},
    {"Ctrl+1 .. Ctrl+9", "jump to bookmark 1..9 (in event order)"},
    {"Space", "play / pause (speed: the Timeline's slider)"},
    {"Ctrl+F", "filter / search the Events table; Enter jumps to the next match"},
    {"Ctrl+O / Ctrl+Shift+O", "open traces / open a second trace to compare"},
    {"F1", "this window"},
    {"Ctrl+Q", "quit"},
    {"Graph: drag / wheel", "pan / zoom; double-click: fit; click: select a Function or a hook's owner"},
    {"Timeline: drag / wheel / click", "pan / zoom / move the current event (on a track: to its nearest event); Shift+drag: select a range"},
};

constexpr HelpRow kPanels[] = {
    {"Graph", "the autograd graph at the current event, each rank side by side; hook chips per Function "
              "(colour = owner); a red outline and \"!\" = a hook whose owner is destroyed; a violet one = a hook "
              "of a lingering Reducer (replaced by a newer one, still alive); a chip flashes when it fires; module "
              "hooks show on their module's Nodes (fwd, bwd)"},
    {"Function", "the selected Function's hooks by kind: key, owner (alive / destroyed), fires so far, "
                 "added at / removed at (click to jump)"},
    {"Reducers", "each DDP Reducer at the current event: alive, replaced but still alive, or destroyed, buckets with pending "
                 "gradients, the order gradients became ready"},
    {"Timeline", "ranks as tracks; backward passes, Function applies and collectives as spans"},
    {"Events", "every event; filter with kind:, owner:, fn:, rank:, key:, hook: and words; -term negates"},
    {"Diagnostics", "leaked hooks, stale fires, collateral removals...; click one to jump to its proof"},
    {"Compare", "a second trace beside this one: hook counts per Function, findings in only one"},
    {"Lanes", "one bar per hook from add to removal, violet once its owner is replaced (still alive), red once it "
              "is destroyed, fires as ticks (View menu)"},
    {"Readiness", "per rank, parameters × backward passes: ok, unused, ready twice, stale, cut (View menu)"},
    {"Why did this fire?", "at a hook fire: whose hook it is, when it was added, whether its owner acted (View menu)"},
};

// Two columns: the names as wide as the widest (at most a third of the
// window), the descriptions wrapped in the rest. Returns the description
// column's width.
float help_table(const char* id, const HelpRow* rows, size_t n) {
  float name_w = 0.f;
  for (size_t i = 0; i < n; ++i) name_w = std::max(name_w, ImGui::CalcTextSize(rows[i].name).x);
  const float avail = ImGui::GetContentRegionAvail().x;
  name_w = std::min(name_w, avail / 3.f);
  float what_w = 0.f;
  if (!ImGui::BeginTable(id, 2, ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) return 0.f;
  ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthFixed, name_w);
  ImGui::TableSetupColumn("what", ImGuiTableColumnFlags_WidthStretch);
  for (size_t i = 0; i < n; ++i) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextWrapped("%s", rows[i].name);
    ImGui::TableNextColumn();
    what_w = ImGui::GetContentRegionAvail().x;
    ImGui::TextWrapped("%s", rows[i].what);
  }
  ImGui::EndTable();
  return what_w;
}

}  // namespace

void App::draw_help_window() {
  if (!show_help_) return;
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + vp->Size.x * 0.5f, vp->Pos.y + vp->Size.y * 0.5f),
                          ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(ImGui::GetFontSize() * 48.f, ImGui::GetFontSize() * 34.f),
                           ImGuiCond_Appearing);
  // Opaque: the graph under it would make the text hard to read.
  ImGui::SetNextWindowBgAlpha(1.f);
  if (ImGui::Begin("Help", &show_help_, ImGuiWindowFlags_NoSavedSettings)) {
    help_layout_.window_w = ImGui::GetWindowWidth();
    ImGui::TextUnformatted("Keys");
    help_layout_.what_w = help_table("keys", kKeys, std::size(kKeys));
    ImGui::Spacing();
    ImGui::TextUnformatted("Panels");
    help_table("panels", kPanels, std::size(kPanels));
    ImGui::Spacing();
    ImGui::TextDisabled("Drop .hstrace files on the window to open them (hold Shift to compare).");
  }
  ImGui::End();
}

void App::draw_goto_dialog() {
  if (show_goto_) {
    ImGui::OpenPopup("Go to event");
    show_goto_ = false;
    goto_focus_ = true;
  }
  if (!ImGui::BeginPopupModal("Go to event", nullptr, ImGuiWindowFlags_AlwaysAutoResize)) return;
  const size_t n = session_.num_events();
  ImGui::Text("Event number, 0 .. %zu", n ? n - 1 : 0);
  if (goto_focus_) {
    ImGui::SetKeyboardFocusHere();
    goto_focus_ = false;
  }
  const bool entered = ImGui::InputText("##goto", goto_text_, sizeof(goto_text_),
                                        ImGuiInputTextFlags_CharsDecimal | ImGuiInputTextFlags_EnterReturnsTrue);
  char* end = nullptr;
  const unsigned long long v = std::strtoull(goto_text_, &end, 10);
  const bool valid = goto_text_[0] != 0 && end && *end == 0 && v < n;
  if (goto_text_[0] != 0 && !valid) ImGui::TextColored(ImVec4(1.f, 0.45f, 0.4f, 1.f), "no such event");
  if ((entered || ImGui::Button("Go")) && valid) {
    jump_to(static_cast<size_t>(v));
    ImGui::CloseCurrentPopup();
  }
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace hookscope::app
