// The hook badges of a box (Note [Box contents]): which chips, where, and
// what hovering or clicking them shows and selects.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "analysis/owner_status.h"
#include "render/layout/colors.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

using analysis::kNoIndex;

float GraphView::place_chips(std::vector<Chip>& chips, const GraphScene& scene, float left,
                             float right, const BoxMetrics& m, float* kind_x) {
  const float fs = chip_font(m);
  const float plus = text_width(fs, "+99") + m.chip_gap;
  float x = left;
  int last_kind = -1;
  char buf[48];
  for (size_t i = 0; i < chips.size(); ++i) {
    Chip& c = chips[i];
    if (c.kind != last_kind) {
      if (last_kind >= 0) x += m.kind_gap;
      const std::string_view tag = box_kind_tag(m, static_cast<trace::HookKind>(c.kind));
      kind_x[c.kind] = x;
      if (!tag.empty()) x += text_width(fs, tag.data(), tag.data() + tag.size()) + m.chip_gap;
      last_kind = c.kind;
    }
    const int len = chip_text(buf, sizeof buf, scene.owner_tag(c.owner), c.count);
    const float w = text_width(fs, buf, buf + len) + 2.f * m.chip_pad + (c.alarm() ? text_width(fs, "!") : 0.f);
    const bool last = i + 1 == chips.size();
    if (x + w > right - (last ? 0.f : plus)) {
      for (size_t j = i; j < chips.size(); ++j) chips[j].x0 = chips[j].x1 = NAN;
      return x;
    }
    c.x0 = x;
    c.x1 = x + w;
    x += w + m.chip_gap;
  }
  return NAN;
}

bool GraphView::same_chip(const Chip& a, const Chip& b) {
  return a.kind == b.kind && a.owner == b.owner && a.dead == b.dead && a.lingering == b.lingering &&
         a.removed == b.removed;
}

// A hook after the last chip: one more in its run, or a chip of its own.
void GraphView::push_chip(std::vector<Chip>& out, const Chip& c) {
  if (!out.empty() && same_chip(out.back(), c)) {
    Chip& last = out.back();
    ++last.count;
    last.fires += c.fires;
    last.flash |= c.flash;
    last.stale |= c.stale;
    last.age = std::min(last.age, c.age);
    return;
  }
  out.push_back(c);
}

// A folded group: one chip per (kind, owner, alive, removed) over all its members.
void GraphView::merge_group_chips(std::vector<Chip>& out) {
  std::stable_sort(out.begin(), out.end(), [](const Chip& a, const Chip& b) {
    return std::tie(a.kind, a.removed, a.owner, a.dead, a.lingering) <
           std::tie(b.kind, b.removed, b.owner, b.dead, b.lingering);
  });
  size_t w = 0;
  for (size_t i = 0; i < out.size(); ++i) {
    if (w > 0 && same_chip(out[w - 1], out[i])) {
      out[w - 1].count = static_cast<uint16_t>(out[w - 1].count + out[i].count);
      out[w - 1].fires += out[i].fires;
      out[w - 1].flash |= out[i].flash;
      out[w - 1].stale |= out[i].stale;
    } else {
      out[w++] = out[i];
    }
  }
  out.resize(w);
}

GraphView::Chip GraphView::hook_chip(const Frame& f, uint8_t kind, const analysis::HookAt& h) const {
  Chip c;
  c.kind = kind;
  c.owner = model_->hooks()[h.hook].owner;
  const uint8_t status = f.src->owner_status(c.owner);
  c.dead = status == static_cast<uint8_t>(analysis::OwnerStatus::kDestroyed);
  c.lingering = status == static_cast<uint8_t>(analysis::OwnerStatus::kLingering);
  c.flash = h.hook == f.firing_hook;
  c.stale = c.flash && f.firing_stale;
  c.count = 1;
  c.fires = h.fires;
  c.first_hook = h.hook;
  return c;
}

// Hooks removed from `function` in the last ghost_events events: ghosts.
void GraphView::ghost_chips(const Frame& f, analysis::FunctionIndex function, std::vector<Chip>& out) const {
  const analysis::Model& model = *model_;
  const size_t now = f.state->index;
  for (uint32_t si : model.segments_of(function)) {
    const analysis::HookSegment& seg = model.segments()[si];
    if (seg.to == analysis::kNever || seg.to > now || seg.to + options_.ghost_events <= now) continue;
    const analysis::HookInfo& info = model.hooks()[seg.hook];
    if (info.implicit_end || info.ended_at != seg.to) continue;
    Chip c;
    c.kind = static_cast<uint8_t>(info.kind);
    c.owner = info.owner;
    c.removed = true;
    c.age = static_cast<uint32_t>(now - seg.to);
    c.count = 1;
    c.first_hook = seg.hook;
    push_chip(out, c);
  }
}

