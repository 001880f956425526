// Diagnostics panel: the findings of Note [Findings], grouped by kind, most
// severe first; a click jumps to the event where the finding first holds,
// selects its Function and owner; the selected finding's proving events are
// listed below as links. Findings that only hold later than the current
// event are greyed.
#include <fmt/format.h>

#include <algorithm>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"

namespace hookscope::app {

namespace {

using render::palette;
using analysis::Finding;
using analysis::FindingKind;
using analysis::kNoIndex;
using analysis::Severity;


constexpr uint32_t kWarningColor = render::rgba(230, 180, 80);
constexpr uint32_t kInfoColor = render::rgba(120, 170, 230);
constexpr uint32_t kOkColor = render::rgba(110, 200, 120);

uint32_t severity_color(Severity s) {
  switch (s) {
    case Severity::kError: return palette().alarm;
    case Severity::kWarning: return kWarningColor;
    case Severity::kInfo: return kInfoColor;
  }
  return palette().text;
}

// What `count` counts, per kind.
const char* count_noun(FindingKind k) {
  switch (k) {
    case FindingKind::kLeakedHook: return "hooks";
    case FindingKind::kStaleFire: return "fires";
    case FindingKind::kUnusedParameter: return "backwards";
    default: return "times";
  }
}

const char* kind_help(FindingKind k) {
  switch (k) {
    case FindingKind::kLeakedHook: return "an owner was destroyed while hooks it added were still attached";
    case FindingKind::kStaleFire: return "a hook fired after its owner was destroyed";
    case FindingKind::kCollateralRemoval: return "a hook was removed by someone other than its owner";
    case FindingKind::kMultiOwner: return "hooks of several live Reducers on one Function at once";
    case FindingKind::kFailedRemoval: return "a removal found no such hook (stale or unknown key)";
    case FindingKind::kHookGrowth: return "the hooks on a Function grow as owners are rebuilt (1 -> 2 -> 3)";
    case FindingKind::kMarkedTwice: return "a parameter was marked ready twice in one backward";
    case FindingKind::kUnusedParameter: return "a parameter never got a gradient in a backward";
    case FindingKind::kMalformedTrace: return "the trace claims something that cannot happen (Note [Malformed traces])";
    case FindingKind::kUnrecoveredFailure: return "a failure no rank recovered from: the run did not finish";
  }
  return "";
}

constexpr uint32_t severity_bit(Severity s) { return 1u << static_cast<uint32_t>(s); }
constexpr uint32_t kind_bit(FindingKind k) { return 1u << (8 + static_cast<uint32_t>(k)); }

// A row's tooltip: kind and severity, the whole message, when it holds.
void finding_tooltip(const Finding& f, const std::string& kind, bool future) {
  ImGui::BeginTooltip();
  ImGui::PushTextWrapPos(ImGui::GetFontSize() * 36.f);
  ImGui::TextColored(col(severity_color(f.severity)), "%s (%s)", kind.c_str(),
                     std::string(analysis::to_string(f.severity)).c_str());
  ImGui::TextUnformatted(f.message.c_str());
  ImGui::PopTextWrapPos();
  if (future) ImGui::TextDisabled("holds from #%zu on, after the current event", f.at);
  ImGui::TextDisabled("click: go to #%zu and select its Function and owner", f.at);
  ImGui::EndTooltip();
}

// The current window's text area, for the draw report: across, its content
// region (the scrollbar excluded); down, what is visible of it.
void note_text_area(DiagnosticsDrawn& d) {
  const ImVec2 pos = ImGui::GetWindowPos(), size = ImGui::GetWindowSize();
  d.x0 = pos.x + ImGui::GetWindowContentRegionMin().x;
  d.x1 = pos.x + ImGui::GetWindowContentRegionMax().x;
  d.y0 = pos.y;
  d.y1 = pos.y + size.y;
  d.line_h = ImGui::GetTextLineHeight();
}

// The text item just drawn, for the draw report.
void note_row(DiagnosticsDrawn& d, std::string kind, std::string text, bool wrapped) {
  const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
  d.rows.push_back({std::move(kind), std::move(text), a.x, a.y, b.x, b.y, wrapped});
}

}  // namespace

std::string attached_at_end(const analysis::Model& m) {
  struct Owner {
    std::string name;
    size_t hooks = 0;
    bool destroyed = false;
  };
  std::vector<Owner> owners;
  size_t total = 0;
  for (const analysis::HookInfo& h : m.hooks()) {
    if (h.ended_at != analysis::kNever) continue;
    ++total;
    const std::string name = h.owner == kNoIndex ? "no owner" : m.owner_name(h.owner);
    auto it = std::find_if(owners.begin(), owners.end(), [&](const Owner& o) { return o.name == name; });
    if (it == owners.end()) it = owners.insert(owners.end(), {name});
    ++it->hooks;
    it->destroyed = it->destroyed || (h.owner != kNoIndex && m.owners()[h.owner].destroyed_at != analysis::kNever);
  }
  const size_t last = m.num_events() ? m.num_events() - 1 : 0;
  if (total == 0) return fmt::format("At the end (#{}) no hook is attached.", last);
  std::stable_sort(owners.begin(), owners.end(), [](const Owner& a, const Owner& b) { return a.hooks > b.hooks; });
  std::string text = fmt::format("At the end (#{}) {} still attached: ", last, count_of(total, "hook"));
  constexpr size_t kNamed = 6;
  for (size_t i = 0; i < owners.size() && i < kNamed; ++i) {
    text += fmt::format("{}{} {}{}", i ? ", " : "", owners[i].name, owners[i].hooks,
                        owners[i].destroyed ? " (owner destroyed)" : "");
  }
  if (owners.size() > kNamed) text += fmt::format(" and {} more", count_of(owners.size() - kNamed, "owner"));
  return text + ".";
}

void App::draw_diagnostics_panel() {
  diagnostics_view_.drawn = {};
  const bool open = ImGui::Begin("Diagnostics");
  const analysis::Model* m = session_.model();
  if (!open || !m) {
    if (open) ImGui::TextDisabled("No trace open.");
    ImGui::End();
    return;
  }
  if (findings_.model == nullptr) {
    ImGui::TextDisabled("diagnosing...");
    ImGui::End();
    return;
  }
  // A live run: the findings of the model as it was a moment ago, until the
  // grown model's are in (their event indices stay valid).
  if (findings_.model != m) ImGui::TextDisabled("updating...");
  if (findings_.findings->empty()) {
    if (diagnostics_view_.end_model != m) {
      diagnostics_view_.end_model = m;
      diagnostics_view_.end_text = attached_at_end(*m);
    }
    ImGui::PushTextWrapPos(0.f);
    ImGui::TextColored(col(kOkColor), "No findings.");
    const std::string end = drawable(diagnostics_view_.end_text);
    ImGui::TextUnformatted(end.c_str());
    ImGui::PopTextWrapPos();
    note_text_area(diagnostics_view_.drawn);
    note_row(diagnostics_view_.drawn, "none", end, true);
    ImGui::End();
    return;
  }
  diagnostics_refresh();
  diagnostics_filters();

  // ---- the groups, most severe first, then by kind ----
  DiagnosticsView& v = diagnostics_view_;
  const bool detail = v.selected < findings_.findings->size();
  const float detail_h = detail ? ImGui::GetTextLineHeightWithSpacing() * 6.f : 0.f;
  ImGui::BeginChild("findings", ImVec2(0.f, -detail_h));
  note_text_area(v.drawn);
  std::vector<size_t> order(v.groups.size());
  for (size_t g = 0; g < order.size(); ++g) order[g] = g;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return v.groups[a].severity < v.groups[b].severity; });
  bool any = false;
  for (size_t g : order) any |= diagnostics_group(g);
  if (!any) ImGui::TextDisabled("Every finding is filtered out.");
  ImGui::EndChild();
  if (detail) diagnostics_detail();
  ImGui::End();
}

