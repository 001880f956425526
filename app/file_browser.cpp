// File > Open (Ctrl+O) and File > Compare with (Ctrl+Shift+O): a file
// browser drawn with ImGui. Lists folders and .hstrace files with size and
// age; Ctrl+click selects several (the ranks of one run), and picking one
// rank file of a `launch` run (PREFIX.rank<r>[.gen<g>].hstrace) selects its
// siblings too, since a run is read as one timeline.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <system_error>

#include "app.h"

namespace hookscope::app {

namespace fs = std::filesystem;

namespace {

struct Entry {
  std::string name;
  bool dir = false;
  uintmax_t size = 0;
  fs::file_time_type mtime;
};

std::string human_size(uintmax_t bytes) {
  if (bytes < 1024) return fmt::format("{} B", bytes);
  if (bytes < 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(bytes) / 1024.0);
  if (bytes < 1024ull * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return fmt::format("{:.2f} GiB", static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0));
}

std::string age(fs::file_time_type t) {
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(fs::file_time_type::clock::now() - t).count();
  if (secs < 60) return "just now";
  if (secs < 3600) return fmt::format("{} min ago", secs / 60);
  if (secs < 86400) return fmt::format("{} h ago", secs / 3600);
  return fmt::format("{} days ago", secs / 86400);
}

// "run.rank1.gen2.hstrace" -> "run": the prefix shared by a launch's files.
std::string run_prefix(const std::string& name) {
  const size_t r = name.find(".rank");
  return r == std::string::npos ? std::string() : name.substr(0, r);
}

}  // namespace

struct FileBrowserState {
  fs::path dir;
  std::vector<Entry> entries;
  std::vector<std::string> selected;  // names in dir
  bool show_all = false;
  bool siblings = true;
  char path_text[1024] = "";
  std::string error;
  bool listed = false;

  void list() {
    entries.clear();
    error.clear();
    std::error_code ec;
    for (fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end; it.increment(ec)) {
      Entry e;
      e.name = it->path().filename().string();
      if (e.name.empty() || e.name[0] == '.') continue;
      std::error_code ec2;
      e.dir = it->is_directory(ec2);
      if (!e.dir) {
        if (!show_all && it->path().extension() != ".hstrace") continue;
        e.size = it->file_size(ec2);
      }
      e.mtime = it->last_write_time(ec2);
      entries.push_back(std::move(e));
    }
    if (ec) error = fmt::format("cannot list {}: {}", dir.string(), ec.message());
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
      return a.dir != b.dir ? a.dir : a.name < b.name;
    });
    selected.clear();
    std::snprintf(path_text, sizeof(path_text), "%s", dir.string().c_str());
    listed = true;
  }
  void go(const fs::path& to) {
    std::error_code ec;
    const fs::path canon = fs::weakly_canonical(to, ec);
    if (ec || !fs::is_directory(canon, ec)) {
      error = fmt::format("{} is not a folder", to.string());
      return;
    }
    dir = canon;
    list();
  }
};

