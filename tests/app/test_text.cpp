// Text a user reads is true and readable, with an ImGui
// context and no window: every non-ASCII character the UI prints is in the
// font atlas (Note [UI glyphs]); F1 Help is a two-column table whose
// descriptions wrap in most of its width; `--panel lanes|readiness|explain|compare` leaves
// no fragment of another panel; the no-findings line says what is still
// attached; counts take their plural.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>
#include <imgui_internal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "analysis/model.h"
#include "app_assets.h"
#include "testing/headless_app.h"
#include "panel_common.h"
#include "testing/test_util.h"
#include "trace/reader.h"

using namespace hookscope;
namespace fs = std::filesystem;

namespace {

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

// Appends the code points of UTF-8 `bytes` from 0x80 up.
void non_ascii(const std::string& bytes, std::set<uint32_t>& out) {
  for (size_t i = 0; i < bytes.size();) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if ((c & 0xc0) == 0x80 || c >= 0xf8) {  // not a lead byte: binary (a file magic), no text
      ++i;
      continue;
    }
    const int n = c < 0x80 ? 1 : c >> 5 == 6 ? 2 : c >> 4 == 14 ? 3 : 4;
    uint32_t cp = n == 1 ? c : c & (0x3f >> (n - 1));
    for (int k = 1; k < n && i + k < bytes.size(); ++k) cp = cp << 6 | (static_cast<unsigned char>(bytes[i + k]) & 0x3f);
    if (cp >= 0x80) out.insert(cp);
    i += n;
  }
}

// The string literals of a C++ source (comments skipped), escapes decoded
// (\xNN bytes, \uNNNN code points), as UTF-8.
std::string literals(const std::string& src) {
  std::string out;
  for (size_t i = 0; i < src.size(); ++i) {
    if (src.compare(i, 2, "//") == 0) {
      i = src.find('\n', i);
      if (i == std::string::npos) break;
      continue;
    }
    if (src.compare(i, 2, "/*") == 0) {
      i = src.find("*/", i);
      if (i == std::string::npos) break;
      ++i;
      continue;
    }
    if (src[i] == '\'') {  // a character literal: '"' is no string
      const size_t end = src.find('\'', i + (src[i + 1] == '\\' ? 3 : 2));
      if (end != std::string::npos && end - i <= 10) i = end;
      continue;
    }
    if (src[i] != '"') continue;
    for (++i; i < src.size() && src[i] != '"'; ++i) {
      if (src[i] != '\\') {
        out += src[i];
        continue;
      }
      const char e = src[++i];
      if (e != 'x' && e != 'u') {
        out += e;  // \" \\ \n ...: itself (its meaning matters not here)
      } else if (e == 'x') {
        size_t n = 0;
        out += static_cast<char>(std::stoul(src.substr(i + 1, 2), &n, 16));
        i += n;
      } else if (e == 'u') {
        const auto cp = static_cast<uint32_t>(std::stoul(src.substr(i + 1, 4), nullptr, 16));
        out += cp < 0x800 ? std::string{static_cast<char>(0xc0 | cp >> 6), static_cast<char>(0x80 | (cp & 0x3f))}
                          : std::string{static_cast<char>(0xe0 | cp >> 12), static_cast<char>(0x80 | (cp >> 6 & 0x3f)),
                                        static_cast<char>(0x80 | (cp & 0x3f))};
        i += 4;
      }
    }
    out += '\n';
  }
  return out;
}

// A window's rectangle, by its title.
ImRect window_rect(const char* title) {
  const ImGuiWindow* w = ImGui::FindWindowByName(title);
  REQUIRE_MESSAGE(w != nullptr, "no window " << title);
  return w->Rect();
}

}  // namespace

TEST_CASE("text: every non-ASCII character in the UI's strings is in the font atlas (Note [UI glyphs])") {
  testing::scratch_config_dir("hookscope_text_ui");
  if (app::ui_font().empty()) {
    MESSAGE("skipping: no UI font (fonts-dejavu-core is not installed); ImGui's own font has Latin-1 only");
    return;
  }
  testing::HeadlessApp h(app::Args{});
  const ImFont* font = ImGui::GetIO().Fonts->Fonts[0];
  std::set<uint32_t> used;
  for (const char* dir : {"app", "render", "core/analysis", "core/trace", "core/ddp"}) {
    for (const auto& entry : fs::recursive_directory_iterator(fs::path(HOOKSCOPE_SOURCE_DIR) / dir)) {
      const std::string ext = entry.path().extension().string();
      if (ext != ".cpp" && ext != ".h") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      non_ascii(literals(text.str()), used);
    }
  }
  // The scan finds what the UI is known to print: "·", "×", "…", "→".
  for (uint32_t cp : {0xB7u, 0xD7u, 0x2026u, 0x2192u}) CHECK(used.count(cp) == 1);
  for (uint32_t cp : used) {
    INFO("U+" << std::hex << cp);
    CHECK(font->FindGlyphNoFallback(static_cast<ImWchar>(cp)) != nullptr);
  }
}