// Groups the findings again when they changed, and the rows when the filter did.
void App::diagnostics_refresh() {
  const analysis::FindingTable& findings = *findings_.findings;
  DiagnosticsView& v = diagnostics_view_;
  if (v.model != findings_.model || v.num_findings != findings.size()) {
    v.model = findings_.model;
    v.num_findings = findings.size();
    v.groups = analysis::group_findings(findings);
    v.counts = analysis::count_findings(findings);
    v.filter = UINT32_MAX;  // rows below
    v.selected = SIZE_MAX;
  }
  if (v.filter == v.hidden) return;
  v.filter = v.hidden;
  v.rows.assign(v.groups.size(), {});
  v.occurrences.assign(v.groups.size(), {});
  for (size_t g = 0; g < v.groups.size(); ++g) {
    if (v.hidden & kind_bit(v.groups[g].kind)) continue;
    size_t sum = 0;
    for (uint32_t i = 0; i < findings.size(); ++i) {
      const analysis::FindingRow& f = findings.row(i);
      if (f.kind != v.groups[g].kind || (v.hidden & severity_bit(f.severity))) continue;
      v.rows[g].push_back(i);
      v.occurrences[g].push_back(sum += f.count);
    }
  }
}

// The summary line: a checkbox per severity, the kinds popup, "up to now".
void App::diagnostics_filters() {
  DiagnosticsView& v = diagnostics_view_;
  const analysis::FindingCounts& counts = v.counts;
  struct SeverityBox {
    Severity s;
    size_t n;
    const char* word;
  };
  for (const SeverityBox& b : {SeverityBox{Severity::kError, counts.errors, "errors"},
                               SeverityBox{Severity::kWarning, counts.warnings, "warnings"},
                               SeverityBox{Severity::kInfo, counts.infos, "info"}}) {
    bool shown = !(v.hidden & severity_bit(b.s));
    const std::string label = fmt::format("{} {}", b.n, b.word);
    ImGui::PushStyleColor(ImGuiCol_Text, b.n ? col(severity_color(b.s)) : ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (ImGui::Checkbox(label.c_str(), &shown)) v.hidden ^= severity_bit(b.s);
    ImGui::PopStyleColor();
    ImGui::SameLine();
  }
  if (ImGui::Button("kinds")) ImGui::OpenPopup("kinds");
  if (ImGui::BeginPopup("kinds")) {
    for (int k = 0; k < analysis::kNumFindingKinds; ++k) {
      const auto kind = static_cast<FindingKind>(k);
      bool shown = !(v.hidden & kind_bit(kind));
      const std::string label = fmt::format("{} ({})", analysis::to_string(kind), counts.per_kind[k]);
      if (ImGui::Checkbox(label.c_str(), &shown)) v.hidden ^= kind_bit(kind);
      if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", kind_help(kind));
    }
    ImGui::EndPopup();
  }
  ImGui::SameLine();
  ImGui::Checkbox("up to now", &v.up_to_current);
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("only findings that already hold at the current event (#%zu)", session_.current());
  }
}

