// Function panel: the selected Function's hooks at the current event, per
// kind in firing order (Note [Hook firing order] in core/autograd), with each
// hook's owner, fires so far, and where it was added and removed as links;
// below, every hook ever on it. With no Function selected, the selected
// owner and where its hooks are now. Shared helpers: app/panel_common.h.
#include <fmt/format.h>

#include <algorithm>

#include "app.h"
#include "panel_common.h"
#include "render/layout/colors.h"
#include "trace/hook_key.h"

namespace hookscope::app {

namespace {

using render::palette;
using analysis::kNever;
using analysis::kNoIndex;

// How a hook's time on a Function ended, in a few words.
std::string end_words(const analysis::Model& m, const analysis::HookInfo& h) {
  if (h.implicit_end) return "dropped with its Function";
  std::string out(trace::to_string(h.cause));
  if (h.removed_by != kNoIndex && h.removed_by != h.owner) out += " by " + m.owner_name(h.removed_by);
  return out;
}

}  // namespace

// ---------------------------------------------------------------- the panel

using render::palette;
using analysis::kNever;
using analysis::kNoIndex;

// One row of a hook table: key, owner, fires, added, ended. Greyed when the
// hook is not on the Function at the current event.
struct App::HookRow {
  analysis::HookIndex hook = kNoIndex;
  uint32_t fires = 0;
  analysis::EventIndex from = 0;
  analysis::EventIndex to = kNever;
  bool on_tensor = false;
};

namespace {

bool begin_hook_table(const char* id, const char* added_title) {
  if (!ImGui::BeginTable(id, 6, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV)) {
    return false;
  }
  ImGui::TableSetupColumn("kind");
  ImGui::TableSetupColumn("key");
  ImGui::TableSetupColumn("owner");
  ImGui::TableSetupColumn("fires");
  ImGui::TableSetupColumn(added_title);
  ImGui::TableSetupColumn("removed", ImGuiTableColumnFlags_WidthStretch);
  ImGui::TableHeadersRow();
  return true;
}

}  // namespace

App::HookRow App::hook_row(const analysis::HookAt& at, bool on_tensor) const {
  const analysis::Model* m = session_.model();
  HookRow r;
  r.hook = at.hook;
  r.fires = at.fires;
  r.from = at.since;
  const analysis::HookInfo& h = m->hooks()[at.hook];
  // The end of this stay: the hook's end, or a move (tensor <-> Function).
  r.to = h.ended_at;
  const auto segs = m->segments_of(at.function);
  auto it = std::lower_bound(segs.begin(), segs.end(), at.since, [&](uint32_t s, analysis::EventIndex e) {
    return m->segments()[s].from < e;
  });
  for (; it != segs.end() && m->segments()[*it].from == at.since; ++it) {
    if (m->segments()[*it].hook == at.hook) r.to = m->segments()[*it].to;
  }
  r.on_tensor = on_tensor;
  return r;
}

// One hook as table cells (the caller opened the row).
void App::hook_cells(const HookRow& r, bool show_kind, bool grey) {
  const analysis::Model* m = session_.model();
  const size_t now = session_.current();
  const analysis::HookInfo& h = m->hooks()[r.hook];
  const analysis::OwnerInfo* o = h.owner < m->owners().size() ? &m->owners()[h.owner] : nullptr;
  const bool dead = o && o->destroyed_at <= now;
  if (grey) ImGui::PushStyleVar(ImGuiStyleVar_Alpha, ImGui::GetStyle().Alpha * 0.45f);
  ImGui::TableNextColumn();
  if (show_kind) ImGui::TextUnformatted(kind_name(static_cast<int>(h.kind)));
  ImGui::TableNextColumn();
  ImGui::TextUnformatted(key_text(h.key).c_str());
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("key %llu (serial %llu, slot %llu)%s", static_cast<unsigned long long>(h.key),
                      static_cast<unsigned long long>(trace::hook_key_serial(h.key)),
                      static_cast<unsigned long long>(trace::hook_key_slot(h.key)),
                      r.on_tensor ? "\non the leaf tensor: its AccumulateGrad was released" : "");
  }
  ImGui::TableNextColumn();
  owner_label(h.owner, dead);
  if (o && o->destroyed_at != kNever) {
    ImGui::SameLine();
    if (dead) {
      ImGui::TextColored(col(palette().alarm), "destroyed");
    } else {
      ImGui::TextDisabled("destroyed later");
    }
    ImGui::SameLine(0.f, 4.f);
    event_link(o->destroyed_at);
  }
  ImGui::TableNextColumn();
  // Fires before and after the owner's destruction (after: stale, Note [Run story]).
  const uint32_t stale = dead ? m->fires_until(r.hook, now) - m->fires_until(r.hook, o->destroyed_at) : 0;
  if (stale > 0) {
    ImGui::Text("%u", r.fires - std::min(r.fires, stale));
    ImGui::SameLine(0.f, 4.f);
    ImGui::TextColored(col(palette().stale), "+ %u stale", stale);
    if (ImGui::IsItemHovered()) {
      ImGui::SetTooltip("%u fire%s before %s was destroyed at #%u, %u after it (stale fires)",
                        r.fires - std::min(r.fires, stale), r.fires - std::min(r.fires, stale) == 1 ? "" : "s",
                        m->owner_name(h.owner).c_str(), o->destroyed_at, stale);
    }
  } else {
    ImGui::Text("%u", r.fires);
  }
  ImGui::TableNextColumn();
  event_link(r.from);
  if (r.from != h.added_at) {
    ImGui::SameLine();
    ImGui::TextDisabled("(added");
    ImGui::SameLine(0.f, 4.f);
    event_link(h.added_at);
    ImGui::SameLine(0.f, 0.f);
    ImGui::TextDisabled(")");
  }
  ImGui::TableNextColumn();
  if (r.to == kNever) {
    ImGui::TextDisabled("attached at the end");
  } else {
    event_link(r.to);
    ImGui::SameLine();
    if (r.to == h.ended_at) {
      ImGui::TextDisabled("%s", end_words(*m, h).c_str());
    } else {
      ImGui::TextDisabled("moved");
    }
  }
  if (grey) ImGui::PopStyleVar();
}

