// "Why did this fire?" panel: when the current event is a hook fire, the
// chain that explains it (analysis/explain.h): who added the hook and when,
// whether its owner was destroyed or the hook removed before it fired, the
// backward pass that fired it, what its Reducer did with it. Every step's
// event is a link.
#include <fmt/format.h>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"

namespace hookscope::app {

namespace {

using render::palette;

uint32_t verdict_color(analysis::FireVerdict v) {
  switch (v) {
    case analysis::FireVerdict::kNormal: return palette().text;
    case analysis::FireVerdict::kStale: return palette().alarm;
    case analysis::FireVerdict::kAfterRemoval: return palette().removed;
    case analysis::FireVerdict::kUnproven: return palette().alarm;
    case analysis::FireVerdict::kLingering: return palette().lingering;  // Note [Lingering owners]
  }
  return palette().text;
}

}  // namespace

void App::draw_explain_panel() {
  ViewPanels& v = views_;
  const analysis::Model* m = session_.model();
  if (!begin_trace_panel("Why did this fire?", &v.show_explain, m)) return;
  const size_t now = session_.current();
  if (v.explain_model != m || v.explained_event != now) {
    v.explain_model = m;
    v.explained_event = now;
    v.explanation.reset();
    v.explain_error.clear();
    v.changes = changes_since_previous(*m, now);
    if (m->event(now).kind == trace::EventKind::kHookFired) {
      try {
        v.explanation = analysis::explain_fire(*m, now);
      } catch (const std::exception& e) {
        v.explain_error = e.what();
      }
    }
  }
  ViewsDrawStats& s = v.stats;
  s.explain_verdict.clear();
  s.explain_summary.clear();
  s.explain_steps = s.explain_links = 0;
  if (!v.explanation) {
    if (!v.explain_error.empty()) {
      ImGui::TextWrapped("Cannot explain #%zu: %s", now, drawable(v.explain_error).c_str());
    } else {
      ImGui::TextWrapped("#%zu is a %s, not a hook fire. Go to a hook_fire event (Events panel, a fire tick in "
                         "Lanes, or Ctrl+Right with step kind hook_fire) to see why it fired.",
                         now, std::string(trace::to_string(m->event(now).kind)).c_str());
    }
    draw_changes_section();
    ImGui::End();
    return;
  }
  const analysis::Explanation& x = *v.explanation;
  s.explain_verdict = analysis::to_string(x.verdict);
  s.explain_summary = x.summary;
  s.explain_steps = static_cast<uint32_t>(x.steps.size());
  ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(verdict_color(x.verdict)), "%s fire",
                     std::string(analysis::to_string(x.verdict)).c_str());
  ImGui::SameLine();
  event_link(x.fire);
  ImGui::PushTextWrapPos(0.f);
  ImGui::TextUnformatted(drawable(x.summary).c_str());  // Note [Drawable text]
  ImGui::PopTextWrapPos();
  ImGui::Separator();
  for (size_t i = 0; i < x.steps.size(); ++i) {
    const analysis::ExplainStep& step = x.steps[i];
    ImGui::PushID(static_cast<int>(i));
    ImGui::TextDisabled("%zu.", i + 1);
    ImGui::SameLine();
    if (step.at != analysis::kNever) {
      ++s.explain_links;
      if (event_link(step.at)) {
        const analysis::FunctionIndex f = session_.function_of_event(step.at);
        if (f != analysis::kNoIndex) select_function(f);
      }
      ImGui::SameLine();
    }
    ImGui::PushTextWrapPos(0.f);
    ImGui::TextUnformatted(drawable(step.text).c_str());
    ImGui::PopTextWrapPos();
    ImGui::PopID();
  }
  draw_changes_section();
  ImGui::End();
}

void App::draw_changes_section() {
  const analysis::Model* m = session_.model();
  const EventChanges& c = views_.changes;
  if (!m || c.at >= m->num_events()) return;
  ImGui::Spacing();
  ImGui::Separator();
  const std::string kind(trace::to_string(m->event(c.at).kind));
  ImGui::TextDisabled("What changed on rank %u since", static_cast<unsigned>(m->event(c.at).rank));
  ImGui::SameLine();
  if (c.since != analysis::kNever) {
    ImGui::TextDisabled("the previous %s", kind.c_str());
    ImGui::SameLine();
    event_link(c.since);
  } else {
    ImGui::TextDisabled("#%zu (no earlier %s)", c.scanned_from, kind.c_str());
  }
  auto list = [&](const char* what, const std::vector<analysis::EventIndex>& events, size_t total, uint32_t color) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(total ? color : palette().text_dim), "%zu %s", total, what);
    for (size_t i = 0; i < events.size(); ++i) {
      ImGui::PushID(what);
      ImGui::PushID(static_cast<int>(i));
      ImGui::Indent();
      event_link(events[i]);
      ImGui::SameLine();
      const std::string line = m->describe(events[i]);  // "#i r0 ...": the link says #i
      const size_t space = line.find(' ');
      const std::string_view rest = space == std::string::npos ? line : std::string_view(line).substr(space + 1);
      ImGui::TextDisabled("%s", drawable(rest).c_str());
      ImGui::Unindent();
      ImGui::PopID();
      ImGui::PopID();
    }
    if (total > events.size()) ImGui::TextDisabled("    ... and %zu more", total - events.size());
  };
  list("hooks added", c.added, c.num_added, palette().running);
  list("hooks removed", c.removed, c.num_removed, palette().removed);
  list("fires", c.fired, c.num_fired, palette().text);
}

}  // namespace hookscope::app