// One kind's group: a tree node with its counts, its rows inside. False when
// the filters leave it no row.
bool App::diagnostics_group(size_t g) {
  const analysis::FindingTable& findings = *findings_.findings;
  const DiagnosticsView& v = diagnostics_view_;
  const analysis::FindingGroup& group = v.groups[g];
  const std::vector<uint32_t>& all_rows = v.rows[g];
  const size_t now = session_.current();
  // Rows are ordered by `at`: the ones already true are a prefix.
  size_t n = all_rows.size();
  if (v.up_to_current) {
    n = static_cast<size_t>(std::upper_bound(all_rows.begin(), all_rows.end(), now,
                                             [&](size_t e, uint32_t i) { return e < findings.row(i).at; }) -
                            all_rows.begin());
  }
  if (n == 0) return false;
  ImGui::PushID(static_cast<int>(g));
  ImGui::SetNextItemOpen(true, ImGuiCond_Once);
  const std::string kind(analysis::to_string(group.kind));
  const std::string label = fmt::format("{}###group", kind);
  ImGui::PushStyleColor(ImGuiCol_Text, col(severity_color(group.severity)));
  const bool node_open = ImGui::TreeNodeEx(label.c_str(), ImGuiTreeNodeFlags_SpanAvailWidth);
  ImGui::PopStyleColor();
  if (ImGui::IsItemHovered()) {
    ImGui::BeginTooltip();
    ImGui::Text("%s: %s", kind.c_str(), kind_help(group.kind));
    for (const auto& [owner, k] : group.owners) {
      if (owner == kNoIndex) continue;
      ImGui::BulletText("%s: %zu", session_.model()->owner_name(owner).c_str(), k);
    }
    ImGui::EndTooltip();
  }
  ImGui::SameLine();
  const size_t occurrences = v.occurrences[g][n - 1];
  if (occurrences != n) {
    ImGui::TextDisabled("%zu %s, %zu %s", n, n == 1 ? "finding" : "findings", occurrences, count_noun(group.kind));
  } else {
    ImGui::TextDisabled("%zu %s", n, n == 1 ? "finding" : "findings");
  }
  if (node_open) {
    diagnostics_rows(g, n);
    ImGui::TreePop();
  }
  ImGui::PopID();
  return true;
}