void App::draw_inspector_panel() {
  const bool open = ImGui::Begin("Function");
  const analysis::Model* m = session_.model();
  if (!open || !m) {
    if (open) ImGui::TextDisabled("No trace open.");
  } else if (const analysis::FunctionIndex f = session_.selected_function(); f < m->functions().size()) {
    if (inspector_function_header(f)) {
      inspector_hooks_now(f);
      inspector_history(f);
    }
  } else if (const analysis::OwnerIndex o = session_.selected_owner(); o < m->owners().size()) {
    inspector_owner(o);
    inspector_owner_hooks(o);
  } else {
    ImGui::TextDisabled("Click a Function in the graph to see its hooks,");
    ImGui::TextDisabled("or a hook chip to see its owner.");
  }
  ImGui::End();
}

// ---- with an owner selected (no Function): who it is, then where its hooks are ----

void App::inspector_owner(analysis::OwnerIndex o) {
  const analysis::Model* m = session_.model();
  const size_t now = session_.current();
  const analysis::OwnerInfo& info = m->owners()[o];
  const bool dead = info.destroyed_at <= now;
  owner_label(o, dead);
  ImGui::SameLine();
  ImGui::TextDisabled("%s · rank %u · owner id %u", std::string(trace::to_string(info.kind)).c_str(),
                     static_cast<unsigned>(info.rank), info.id);
  ImGui::TextDisabled("created");
  ImGui::SameLine();
  event_link(info.created_at);
  ImGui::SameLine();
  if (info.destroyed_at == kNever) {
    ImGui::TextDisabled("· never destroyed");
  } else {
    if (dead) {
      ImGui::TextColored(col(palette().alarm), "· destroyed");
    } else {
      ImGui::TextDisabled("· destroyed later");
    }
    ImGui::SameLine();
    event_link(info.destroyed_at);
  }
  const analysis::ReducerIndex ri = m->reducer_of(o);
  if (ri != kNoIndex) {
    const analysis::ReducerInfo& r = m->reducers()[ri];
    ImGui::TextDisabled("Reducer: %s, %s, destroy policy %s", count_of(r.num_parameters, "parameter").c_str(),
                        count_of(r.num_buckets, "bucket").c_str(), std::string(trace::to_string(r.policy)).c_str());
  }
}