namespace {

// The browser's top: what to pick, the Up / path / Go line, the options and the error.
void browser_header(FileBrowserState& st, bool for_compare) {
  ImGui::TextUnformatted(for_compare ? "Pick the trace(s) to compare with what is open."
                                     : "Pick a trace, or every rank file of one run.");
  if (ImGui::Button("Up")) st.go(st.dir.parent_path());
  ImGui::SameLine();
  ImGui::SetNextItemWidth(-ImGui::CalcTextSize("Go").x - ImGui::GetStyle().FramePadding.x * 4.f);
  const bool typed = ImGui::InputText("##path", st.path_text, sizeof(st.path_text),
                                      ImGuiInputTextFlags_EnterReturnsTrue);
  ImGui::SameLine();
  if (ImGui::Button("Go") || typed) {
    std::error_code ec;
    const fs::path p(st.path_text);
    if (fs::is_regular_file(p, ec)) {
      st.dir = p.parent_path();
      st.list();
      st.selected = {p.filename().string()};
    } else {
      st.go(p);
    }
  }
  if (ImGui::Checkbox("show all files", &st.show_all)) st.list();
  ImGui::SameLine();
  ImGui::Checkbox("select every rank file of a run", &st.siblings);
  if (!st.error.empty()) ImGui::TextColored(ImVec4(1.f, 0.45f, 0.4f, 1.f), "%s", st.error.c_str());
}

// A click on file `e`: selects it (with its run's siblings), Ctrl adds or
// removes it; a double click asks to open it now.
void browser_pick(FileBrowserState& st, const Entry& e, bool sel, bool& open_now) {
  if (ImGui::GetIO().KeyCtrl) {
    if (sel) {
      std::erase(st.selected, e.name);
    } else {
      st.selected.push_back(e.name);
    }
    return;
  }
  st.selected = {e.name};
  const std::string prefix = run_prefix(e.name);
  if (st.siblings && !prefix.empty()) {
    for (const Entry& o : st.entries) {
      if (!o.dir && o.name != e.name && run_prefix(o.name) == prefix) st.selected.push_back(o.name);
    }
  }
  if (ImGui::IsMouseDoubleClicked(0)) open_now = true;
}

// The folder's entries, `footer` left below. A double-clicked folder goes to
// `open_dir`; true when a file was double-clicked (open it now).
bool browser_table(FileBrowserState& st, float footer, fs::path& open_dir) {
  bool open_now = false;
  if (!ImGui::BeginTable("files", 3,
                         ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit,
                         ImVec2(0.f, -footer))) {
    return open_now;
  }
  ImGui::TableSetupScrollFreeze(0, 1);
  ImGui::TableSetupColumn("name", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("size");
  ImGui::TableSetupColumn("modified");
  ImGui::TableHeadersRow();
  if (st.entries.empty()) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextDisabled(st.show_all ? "(empty folder)" : "(no .hstrace files here)");
  }
  for (const Entry& e : st.entries) {
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    const bool sel = std::find(st.selected.begin(), st.selected.end(), e.name) != st.selected.end();
    const std::string label = e.dir ? e.name + "/" : e.name;
    if (ImGui::Selectable(label.c_str(), sel,
                          ImGuiSelectableFlags_SpanAllColumns | ImGuiSelectableFlags_AllowDoubleClick)) {
      if (e.dir) {
        if (ImGui::IsMouseDoubleClicked(0)) open_dir = st.dir / e.name;
      } else {
        browser_pick(st, e, sel, open_now);
      }
    }
    ImGui::TableNextColumn();
    if (!e.dir) ImGui::TextDisabled("%s", human_size(e.size).c_str());
    ImGui::TableNextColumn();
    ImGui::TextDisabled("%s", age(e.mtime).c_str());
  }
  ImGui::EndTable();
  return open_now;
}

}  // namespace

void App::draw_file_browser() {
  static FileBrowserState st;  // one browser per process, like the app itself
  if (show_browser_) {
    ImGui::OpenPopup("Open traces");
    show_browser_ = false;
    std::error_code ec;
    if (st.dir.empty()) {
      st.dir = !files_.empty() && !files_[0].empty() ? fs::absolute(files_[0], ec).parent_path()
                                                     : fs::current_path(ec);
    }
    st.list();
  }
  const ImGuiViewport* vp = ImGui::GetMainViewport();
  ImGui::SetNextWindowPos(ImVec2(vp->Pos.x + vp->Size.x * 0.5f, vp->Pos.y + vp->Size.y * 0.5f),
                          ImGuiCond_Appearing, ImVec2(0.5f, 0.5f));
  ImGui::SetNextWindowSize(ImVec2(vp->Size.x * 0.6f, vp->Size.y * 0.65f), ImGuiCond_Appearing);
  if (!ImGui::BeginPopupModal("Open traces", nullptr)) return;
  browser_header(st, browser_for_compare_);

  const float footer = ImGui::GetFrameHeightWithSpacing() * 1.6f;
  fs::path open_dir;
  const bool open_now = browser_table(st, footer, open_dir);
  if (!open_dir.empty()) st.go(open_dir);
  ImGui::TextDisabled("%zu selected", st.selected.size());
  ImGui::SameLine();
  ImGui::BeginDisabled(st.selected.empty());
  if (ImGui::Button(browser_for_compare_ ? "Compare" : "Open") || open_now) {
    std::vector<std::string> files;
    for (const auto& n : st.selected) files.push_back((st.dir / n).string());
    std::sort(files.begin(), files.end());
    if (browser_for_compare_) {
      open_compare(files);
    } else {
      open_files(files);
    }
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndDisabled();
  ImGui::SameLine();
  if (ImGui::Button("Cancel") || ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Escape))) {
    ImGui::CloseCurrentPopup();
  }
  ImGui::EndPopup();
}

}  // namespace hookscope::app
