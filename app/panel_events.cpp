// Events panel: every event in order, filterable by kind, click to jump.
#include <fmt/format.h>

#include <cstring>

#include "app_state.h"

namespace hookscope::app {

namespace {

std::string describe(const trace::Event& e, const trace::TraceData& t) {
  using trace::EventKind;
  switch (e.kind) {
    case EventKind::kNodeCreated:
    case EventKind::kNodeLabel:
      return fmt::format("#{} {}", e.node, t.str(e.arg));
    case EventKind::kNodeEdge:
      return fmt::format("#{} -> #{}", e.node, e.arg);
    case EventKind::kOwnerCreated:
      return fmt::format("owner {} '{}'", e.owner, t.str(e.arg));
    case EventKind::kHookAdded:
    case EventKind::kHookFired:
    case EventKind::kHookRemoved:
    case EventKind::kHookRemoveFailed:
      return fmt::format("{} hook key {} on #{} owner {}{}", trace::to_string(static_cast<trace::HookKind>(e.sub)),
                         e.key, e.node, e.owner,
                         e.actor ? fmt::format(" by {}", e.actor) : std::string());
    default:
      return e.node ? fmt::format("#{}", e.node) : std::string();
  }
}

}  // namespace

void App::draw_events_panel() {
  ImGui::Begin("Events", nullptr, ImGuiWindowFlags_NoMove | ImGuiWindowFlags_NoResize |
                                      ImGuiWindowFlags_NoCollapse);
  ImGui::SetNextItemWidth(-1);
  ImGui::InputTextWithHint("##filter", "filter by kind, e.g. hook_fire", filter_, sizeof(filter_));
  std::vector<size_t> rows;
  rows.reserve(events_.size());
  for (size_t i = 0; i < events_.size(); ++i) {
    if (filter_[0] == 0 || trace::to_string(events_[i].kind).find(filter_) != std::string_view::npos) {
      rows.push_back(i);
    }
  }
  if (ImGui::BeginTable("events", 5,
                        ImGuiTableFlags_ScrollY | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV |
                            ImGuiTableFlags_Resizable)) {
    ImGui::TableSetupScrollFreeze(0, 1);
    ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, 70);
    ImGui::TableSetupColumn("t (ms)", ImGuiTableColumnFlags_WidthFixed, 80);
    ImGui::TableSetupColumn("rank", ImGuiTableColumnFlags_WidthFixed, 40);
    ImGui::TableSetupColumn("kind", ImGuiTableColumnFlags_WidthFixed, 170);
    ImGui::TableSetupColumn("what");
    ImGui::TableHeadersRow();
    ImGuiListClipper clipper;
    clipper.Begin(static_cast<int>(rows.size()));
    while (clipper.Step()) {
      for (int r = clipper.DisplayStart; r < clipper.DisplayEnd; ++r) {
        const size_t i = rows[static_cast<size_t>(r)];
        const trace::Event& e = events_[i];
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        const std::string id = fmt::format("{}", i);
        if (ImGui::Selectable(id.c_str(), i == current_, ImGuiSelectableFlags_SpanAllColumns)) current_ = i;
        ImGui::TableNextColumn();
        ImGui::Text("%.3f", (e.t_ns - events_.front().t_ns) / 1e6);
        ImGui::TableNextColumn();
        ImGui::Text("%u", static_cast<unsigned>(e.rank));
        ImGui::TableNextColumn();
        const auto kind = trace::to_string(e.kind);
        ImGui::TextUnformatted(kind.data(), kind.data() + kind.size());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(describe(e, traces_[event_trace_[i]]).c_str());
      }
    }
    ImGui::EndTable();
  }
  ImGui::End();
}

}  // namespace hookscope::app