TEST_CASE("text: F1 Help is a two-column table whose descriptions get most of its width") {
  testing::scratch_config_dir("hookscope_text_ui");
  for (const ImVec2 display : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
    testing::HeadlessApp h(testing::headless_args({sample("recovery-none")}), display);
    h.press(290);  // F1
    CHECK(h.app().help_open());
    for (int i = 0; i < 3; ++i) h.frame();
    const app::App::HelpLayout& l = h.app().help_layout();
    INFO("display " << display.x << "x" << display.y << ": Help " << l.window_w << " px, descriptions " << l.what_w);
    REQUIRE(l.window_w > 300.f);
    // Before: a fixed-fit table gave the descriptions one character's width.
    CHECK(l.what_w >= 0.5f * l.window_w);
    const ImRect help = window_rect("Help");
    CHECK(help.Max.x <= display.x);
    CHECK(help.Max.y <= display.y);
    // Opaque: the graph does not show through it. Its background is the
    // first thing its draw list holds (the dark theme's WindowBg is 94% opaque).
    const ImGuiWindow* w = ImGui::FindWindowByName("Help");
    REQUIRE(w->DrawList->VtxBuffer.Size > 0);
    CHECK((w->DrawList->VtxBuffer[0].col >> IM_COL32_A_SHIFT & 0xff) == 0xff);
  }
}

// Note [Default layout]: a panel --panel brings up covers the panels under it
// whole and is opaque and in front of them; the others are apart from it.
TEST_CASE("text: --panel lanes, readiness, explain or compare covers other panels whole, leaving no fragment of one") {
  testing::scratch_config_dir("hookscope_text_ui");
  struct Front {
    const char* panel;
    const char* title;
  };
  for (const Front& p : {Front{"lanes", "Lanes"}, Front{"readiness", "Readiness"}, Front{"explain", "Why did this fire?"},
                         Front{"compare", "Compare"}}) {
    for (const ImVec2 display : {ImVec2(1280, 800), ImVec2(1920, 1080)}) {
      app::Args args = testing::headless_args({sample("recovery-none")});
      args.panel = p.panel;
      testing::HeadlessApp h(args, display);
      for (int i = 0; i < 4; ++i) h.frame();
      const ImRect front = window_rect(p.title);
      const ImGuiWindow* fw = ImGui::FindWindowByName(p.title);
      REQUIRE(fw->DrawList->VtxBuffer.Size > 0);
      CHECK((fw->DrawList->VtxBuffer[0].col >> IM_COL32_A_SHIFT & 0xff) == 0xff);  // nothing shows through
      size_t covered_n = 0;
      for (const char* other : {"Graph", "Function", "Reducers", "Timeline", "Events", "Diagnostics"}) {
        const ImRect r = window_rect(other);
        const bool covered = front.Contains(r);
        const bool apart = !front.Overlaps(r);
        INFO(p.panel << " at " << display.x << "x" << display.y << ": " << other << " [" << r.Min.x << "," << r.Min.y
                     << "," << r.Max.x << "," << r.Max.y << "] under [" << front.Min.x << "," << front.Min.y << ","
                     << front.Max.x << "," << front.Max.y << "]");
        CHECK((covered || apart));
        if (!covered) continue;
        ++covered_n;
        // In front of what it covers: later in the display order.
        const ImGuiWindow* ow = ImGui::FindWindowByName(other);
        const auto& order = ImGui::GetCurrentContext()->Windows;
        CHECK(order.index_from_ptr(std::find(order.begin(), order.end(), fw)) >
              order.index_from_ptr(std::find(order.begin(), order.end(), ow)));
      }
      CHECK(covered_n >= 2);  // it is where it should be: over the graph or the right column
    }
  }
}

TEST_CASE("text: the no-findings line says which hooks are still attached at the end") {
  for (const char* name : {"autograd-demo", "recovery-by-key"}) {
    const analysis::Model m(trace::read_trace(sample(name)));
    size_t attached = 0;
    for (const analysis::HookInfo& h : m.hooks()) attached += h.ended_at == analysis::kNever;
    const std::string line = app::attached_at_end(m);
    INFO(name << ": " << line);
    CHECK(line.find("#" + std::to_string(m.num_events() - 1)) != std::string::npos);
    if (attached == 0) {
      CHECK(line.find("no hook is attached") != std::string::npos);
    } else {
      CHECK(line.find(app::count_of(attached, "hook") + " still attached") != std::string::npos);
    }
  }
}

TEST_CASE("text: counts take their plural") {
  CHECK(app::count_of(1, "bucket") == "1 bucket");
  CHECK(app::count_of(0, "bucket") == "0 buckets");
  CHECK(app::count_of(3, "hook attachment") == "3 hook attachments");
}

#endif  // HOOKSCOPE_APP_UI
