// Compare panel: a second trace (B) beside the open one (A), e.g. the same
// scenario with --policy none beside by-key. Tabs: both graphs side by side,
// synchronised on matching points, with the hooks only one side has at that
// point outlined and listed; the order hooks fired on each Function, A vs B
// (panel_compare_graphs.cpp); hook counts per Function at the end of each,
// differing rows first; the findings only one of them has
// (Note [Matching Functions across traces]). A click on a row selects that
// Function in A's graph.
#include <fmt/format.h>

#include <filesystem>
#include <iterator>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"

namespace hookscope::app {

namespace {

using render::palette;
using analysis::kNoIndex;

constexpr uint32_t kDiffer = render::rgba(230, 180, 80);
constexpr uint32_t kDifferRow = render::rgba(230, 180, 80, 28);

const char* kind_column(int kind) {
  if (kind < 0 || kind >= trace::kNumHookKinds) return "?";
  return trace::to_string(static_cast<trace::HookKind>(kind)).data();  // literals: NUL-terminated
}

std::string short_name(const std::vector<std::string>& files, const std::string& fallback) {
  if (files.empty() || files[0].empty()) return fallback;
  std::string name = std::filesystem::path(files[0]).filename().string();
  if (files.size() > 1) name += fmt::format(" (+{} more)", files.size() - 1);
  return name;
}

}  // namespace

void App::draw_compare_panel() {
  // It opens over the other panels: no see-through text.
  ImGui::SetNextWindowBgAlpha(1.f);
  if (!ImGui::Begin("Compare", &show_compare_)) {
    ImGui::End();
    return;
  }
  {
    const ImVec2 at = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
    compare_graphs_.stats.window = {at.x, at.y, at.x + size.x, at.y + size.y};
  }
  const analysis::Model* m = session_.model();
  if (compare_waiting(m)) {
    ImGui::End();
    return;
  }
  const std::string name_a = title_.empty() ? std::string("this trace") : std::filesystem::path(title_).filename().string();
  const std::string name_b = short_name(compare_.files, "the second trace");
  if (!compare_header(name_a, name_b)) {
    ImGui::End();
    return;
  }
  compare_sync();
  const analysis::ModelDiff& diff = *compare_.diff;
  // --compare-tab: selected in the first frames (ImGui applies it a frame later), then the user's.
  const int asked = compare_tab_asked();
  auto pick = [&](int tab) { return !compare_tab_shown_ && tab == asked ? ImGuiTabItemFlags_SetSelected : 0; };
  if (ImGui::BeginTabBar("compare tabs")) {
    if (ImGui::BeginTabItem("Graphs at matching points", nullptr, pick(0))) {
      compare_graphs_.tab = 0;
      compare_graphs();
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Hook order", nullptr, pick(1))) {
      compare_graphs_.tab = 1;
      compare_order_table();
      ImGui::EndTabItem();
    }
    if (ImGui::BeginTabItem("Hooks at the end", nullptr, pick(2))) {
      compare_graphs_.tab = 2;
      compare_counts_table(diff);
      ImGui::EndTabItem();
    }
    const std::string findings = fmt::format("Findings only in A / B ({} / {})###findings", diff.only_a.size(), diff.only_b.size());
    if (ImGui::BeginTabItem(findings.c_str(), nullptr, pick(3))) {
      compare_graphs_.tab = 3;
      compare_findings(diff);
      ImGui::EndTabItem();
    }
    ImGui::EndTabBar();
  }
  compare_tab_shown_ |= compare_graphs_.tab == asked;
  ImGui::End();
}

int App::compare_tab_asked() const {
  for (int k = 0; k < static_cast<int>(std::size(kCompareTabs)); ++k) {
    if (args_.compare_tab == kCompareTabs[k]) return k;
  }
  return -1;
}

// True (and says why) while there is nothing to compare yet.
bool App::compare_waiting(const analysis::Model* m) {
  if (compare_.loader.busy()) {
    ImGui::TextDisabled("loading %s ...", short_name(compare_.files, "the second trace").c_str());
    return true;
  }
  if (!compare_.model) {
    if (!compare_.error.empty()) {
      ImGui::PushTextWrapPos(0.f);
      ImGui::TextColored(col(palette().alarm), "%s", compare_.error.c_str());
      ImGui::PopTextWrapPos();
      ImGui::Spacing();
    }
    ImGui::TextUnformatted("Nothing to compare with yet.");
    ImGui::TextDisabled("Open a second trace beside this one:");
    ImGui::BulletText("File > Compare with... (Ctrl+Shift+O), or hookscope A.hstrace --compare B.hstrace");
    ImGui::BulletText("or drop a .hstrace file on the window with Shift held");
    ImGui::TextDisabled("e.g. the same scenario recorded with --policy none beside --policy by-key:");
    ImGui::TextDisabled("both graphs stepped together, the hooks only one has, the order hooks fired.");
    if (m && ImGui::Button("Compare with...")) {
      show_browser_ = true;
      browser_for_compare_ = true;
    }
    return true;
  }
  if (!m) {
    ImGui::TextDisabled("Open a trace to compare %s with.", short_name(compare_.files, "it").c_str());
    return true;
  }
  if (!compare_.diff) {
    ImGui::TextDisabled("comparing with %s ...", short_name(compare_.files, "the second trace").c_str());
    return true;
  }
  return false;
}

// "A name  B name  [close B]" and the summary at the end; false once B is closed.
bool App::compare_header(const std::string& name_a, const std::string& name_b) {
  ImGui::TextColored(col(palette().text_label), "A");
  ImGui::SameLine();
  ImGui::TextUnformatted(name_a.c_str());
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s\n(the open trace: it steps, B follows)", title_.c_str());
  ImGui::SameLine();
  ImGui::TextColored(col(kDiffer), "  B");
  ImGui::SameLine();
  ImGui::TextUnformatted(name_b.c_str());
  if (ImGui::IsItemHovered() && !compare_.files.empty()) ImGui::SetTooltip("%s", compare_.files[0].c_str());
  ImGui::SameLine();
  if (ImGui::SmallButton("close B")) {
    compare_.model.reset();
    compare_.findings = {};
    compare_.drop_diff();
    compare_.files.clear();
    compare_view_.diff = nullptr;
    compare_graphs_ = CompareGraphs{};
    return false;
  }
  const analysis::ModelDiff& diff = *compare_.diff;
  const size_t differing = diff.num_differing();
  ImGui::SameLine();
  if (differing == 0 && diff.only_a.empty() && diff.only_b.empty()) {
    ImGui::TextColored(col(render::rgba(110, 200, 120)), "   at the end: same hooks on every Function, same findings");
  } else {
    ImGui::TextDisabled("   at the end: %zu of %zu Functions with hooks differ", differing, diff.functions.size());
  }
  return true;
}

namespace {

// One "a | b" cell, in the difference colour when they differ.
void count_cell(uint32_t a, uint32_t b) {
  ImGui::TableNextColumn();
  if (a != b) {
    ImGui::TextColored(col(kDiffer), "%u | %u", a, b);
  } else if (a == 0) {
    ImGui::TextDisabled("-");
  } else {
    ImGui::Text("%u | %u", a, b);
  }
}

}  // namespace

// Hook counts per Function at the end of each trace, A | B.
void App::compare_counts_table(const analysis::ModelDiff& diff) {
  const analysis::Model* m = session_.model();
  CompareView& v = compare_view_;
  auto rebuild_rows = [&] {
    v.rows.clear();
    for (uint32_t i = 0; i < diff.functions.size(); ++i) {
      if (!v.only_differing || diff.functions[i].differs()) v.rows.push_back(i);
    }
  };
  if (v.diff != &diff || v.num_functions != diff.functions.size()) {
    v.diff = &diff;
    v.num_functions = diff.functions.size();
    v.kinds = 0;
    for (const analysis::FunctionCounts& fc : diff.functions) {
      for (int k = 0; k < trace::kNumHookKinds; ++k) {
        if (fc.hooks_a[static_cast<size_t>(k)] || fc.hooks_b[static_cast<size_t>(k)]) v.kinds |= 1u << k;
      }
    }
    rebuild_rows();
  }
  if (ImGui::Checkbox("only differing", &v.only_differing)) rebuild_rows();
  ImGui::SameLine();
  ImGui::TextDisabled("hooks at the end of each trace, A | B; a click selects the Function in A's graph");
  int columns = 3;
  for (int k = 0; k < trace::kNumHookKinds; ++k) columns += (v.kinds >> k) & 1u;
  if (!ImGui::BeginTable("functions", columns,
                         ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                             ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_Resizable)) {
    return;
  }
  ImGui::TableSetupScrollFreeze(1, 1);
  ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableSetupColumn("rank");
  for (int k = 0; k < trace::kNumHookKinds; ++k) {
    if ((v.kinds >> k) & 1u) ImGui::TableSetupColumn(kind_column(k));
  }
  ImGui::TableSetupColumn("total");
  ImGui::TableHeadersRow();
  ImGuiListClipper clipper;
  clipper.Begin(static_cast<int>(v.rows.size()));
  while (clipper.Step()) {
    for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
      const analysis::FunctionCounts& fc = diff.functions[v.rows[static_cast<size_t>(r)]];
      ImGui::TableNextRow();
      if (fc.differs()) ImGui::TableSetBgColor(ImGuiTableBgTarget_RowBg1, kDifferRow);
      ImGui::TableNextColumn();
      ImGui::PushID(r);
      const bool selected = fc.a != kNoIndex && fc.a == session_.selected_function();
      if (ImGui::Selectable(fc.function.c_str(), selected, ImGuiSelectableFlags_SpanAllColumns) && fc.a != kNoIndex) {
        select_function(fc.a);
      }
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s\n%s", fc.function.c_str(),
                          fc.a != kNoIndex ? "click: select it in A's graph" : "only in B: nothing to select in A");
      }
      ImGui::PopID();
      ImGui::TableNextColumn();
      const analysis::FunctionInfo* info = fc.a != kNoIndex ? &m->functions()[fc.a]
                                           : fc.b != kNoIndex ? &compare_.model->functions()[fc.b]
                                                              : nullptr;
      if (info) ImGui::TextDisabled("r%u", static_cast<unsigned>(info->rank));
      for (int k = 0; k < trace::kNumHookKinds; ++k) {
        if ((v.kinds >> k) & 1u) count_cell(fc.hooks_a[static_cast<size_t>(k)], fc.hooks_b[static_cast<size_t>(k)]);
      }
      count_cell(fc.total_a(), fc.total_b());
    }
  }
  ImGui::EndTable();
}