void App::inspector_owner_hooks(analysis::OwnerIndex o) {
  const analysis::Model* m = session_.model();
  const size_t now = session_.current();
  ImGui::Separator();
  const analysis::State* full = full_state_or_pending(session_);
  if (!full) return;
  const analysis::State& st = *full;
  const bool dead = m->owners()[o].destroyed_at <= now;
  if (owner_hooks_.model != m || owner_hooks_.at != now || owner_hooks_.owner != o) {
    owner_hooks_.model = m;
    owner_hooks_.at = now;
    owner_hooks_.owner = o;
    owner_hooks_.hooks.clear();
    for (const analysis::FunctionAt& fa : st.functions) {
      for (const auto& list : fa.hooks) {
        for (const analysis::HookAt& h : list) {
          if (m->hooks()[h.hook].owner == o) owner_hooks_.hooks.push_back(h);
        }
      }
    }
    for (const analysis::HookAt& h : st.tensor_hooks) {
      if (m->hooks()[h.hook].owner == o) owner_hooks_.hooks.push_back(h);
    }
  }
  const auto& hooks = owner_hooks_.hooks;
  if (hooks.empty()) {
    ImGui::TextDisabled("No hooks of %s attached at #%zu.", m->owner_name(o).c_str(), now);
  } else {
    if (dead) {
      ImGui::TextColored(col(palette().alarm), "%zu hook%s still attached after their owner was destroyed (leaked):",
                         hooks.size(), hooks.size() == 1 ? "" : "s");
    } else {
      ImGui::Text("%zu hook%s attached at #%zu:", hooks.size(), hooks.size() == 1 ? "" : "s", now);
    }
    if (ImGui::BeginTable("owner_hooks", 5, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg |
                                                ImGuiTableFlags_ScrollY | ImGuiTableFlags_BordersInnerV)) {
      ImGui::TableSetupScrollFreeze(0, 1);
      ImGui::TableSetupColumn("Function", ImGuiTableColumnFlags_WidthStretch);
      ImGui::TableSetupColumn("kind");
      ImGui::TableSetupColumn("key");
      ImGui::TableSetupColumn("fires");
      ImGui::TableSetupColumn("since");
      ImGui::TableHeadersRow();
      ImGuiListClipper clipper;
      clipper.Begin(static_cast<int>(hooks.size()));
      while (clipper.Step()) {
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
          const analysis::HookAt& h = hooks[static_cast<size_t>(i)];
          const analysis::HookInfo& info_h = m->hooks()[h.hook];
          const bool on_tensor = st.find(h.function) == nullptr;
          ImGui::TableNextRow();
          ImGui::TableNextColumn();
          ImGui::PushID(i);
          const std::string name = (on_tensor ? "leaf tensor of " : "") + m->function_name(h.function);
          if (ImGui::Selectable(name.c_str(), false)) select_function(h.function);
          if (ImGui::IsItemHovered()) ImGui::SetTooltip("click: select this Function");
          ImGui::PopID();
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(kind_name(static_cast<int>(info_h.kind)));
          ImGui::TableNextColumn();
          ImGui::TextUnformatted(key_text(info_h.key).c_str());
          ImGui::TableNextColumn();
          ImGui::Text("%u", h.fires);
          ImGui::TableNextColumn();
          event_link(h.since);
        }
      }
      ImGui::EndTable();
    }
  }
}

// ---- with a Function selected ----

// Its name, ids, lifetime and the same leaf's other AccumulateGrads; false
// when the user cleared the selection.
bool App::inspector_function_header(analysis::FunctionIndex f) {
  const analysis::Model* m = session_.model();
  const analysis::FunctionInfo& info = m->functions()[f];
  ImGui::TextColored(ImGui::GetStyleColorVec4(ImGuiCol_Text), "%s", m->function_name(f).c_str());
  ImGui::SameLine();
  if (ImGui::SmallButton("x")) {
    select_function(kNoIndex);
    return false;
  }
  if (ImGui::IsItemHovered()) ImGui::SetTooltip("clear the selection");
  ImGui::TextDisabled("Function #%llu · rank %u%s", static_cast<unsigned long long>(info.id),
                     static_cast<unsigned>(info.rank), info.is_leaf_accumulator() ? " · leaf AccumulateGrad" : "");
  if (m->num_traces() > 1) {
    ImGui::SameLine();
    ImGui::TextDisabled("· trace %u", info.source);
  }
  ImGui::TextDisabled("created");
  ImGui::SameLine();
  event_link(info.created_at);
  ImGui::SameLine();
  if (info.released_at == kNever) {
    ImGui::TextDisabled("· never released");
  } else {
    ImGui::TextDisabled("· released");
    ImGui::SameLine();
    event_link(info.released_at);
  }
  if (info.is_leaf_accumulator() && (info.previous != kNoIndex || info.next != kNoIndex)) {
    ImGui::TextDisabled("same leaf:");
    for (const auto& [other, word] : {std::pair{info.previous, "previous"}, std::pair{info.next, "next"}}) {
      if (other == kNoIndex) continue;
      ImGui::SameLine();
      ImGui::PushID(word);
      const std::string label = fmt::format("{} AccumulateGrad #{}", word, m->functions()[other].id);
      if (ImGui::SmallButton(label.c_str())) select_function(other);
      ImGui::PopID();
      if (ImGui::IsItemHovered()) {
        ImGui::SetTooltip("%s\ncreated #%u\nclick: select it", m->function_name(other).c_str(),
                          m->functions()[other].created_at);
      }
    }
  }

  return true;
}