// A slot's chips: its live Function's hooks, the module hooks anchored on
// it, the ghosts of removed ones, its leaf's hooks on the tensor.
void GraphView::slot_chips(const Frame& f, uint32_t slot, std::vector<Chip>& out) const {
  const analysis::Model& model = *model_;
  if (const analysis::FunctionAt* fa = f.src->function_at(slot)) {
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      for (const analysis::HookAt& h : fa->hooks[k]) push_chip(out, hook_chip(f, static_cast<uint8_t>(k), h));
    }
    // Module hooks attached now and anchored here (Note [Module hook anchors]).
    scene_->for_module_hooks_on(fa->function, f.state->module_hooks, [&](const analysis::HookAt& h) {
      push_chip(out, hook_chip(f, static_cast<uint8_t>(model.hooks()[h.hook].kind), h));
    });
    ghost_chips(f, fa->function, out);
  }
  const auto ghosts = f.src->tensor_hooks(slot);
  auto it = std::lower_bound(ghosts.begin(), ghosts.end(), slot,
                             [](const auto& p, uint32_t s) { return p.first < s; });
  for (; it != ghosts.end() && it->first == slot; ++it) {
    push_chip(out, hook_chip(f, static_cast<uint8_t>(model.hooks()[it->second->hook].kind), *it->second));
  }
}

void GraphView::chips_of(const Frame& f, uint32_t unit, std::vector<Chip>& out) const {
  out.clear();
  const FoldedGraph& fg = *folded_;
  const uint32_t g = fg.group_of_unit[unit];
  if (g == kNoGroup) {
    slot_chips(f, fg.node_of_unit[unit], out);
    // Tensor hooks came after the Function's own: keep kinds together.
    std::stable_sort(out.begin(), out.end(), [](const Chip& a, const Chip& b) { return a.kind < b.kind; });
    return;
  }
  for (uint32_t slot : scene_->groups()[g].nodes) slot_chips(f, slot, out);
  merge_group_chips(out);
}

void GraphView::hover_and_click(Frame& f) {
  const uint32_t u = f.hovered_unit;
  if (u == kNone) {  // a click on the background clears the selection
    if (f.clicked) {
      f.result.selection_changed = true;
      selected_function_ = kNoIndex;
      selected_owner_ = kNoIndex;
    }
    return;
  }
  const FoldedGraph& fg = *folded_;
  const BoxMetrics& m = metrics_;
  const uint32_t g = fg.group_of_unit[u];
  const uint32_t slot = g == kNoGroup ? fg.node_of_unit[u] : kNoSlot;
  const analysis::FunctionAt* fa = slot != kNoSlot ? f.src->function_at(slot) : nullptr;
  chips_of(f, u, f.chips);
  float kind_x[trace::kNumHookKinds] = {};
  float left, right, row_top;
  chip_row(u, &left, &right, &row_top);
  place_chips(f.chips, *scene_, left, right, m, kind_x);
  const Vec2 p = f.to_world(ImGui::GetIO().MousePos);
  const Chip* hovered_chip = nullptr;
  if (f.detail == GraphDetail::kFull && p.y >= row_top && p.y <= row_top + m.chip_height) {
    for (const Chip& chip : f.chips) {
      if (!std::isnan(chip.x0) && p.x >= chip.x0 && p.x <= chip.x1) hovered_chip = &chip;
    }
  }
  f.result.hovered_function = fa ? fa->function : kNoIndex;
  f.result.hovered_hook = hovered_chip ? hovered_chip->first_hook : kNoIndex;
  if (f.clicked) {
    f.result.selection_changed = true;
    if (hovered_chip) {
      selected_owner_ = selected_owner_ == hovered_chip->owner ? kNoIndex : hovered_chip->owner;
    } else if (fa) {
      selected_function_ = fa->function;
    }
  }
  if (f.double_clicked && g != kNoGroup) set_folded(g, false);
  if (ImGui::IsMouseDragging(ImGuiMouseButton_Left)) return;
  box_tooltip(f, u, hovered_chip);
}