// The group's first `n` rows: at (a link that selects the finding), rank,
// message; findings that hold only after the current event are greyed.
void App::diagnostics_rows(size_t g, size_t n) {
  const analysis::FindingTable& findings = *findings_.findings;
  DiagnosticsView& v = diagnostics_view_;
  const std::vector<uint32_t>& all_rows = v.rows[g];
  const std::string kind(analysis::to_string(v.groups[g].kind));
  const size_t now = session_.current();
  if (!ImGui::BeginTable("rows", 3, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) return;
  ImGui::TableSetupColumn("at", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("#00000000").x);
  ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("r00").x);
  ImGui::TableSetupColumn("message", ImGuiTableColumnFlags_WidthStretch);
  // Messages wrap in their column. A clipper needs rows of one height, so
  // only a group too long to draw whole is clipped, its rows one line each
  // (the tooltip has the whole message).
  constexpr size_t kWrappedRows = 2000;
  const bool wrap = n <= kWrappedRows;
  auto row = [&](size_t r) {
    const uint32_t i = all_rows[r];
    const Finding f = findings[i];  // unpacked (Note [Compact findings])
    const bool future = f.at > now;
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    if (future) ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    char at[24];
    std::snprintf(at, sizeof(at), "#%zu##%u", f.at, i);
    if (ImGui::Selectable(at, v.selected == i, ImGuiSelectableFlags_SpanAllColumns)) {
      v.selected = i;
      jump_to(f.at, f.function);
      if (f.owner != kNoIndex) select_owner(f.owner);
    }
    const bool hovered = ImGui::IsItemHovered();
    ImGui::TableNextColumn();
    if (f.rank >= 0) ImGui::Text("r%d", f.rank);
    ImGui::TableNextColumn();
    if (f.count > 1) {
      ImGui::TextDisabled("x%zu", f.count);
      ImGui::SameLine();
    }
    if (wrap) {  // wrapped text is drawn whole: clipped first (Note [Drawable text])
      const std::string text = drawable(f.message);
      ImGui::PushTextWrapPos(0.f);
      ImGui::TextUnformatted(text.c_str());
      ImGui::PopTextWrapPos();
      note_row(v.drawn, kind, text, true);
    } else {
      ImGui::TextUnformatted(f.message.c_str());
      note_row(v.drawn, kind, f.message, false);
    }
    if (future) ImGui::PopStyleColor();
    if (hovered) finding_tooltip(f, kind, future);
  };
  if (wrap) {
    for (size_t r = 0; r < n; ++r) row(r);
  } else {
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(n));
    while (clipper.Step()) {
      for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) row(static_cast<size_t>(r));
    }
  }
  ImGui::EndTable();
}

// The selected finding below the groups: its kind, owner, Function, message
// and the events that prove it, as links.
void App::diagnostics_detail() {
  const analysis::Model& m = *session_.model();
  DiagnosticsView& v = diagnostics_view_;
  const Finding f = (*findings_.findings)[v.selected];
  ImGui::Separator();
  ImGui::TextColored(col(severity_color(f.severity)), "%s", std::string(analysis::to_string(f.kind)).c_str());
  if (f.owner != kNoIndex) {
    ImGui::SameLine();
    owner_label(f.owner, m.owners()[f.owner].destroyed_at <= session_.current());
  }
  if (f.function != kNoIndex) {
    ImGui::SameLine();
    const std::string fn = m.function_name(f.function);
    if (ImGui::SmallButton(fn.c_str())) select_function(f.function);
  }
  ImGui::PushTextWrapPos(0.f);
  ImGui::TextUnformatted(drawable(f.message).c_str());
  ImGui::PopTextWrapPos();
  ImGui::TextDisabled("proved by");
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  const float spacing = ImGui::GetStyle().ItemSpacing.x;
  for (size_t k = 0; k < f.events.size(); ++k) {
    const std::string text = fmt::format("#{}", f.events[k]);
    if (ImGui::GetItemRectMax().x + spacing + ImGui::CalcTextSize(text.c_str()).x < right) ImGui::SameLine();
    ImGui::PushID(static_cast<int>(k));
    event_link(f.events[k]);
    ImGui::PopID();
  }
  ImGui::SameLine();
  if (ImGui::SmallButton("close")) v.selected = SIZE_MAX;
}

}  // namespace hookscope::app