// Its hooks at the current event, in firing order; a leaf's on its tensor.
void App::inspector_hooks_now(analysis::FunctionIndex f) {
  const analysis::Model* m = session_.model();
  const size_t now = session_.current();
  const analysis::FunctionInfo& info = m->functions()[f];
  ImGui::Separator();
  const analysis::State* full = full_state_or_pending(session_);
  if (!full) return;
  const analysis::State& st = *full;
  const analysis::FunctionAt* fa = st.find(f);
  if (!fa) {
    if (now < info.created_at) {
      ImGui::TextDisabled("Not created yet at #%zu.", now);
    } else {
      ImGui::TextDisabled("Released before #%zu: no hooks on it now.", now);
    }
  } else if (fa->num_hooks() == 0) {
    ImGui::TextDisabled("No hooks at #%zu.", now);
  } else {
    ImGui::Text("%zu hook%s at #%zu, in firing order:", fa->num_hooks(), fa->num_hooks() == 1 ? "" : "s", now);
    if (begin_hook_table("hooks", "on since")) {
      // Note [Hook firing order]: tensor pre, retain_grad, pre, (apply), post, post-accumulate.
      for (int k = 0; k < trace::kNumHookKinds; ++k) {
        bool first = true;
        for (const analysis::HookAt& h : fa->hooks[static_cast<size_t>(k)]) {
          ImGui::TableNextRow();
          ImGui::PushID(static_cast<int>(h.hook));
          hook_cells(hook_row(h, false), first, false);
          ImGui::PopID();
          first = false;
        }
      }
      ImGui::EndTable();
    }
  }

  // A leaf's hooks wait on its tensor while it has no AccumulateGrad
  // (Note [Leaf hooks live on the tensor]).
  if (info.is_leaf_accumulator() && !fa) {
    bool any = false;
    for (const analysis::HookAt& h : st.tensor_hooks) {
      if (h.function != f) continue;
      if (!any) {
        ImGui::Spacing();
        ImGui::Text("On the leaf tensor now (it has no AccumulateGrad):");
        if (!begin_hook_table("tensor_hooks", "on tensor since")) break;
        any = true;
      }
      ImGui::TableNextRow();
      ImGui::PushID(static_cast<int>(h.hook));
      hook_cells(hook_row(h, true), true, false);
      ImGui::PopID();
    }
    if (any) ImGui::EndTable();
  }

}

void App::inspector_history(analysis::FunctionIndex f) {
  const analysis::Model* m = session_.model();
  const size_t now = session_.current();
  // Every hook ever on it, so that hooks removed before now are still seen.
  const auto segments = m->segments_of(f);
  ImGui::Spacing();
  // A row per time a hook was on it (a leaf's tensor hook moved to its
  // AccumulateGrad is on it twice): attachments, not hooks.
  const std::string history =
      fmt::format("History: {} over the run###history", count_of(segments.size(), "hook attachment"));
  ImGui::SetNextItemOpen(true, ImGuiCond_Once);
  if (!segments.empty() && ImGui::CollapsingHeader(history.c_str())) {
    ImGui::TextDisabled("greyed: not on it at the current event");
    if (begin_hook_table("history", "from")) {
      ImGuiListClipper clipper;
      clipper.Begin(static_cast<int>(segments.size()));
      while (clipper.Step()) {
        for (int i = clipper.DisplayStart; i < clipper.DisplayEnd; ++i) {
          const analysis::HookSegment& seg = m->segments()[segments[static_cast<size_t>(i)]];
          HookRow r;
          r.hook = seg.hook;
          r.from = seg.from;
          r.to = seg.to;
          r.on_tensor = seg.on_tensor;
          r.fires = m->fires_until(seg.hook, now);
          const bool here = seg.from <= now && now < seg.to;
          ImGui::TableNextRow();
          ImGui::PushID(i);
          hook_cells(r, true, !here);
          ImGui::PopID();
        }
      }
      ImGui::EndTable();
    }
  }
}

}  // namespace hookscope::app