// What the box is, and its hooks: of the badge under the mouse, else all of them.
void GraphView::box_tooltip(const Frame& f, uint32_t u, const Chip* hovered_chip) {
  const analysis::Model& model = *model_;
  const FoldedGraph& fg = *folded_;
  const uint32_t g = fg.group_of_unit[u];
  const uint32_t slot = g == kNoGroup ? fg.node_of_unit[u] : kNoSlot;
  const analysis::FunctionAt* fa = slot != kNoSlot ? f.src->function_at(slot) : nullptr;
  ImGui::BeginTooltip();
  if (g != kNoGroup) {
    ImGui::Text("%s", scene_->unit_title(fg, u).c_str());
    ImGui::TextDisabled("%s, %u live; double-click to expand", scene_->unit_label(fg, u).c_str(), f.src->live_in(u));
  } else if (fa) {
    const analysis::FunctionInfo& info = model.functions()[fa->function];
    ImGui::Text("%s", model.function_name(fa->function).c_str());
    ImGui::TextDisabled("Function #%llu, rank %u, created at event %u", static_cast<unsigned long long>(info.id),
                        info.rank, info.created_at);
    if (scene_->generations().label_from(fa->function) <= f.state->index) {  // Note [Module generations]
      ImGui::TextDisabled("module copy of process group generation %u (the parameter exists in other generations too)",
                          scene_->generations().of_function(fa->function));
    }
  } else {
    ImGui::Text("%s", model.str(scene_->nodes()[slot].label).c_str());
    ImGui::TextDisabled("leaf tensor without an AccumulateGrad now: its hooks wait on the tensor");
  }
  std::vector<std::pair<uint8_t, const analysis::HookAt*>> hooks;
  auto collect = [&](uint32_t sl) {
    if (const analysis::FunctionAt* live = f.src->function_at(sl)) {
      for (int k = 0; k < trace::kNumHookKinds; ++k) {
        for (const auto& h : live->hooks[k]) hooks.push_back({static_cast<uint8_t>(k), &h});
      }
    }
    for (const auto& [gs, h] : f.src->tensor_hooks(sl)) {
      if (gs == sl) hooks.push_back({static_cast<uint8_t>(model.hooks()[h->hook].kind), h});
    }
  };
  if (g == kNoGroup) {
    collect(slot);
  } else {
    for (uint32_t sl : scene_->groups()[g].nodes) collect(sl);
  }
  if (hovered_chip) {
    std::erase_if(hooks, [&](const auto& kh) {
      const analysis::OwnerIndex o = model.hooks()[kh.second->hook].owner;
      return kh.first != hovered_chip->kind || o != hovered_chip->owner ||
             f.src->owner_status(o) != (hovered_chip->dead ? 2 : hovered_chip->lingering ? 1 : 0);
    });
  }
  hooks_table(f, hooks);
  ImGui::TextDisabled(hovered_chip ? "click: highlight this owner's hooks everywhere" : "click: select");
  ImGui::EndTooltip();
}

void GraphView::hooks_table(const Frame& f, const std::vector<std::pair<uint8_t, const analysis::HookAt*>>& hooks) {
  const analysis::Model& model = *model_;
  if (hooks.empty()) {
    ImGui::TextDisabled("no hooks");
    return;
  }
  if (!ImGui::BeginTable("hooks", 5, ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg)) return;
  for (const char* h : {"key", "kind", "owner", "owner state", "fires"}) ImGui::TableSetupColumn(h);
  ImGui::TableHeadersRow();
  size_t shown = 0;
  for (const auto& [kind, h] : hooks) {
    if (++shown > 24) break;
    const analysis::HookInfo& info = model.hooks()[h->hook];
    const uint8_t status = f.src->owner_status(info.owner);
    ImGui::TableNextRow();
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(trace::format_hook_key(info.key).c_str());  // Note [Hook keys in text]
    ImGui::TableNextColumn();
    ImGui::TextUnformatted(hook_kind_tag(static_cast<trace::HookKind>(kind)).data());
    ImGui::TableNextColumn();
    const std::string gen = scene_->generations().owner_label(info.owner, f.state->index);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(scene_->owner_color(info.owner)), "%s%s%s",
                       model.owner_name(info.owner).c_str(), gen.empty() ? "" : ", ", gen.c_str());
    ImGui::TableNextColumn();
    if (status == static_cast<uint8_t>(analysis::OwnerStatus::kDestroyed)) {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().alarm), "destroyed (leaked hook)");
    } else if (status == static_cast<uint8_t>(analysis::OwnerStatus::kLingering)) {
      ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(palette().lingering), "replaced, still alive (lingering)");
    } else {
      ImGui::TextUnformatted("alive");
    }
    ImGui::TableNextColumn();
    ImGui::Text("%u%s", h->fires, h->hook == f.firing_hook ? "  (firing now)" : "");
  }
  ImGui::EndTable();
  if (hooks.size() > 24) ImGui::TextDisabled("... and %zu more", hooks.size() - 24);
}

}  // namespace hookscope::render