// The findings only one trace has; A's link to their events.
void App::compare_findings(const analysis::ModelDiff& diff) {
  auto list = [&](const char* title, const std::vector<analysis::Finding>& findings, bool in_a) {
    const std::string label = fmt::format("{} ({})###{}", title, findings.size(), title);
    if (findings.empty()) {
      ImGui::TextDisabled("%s: none", title);
      return;
    }
    ImGui::SetNextItemOpen(true, ImGuiCond_Once);
    if (!ImGui::TreeNode(label.c_str())) return;
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(findings.size()));
    while (clipper.Step()) {
      for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
        const analysis::Finding& f = findings[static_cast<size_t>(i)];
        ImGui::PushID(i);
        const uint32_t sev = f.severity == analysis::Severity::kError ? palette().alarm : kDiffer;
        ImGui::TextColored(col(sev), "%s", std::string(analysis::to_string(f.kind)).c_str());
        ImGui::SameLine();
        if (in_a) {
          const std::string text = fmt::format("#{}  {}", f.at, f.message);
          if (ImGui::Selectable(text.c_str(), false)) {
            jump_to(f.at, f.function);
            if (f.owner != kNoIndex) select_owner(f.owner);
          }
          if (ImGui::IsItemHovered()) ImGui::SetTooltip("click: go to #%zu in A and select its Function", f.at);
        } else {
          ImGui::TextUnformatted(f.message.c_str());
          if (ImGui::IsItemHovered()) ImGui::SetTooltip("in B at event #%zu (B is not the open trace)", f.at);
        }
        ImGui::PopID();
      }
    }
    ImGui::TreePop();
  };
  ImGui::BeginChild("only", ImVec2(0.f, 0.f));
  list("Findings only in A", diff.only_a, true);
  list("Findings only in B", diff.only_b, false);
  ImGui::EndChild();
}

}  // namespace hookscope::app
