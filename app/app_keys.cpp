// Every key the app handles, in one place (the Help window lists them).
// Dear ImGui 1.86 reads keys from io.KeysDown[] indexed by the backend's key
// codes: named keys go through GetKeyIndex(ImGuiKey_*), letters and digits
// by their GLFW codes, which are their ASCII capitals ('G', '1').
#include "app.h"

namespace hookscope::app {

namespace {

constexpr int kKeyF1 = 290;  // GLFW_KEY_F1

bool pressed(ImGuiKey key) { return ImGui::IsKeyPressed(ImGui::GetKeyIndex(key)); }
bool pressed_char(char c) { return ImGui::IsKeyPressed(c); }

}  // namespace

void App::handle_keys() {
  const ImGuiIO& io = ImGui::GetIO();
  // With a popup open (Go to, errors) or text being typed, keys belong to it.
  if (io.WantTextInput || ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId)) return;
  const bool ctrl = io.KeyCtrl;
  if (ctrl && pressed_char('Q')) request_quit(0);
  if (ctrl && pressed_char('O')) {
    show_browser_ = true;
    browser_for_compare_ = io.KeyShift;
  }
  if (pressed(ImGuiKey_Escape)) {
    show_help_ = false;
    show_browser_ = false;
  }
  if (ImGui::IsKeyPressed(kKeyF1)) show_help_ = !show_help_;
  if (session_.empty()) return;
  if (ctrl && pressed_char('F')) focus_filter_ = true;
  if (ctrl && pressed_char('G')) {
    show_goto_ = true;
    goto_text_[0] = 0;
  }
  if (ctrl && pressed_char('B')) {
    session_.toggle_bookmark();
  }
  for (int n = 1; n <= 9; ++n) {
    if (ctrl && pressed_char(static_cast<char>('0' + n))) {
      session_.set_playing(false);
      session_.jump_to_bookmark(static_cast<size_t>(n - 1));
    }
  }
  const bool moved_by_hand = pressed(ImGuiKey_LeftArrow) || pressed(ImGuiKey_RightArrow) ||
                             pressed(ImGuiKey_PageUp) || pressed(ImGuiKey_PageDown) ||
                             pressed(ImGuiKey_Home) || pressed(ImGuiKey_End);
  if (moved_by_hand) session_.set_playing(false);
  if (pressed(ImGuiKey_RightArrow)) ctrl ? (void)session_.step_kind(+1) : session_.step(+1);
  if (pressed(ImGuiKey_LeftArrow)) ctrl ? (void)session_.step_kind(-1) : session_.step(-1);
  if (pressed(ImGuiKey_PageDown)) session_.step_lifecycle(+1);
  if (pressed(ImGuiKey_PageUp)) session_.step_lifecycle(-1);
  if (pressed(ImGuiKey_Home)) session_.go_first();
  if (pressed(ImGuiKey_End)) session_.go_last();
  if (pressed(ImGuiKey_Space)) session_.set_playing(!session_.playing());
}

}  // namespace hookscope::app
