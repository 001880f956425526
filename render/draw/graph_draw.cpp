// Drawing the graph: edges, boxes with their hook badges, the density
// cells of the far zoom levels. Badges' contents, tooltips and clicks are
// in graph_badges.cpp.

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <span>
#include <string>

#include <fmt/format.h>

#include "render/layout/colors.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

using analysis::kNoIndex;

// Note [Box contents]
// ~~~~~~~~~~~~~~~~~~~
//   +--------------------------------------------+
//   | AddmmBackward0  #45                         |  name, raw Function id (dim)
//   | 0.weight [32, 16]                           |  label: parameter and shape
//   | post [R1!] [R2]   pre [gc x4]               |  badge row
//   +--------------------------------------------+
// The badge row lists, per hook kind in firing order (tensor-pre,
// retain-grad, pre, post, post-acc), a chip per run of hooks of one owner,
// in registration order, filled with the owner's colour (owner_color) and
// labelled with its tag and "xN" when the run has several hooks. A hook
// whose owner is destroyed is an alarm: its chip is outlined red with a "!",
// and the box gets a red outline and a "!" marker at its top right corner.
// A hook of a lingering owner (Note [Lingering owners]) is one too, in the
// lingering colour, and the box is tagged "lingering: Reducer 1 replaced at
// #N" once per owner, on its first box from the top (while no hook of it is
// firing stale or being removed: those tags win).
// A hook firing at the current event flashes; with an owner selected, its
// chips are outlined white and the others fade. GraphScene::box_sizes()
// reserves room for this with the same BoxMetrics.


void GraphView::draw_boxes(Frame& f) {
  const Layout& l = *layout_;
  if (l.num_layers == 0) return;
  const auto first_layer = std::upper_bound(l.layer_top.begin(), l.layer_top.end(), f.view_min.y);
  int k0 = std::max(0, static_cast<int>(first_layer - l.layer_top.begin()) - 1);
  const int k1 = static_cast<int>(std::upper_bound(l.layer_top.begin(), l.layer_top.end(), f.view_max.y) -
                                  l.layer_top.begin());
  for (int k = k0; k < k1; ++k) {
    if (l.layer_top[k] + l.layer_height[k] < f.view_min.y) continue;
    const float reach = layer_max_width_[k] * 0.5f;
    auto first = l.layer_nodes.begin() + l.layer_begin[k], last = l.layer_nodes.begin() + l.layer_begin[k + 1];
    auto it = std::lower_bound(first, last, f.view_min.x - reach,
                               [&](int u, float x) { return l.center[u].x < x; });
    for (; it != last && l.center[*it].x - reach <= f.view_max.x; ++it) {
      const auto u = static_cast<uint32_t>(*it);
      if (!f.src->shown(u)) continue;
      const Vec2 c = l.center[u], s = l.size[u];
      if (!f.visible({c.x - s.x * 0.5f, c.y - s.y * 0.5f}, {c.x + s.x * 0.5f, c.y + s.y * 0.5f})) continue;
      if (f.detail == GraphDetail::kFull) {
        draw_box(f, u);
      } else {
        draw_plain_box(f, u);
      }
    }
  }
}

// What a box shows, worked out once for its parts (Note [Box contents]).
struct GraphView::BoxLook {
  uint32_t unit = 0, group = kNoGroup, slot = kNoSlot;
  const analysis::FunctionAt* fa = nullptr;  // its live Function (a box of one slot)
  bool ghost = false, leaf = false;          // ghost: a leaf's tensor hooks, no live Function
  ImVec2 a, b;                               // on screen
  bool alarm = false, lingers = false, owner_hit = false, stale = false;
  analysis::OwnerIndex lingering = analysis::kNoIndex;  // a lingering owner with a hook here
  bool selected = false, running = false, removing = false;
  bool text = false;  // text at this level of detail (Note [Readable text])
};

GraphView::BoxLook GraphView::look_of(Frame& f, uint32_t u) {
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  const analysis::Model& model = *model_;
  BoxLook b;
  b.unit = u;
  const Vec2 c = l.center[u], s = l.size[u];
  b.a = f.to_screen({c.x - s.x * 0.5f, c.y - s.y * 0.5f});
  b.b = f.to_screen({c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  b.group = fg.group_of_unit[u];
  b.slot = b.group == kNoGroup ? fg.node_of_unit[u] : kNoSlot;
  b.fa = b.slot != kNoSlot ? f.src->function_at(b.slot) : nullptr;
  b.ghost = b.group == kNoGroup && !b.fa;
  b.leaf = b.slot != kNoSlot && model.functions()[scene_->nodes()[b.slot].first].is_leaf_accumulator();
  chips_of(f, u, f.chips);
  for (const Chip& chip : f.chips) {
    b.alarm |= chip.dead && !chip.removed;
    if (chip.lingering && !chip.removed && b.lingering == analysis::kNoIndex) b.lingering = chip.owner;
    b.owner_hit |= chip.owner == selected_owner_;
    b.stale |= chip.stale;
  }
  b.lingers = !b.alarm && b.lingering != analysis::kNoIndex;  // the alarm is a lingering owner only
  auto in_unit = [&](analysis::FunctionIndex fn) {
    return fn < model.functions().size() && fg.unit_of_node[scene_->slot_of(fn)] == u;
  };
  b.selected = in_unit(selected_function_);
  b.running = in_unit(f.running);
  b.removing = in_unit(f.removing);
  b.text = f.detail == GraphDetail::kFull;
  return b;
}

void GraphView::draw_box(Frame& f, uint32_t u) {
  const BoxLook b = look_of(f, u);
  ++stats_.boxes;
  stats_.alarms += b.alarm || b.lingers ? 1 : 0;
  stats_.lingering += b.lingers ? 1 : 0;
  stats_.box_rects.push_back({b.a.x, b.a.y, b.b.x, b.b.y});
  stats_.box_units.push_back(u);
  stats_.box_chip_kinds.push_back(0);
  draw_box_frame(f, b);
  draw_box_tags(f, b);
  draw_box_text(f, b);
  if (!f.chips.empty()) draw_chips(f, b);
}

// The fill, the outline (its colour says the most urgent of: selected,
// losing a hook, running, alarm, selected owner's hook) and the alarm disc.
void GraphView::draw_box_frame(Frame& f, const BoxLook& b) {
  const Palette& pal = palette();
  const float z = f.zoom;
  const float rounding = std::min(4.f * z, 6.f);
  const ImVec2 a = b.a, e = b.b;
  if (!b.ghost) {
    f.dl->AddRectFilled(a, e, b.group != kNoGroup ? pal.box_group : b.leaf ? pal.box_leaf : pal.box, rounding);
  }
  uint32_t border = b.ghost ? pal.ghost : pal.box_border;
  float border_w = 1.f;
  if (b.owner_hit && selected_owner_ != kNoIndex) border = scene_->owner_color(selected_owner_), border_w = 2.f;
  if (b.alarm || b.lingers) border = b.alarm ? pal.alarm : pal.lingering, border_w = 2.f;
  if (b.running) border = b.stale ? pal.stale : pal.running, border_w = b.stale ? 3.5f : 2.5f;
  if (b.removing) {
    border = pal.removed;
    border_w = 3.5f;
    ++stats_.removal_boxes;
  }
  if (b.selected) border = pal.selected, border_w = 3.f;
  f.dl->AddRect(a, e, border, rounding, 0, border_w);
  if (b.group != kNoGroup) {  // a folded group: a second outline, like a stack of boxes
    f.dl->AddRect({a.x + 3.f, a.y + 3.f}, {e.x + 3.f, e.y + 3.f}, with_alpha(pal.box_border, 120), rounding);
  }
  if (!b.alarm && !b.lingers) return;
  // The marker: a red (lingering: its colour) disc with "!" on the top right corner.
  // Note [Readable text]: text only where it is at least min_text_px tall.
  const float min_px = options_.min_text_px;
  const uint32_t disc = b.alarm ? pal.alarm : pal.lingering;
  const float r = b.text ? std::max(7.f * z, min_px / 1.6f) : std::clamp(7.f * z, 2.5f, 8.f);
  f.dl->AddCircleFilled({e.x - 1.f, a.y + 1.f}, r, disc);
  if (b.text) {
    const float fs = r * 1.6f;
    put_text(f, fs, e.x - 1.f - text_width(fs, "!") * 0.5f, a.y + 1.f - fs * 0.5f, ink_on(disc), "!");
  }
}

// The current event's tag over the box, else a lingering owner's story.
void GraphView::draw_box_tags(Frame& f, const BoxLook& b) {
  const Palette& pal = palette();
  const analysis::Model& model = *model_;
  if (b.stale && b.running) {
    draw_tag(f, b.unit, "stale fire", pal.stale);
  } else if (b.removing) {
    draw_tag(f, b.unit, "hook removed", pal.removed);
  } else if (b.lingering != analysis::kNoIndex && b.text &&
             std::find(f.tagged_owners.begin(), f.tagged_owners.end(), b.lingering) == f.tagged_owners.end()) {
    const analysis::OwnerInfo& o = model.owners()[b.lingering];
    const std::string tag = fmt::format("lingering: {} replaced at #{}", model.owner_name(b.lingering), o.replaced_at);
    // One tag tells an owner's story (a tag per box hid the graph under copies
    // of one sentence); one that would overlap a tag drawn already waits for
    // the owner's next box.
    if (draw_tag(f, b.unit, tag.c_str(), pal.lingering, /*yield=*/true)) {
      ++stats_.lingering_tags;
      f.tagged_owners.push_back(b.lingering);
    }
  }
}

void GraphView::draw_box_text(Frame& f, const BoxLook& b) {
  const FoldedGraph& fg = *folded_;
  const analysis::Model& model = *model_;
  const BoxMetrics& m = metrics_;
  const Palette& pal = palette();
  const float z = f.zoom, pad = m.pad * z, fs = m.line_height * z;
  if (!b.text || fs < options_.min_text_px) return;
  ++stats_.texts;
  const ImVec2 a = b.a, e = b.b;
  const float clip[4] = {a.x, a.y, e.x, e.y};
  if (m.compact) return draw_compact_title(f, b, fs, clip);  // Note [Compact boxes]: the one line
  std::string title, label;
  char id[32] = "";
  if (b.group != kNoGroup) {
    title = scene_->unit_title(fg, b.unit);
    label = scene_->unit_label(fg, b.unit);
  } else {
    const SceneNode& node = scene_->nodes()[b.slot];
    title = b.ghost ? "(leaf tensor)" : model.str(node.name);
    label = scene_->unit_label(fg, b.unit, kNoIndex, 0);
    // "gen N" on a copied parameter (Note [Module generations]), where it fits:
    // after the label, else instead of its shape.
    const std::string gen = b.fa ? scene_->gen_label(b.fa->function, f.state->index) : std::string();
    if (!gen.empty()) {
      const float room = e.x - a.x - 2.f * m.pad * z;
      std::string with = label + " \xc2\xb7 " + gen;
      if (text_width(m.line_height * z, with.c_str()) > room) with = label.substr(0, label.find(" [")) + " \xc2\xb7 " + gen;
      if (text_width(m.line_height * z, with.c_str()) <= room) {
        label = with;
        ++stats_.gen_labels;
      }
    }
    if (b.fa) std::snprintf(id, sizeof id, "  #%llu", static_cast<unsigned long long>(model.functions()[b.fa->function].id));
  }
  const ImVec2 p{a.x + pad, a.y + pad};
  put_text(f, fs, p.x, p.y, b.ghost ? pal.text_dim : pal.text, title.c_str(), nullptr, clip);
  if (id[0]) put_text(f, fs, p.x + text_width(fs, title.c_str()), p.y, pal.text_dim, id, nullptr, clip);
  if (!label.empty()) {
    put_text(f, fs, p.x, p.y + fs, b.group != kNoGroup ? pal.text_dim : pal.text_label, label.c_str(), nullptr, clip);
  }
}

void GraphView::draw_compact_title(Frame& f, const BoxLook& b, float fs, const float* clip) {
  const analysis::Model& model = *model_;
  const Palette& pal = palette();
  const float pad = metrics_.pad * f.zoom;
  const std::string title =
      b.ghost ? "(leaf tensor) " + model.str(scene_->nodes()[b.slot].label)
              : scene_->unit_compact_title(*folded_, b.unit, b.fa ? b.fa->function : kNoIndex, f.state->index);
  stats_.gen_labels += b.fa && !scene_->gen_label(b.fa->function, f.state->index).empty();
  put_text(f, fs, b.a.x + pad, (b.a.y + b.b.y - fs) * 0.5f, b.ghost ? pal.text_dim : b.leaf ? pal.text_label : pal.text,
           title.c_str(), nullptr, clip);
}

// The badge row: per kind its tag, then its chips; "+N" for those that do not fit.
void GraphView::draw_chips(Frame& f, const BoxLook& b) {
  const BoxMetrics& m = metrics_;
  const float z = f.zoom;
  float kind_x[trace::kNumHookKinds] = {};
  float left, right, row_top;
  chip_row(b.unit, &left, &right, &row_top);
  const float plus_x = place_chips(f.chips, *scene_, left, right, m, kind_x);
  const float y0 = f.to_screen({0.f, row_top}).y, y1 = y0 + m.chip_height * z;
  const float cfs = chip_font(m) * z;
  const bool text_on = b.text && cfs >= options_.min_text_px;
  // Note [Idle frames]: the ring pulses for a while after the event is
  // reached, then stays lit, so that a still view needs no more frames.
  const bool pulsing = f.since_event < kFlashPulseSeconds;
  const double pulse = pulsing ? 0.5 + 0.5 * std::sin(f.time * 10.0) : 1.0;
  int last_kind = -1;
  for (const Chip& chip : f.chips) {
    if (std::isnan(chip.x0)) break;
    stats_.box_chip_kinds.back() |= static_cast<uint16_t>(1u << chip.kind);
    const std::string_view tag = box_kind_tag(m, static_cast<trace::HookKind>(chip.kind));
    if (chip.kind != last_kind && text_on && !tag.empty()) {
      const float kx = f.to_screen({kind_x[chip.kind], 0.f}).x;
      put_text(f, cfs, kx, y0 + (y1 - y0 - cfs) * 0.5f, palette().text_dim, tag.data(), tag.data() + tag.size());
    }
    last_kind = chip.kind;
    draw_chip(f, chip, f.to_screen({chip.x0, 0.f}).x, f.to_screen({chip.x1, 0.f}).x, y0, y1, text_on, pulsing, pulse);
  }
  if (std::isnan(plus_x)) return;
  size_t shown = 0;
  for (const Chip& chip : f.chips) shown += !std::isnan(chip.x0);
  stats_.hidden_chips += static_cast<uint32_t>(f.chips.size() - shown);
  if (!text_on) return;
  char more[16];
  std::snprintf(more, sizeof more, "+%zu", f.chips.size() - shown);
  put_text(f, cfs, f.to_screen({plus_x, 0.f}).x, y0 + (y1 - y0 - cfs) * 0.5f, palette().text_dim, more);
}

void GraphView::draw_chip(Frame& f, const Chip& chip, float x0, float x1, float y0, float y1, bool text_on,
                          bool pulsing, double pulse) {
  const Palette& pal = palette();
  const BoxMetrics& m = metrics_;
  const float z = f.zoom, cfs = chip_font(m) * z;
  const bool faded = selected_owner_ != kNoIndex && chip.owner != selected_owner_;
  uint32_t fill = scene_->owner_color(chip.owner);
  if (chip.alarm()) fill = scale_alpha(fill, 0.55f);
  if (faded) fill = scale_alpha(fill, 0.3f);
  const float cr = std::min(3.f * z, 4.f);
  if (chip.removed) {  // a ghost: outlined in the removal colour, struck through, fading
    const float life = 1.f - static_cast<float>(chip.age) / static_cast<float>(std::max(options_.ghost_events, 1u));
    ++stats_.ghost_chips;
    f.dl->AddRectFilled({x0, y0}, {x1, y1}, scale_alpha(fill, 0.25f * life), cr);
    f.dl->AddRect({x0, y0}, {x1, y1}, scale_alpha(pal.removed, 0.35f + 0.65f * life), cr, 0, 2.f);
    f.dl->AddLine({x0 + 2.f, y1 - 2.f}, {x1 - 2.f, y0 + 2.f}, scale_alpha(pal.removed, 0.35f + 0.65f * life), 2.f);
    return;
  }
  if (chip.flash) {
    const uint32_t ring = chip.stale ? pal.stale : pal.flash;
    f.dl->AddRect({x0 - 3.f, y0 - 3.f}, {x1 + 3.f, y1 + 3.f}, scale_alpha(ring, 0.6f + 0.4f * static_cast<float>(pulse)),
                  cr + 2.f, 0, chip.stale ? 4.f : 3.f);
    stats_.stale_chips += chip.stale ? 1 : 0;
    stats_.pulsing = stats_.pulsing || pulsing;
  }
  f.dl->AddRectFilled({x0, y0}, {x1, y1}, fill, cr);
  if (chip.alarm()) {
    f.dl->AddRect({x0, y0}, {x1, y1}, chip.dead ? pal.alarm : pal.lingering, cr, 0, std::max(1.5f, 2.f * std::min(z, 1.f)));
  }
  if (!faded && chip.owner == selected_owner_) f.dl->AddRect({x0 - 1.f, y0 - 1.f}, {x1 + 1.f, y1 + 1.f}, pal.text, cr, 0, 1.5f);
  if (!text_on) return;
  char buf[48];
  const int len = chip_text(buf, sizeof buf, scene_->owner_tag(chip.owner), chip.count);
  const float tx = x0 + m.chip_pad * z, ty = y0 + (y1 - y0 - cfs) * 0.5f;
  put_text(f, cfs, tx, ty, faded ? with_alpha(pal.chip_text, 120) : pal.chip_text, buf, buf + len);
  if (chip.alarm()) put_text(f, cfs, tx + text_width(cfs, buf, buf + len), ty, pal.chip_text, "!");
}

// Note [Graph level of detail], the middle: quads only. The outline is a
// quad a pixel larger behind the fill, badges are squares of the owner's
// colour (a red square behind one whose owner is destroyed).
void GraphView::draw_plain_box(Frame& f, uint32_t u) {
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  const analysis::Model& model = *model_;
  const BoxMetrics& m = metrics_;
  const Vec2 c = l.center[u], s = l.size[u];
  const ImVec2 a = f.to_screen({c.x - s.x * 0.5f, c.y - s.y * 0.5f});
  const ImVec2 b = f.to_screen({c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  const uint32_t g = fg.group_of_unit[u];
  const uint32_t slot = g == kNoGroup ? fg.node_of_unit[u] : kNoSlot;
  const bool ghost = g == kNoGroup && !f.src->function_at(slot);
  const bool leaf = slot != kNoSlot && model.functions()[scene_->nodes()[slot].first].is_leaf_accumulator();
  chips_of(f, u, f.chips);
  bool alarm = false, lingers = false, owner_hit = false;
  for (const Chip& chip : f.chips) {
    alarm |= chip.dead;
    lingers |= chip.lingering;
    owner_hit |= chip.owner == selected_owner_;
  }
  lingers = lingers && !alarm;
  uint32_t border = ghost ? palette().ghost : palette().box_border;
  float w = 1.f;
  if (owner_hit && selected_owner_ != kNoIndex) border = scene_->owner_color(selected_owner_), w = 2.f;
  if (alarm || lingers) border = alarm ? palette().alarm : palette().lingering, w = 2.f;
  stats_.alarms += alarm || lingers ? 1 : 0;
  stats_.lingering += lingers ? 1 : 0;
  if (f.running < model.functions().size() && fg.unit_of_node[scene_->slot_of(f.running)] == u) {
    border = palette().running, w = 2.f;
  }
  if (selected_function_ < model.functions().size() && fg.unit_of_node[scene_->slot_of(selected_function_)] == u) {
    border = palette().selected, w = 2.f;
  }
  stats_.box_rects.push_back({a.x, a.y, b.x, b.y});
  stats_.box_units.push_back(u);
  stats_.box_chip_kinds.push_back(0);
  f.dl->AddRectFilled({a.x - w, a.y - w}, {b.x + w, b.y + w}, border);
  f.dl->AddRectFilled(a, b, ghost ? palette().background : g != kNoGroup ? palette().box_group : leaf ? palette().box_leaf : palette().box);
  ++stats_.boxes;
  const float z = f.zoom, side = m.chip_height * z;
  if (side < 1.5f) return;
  const float y1 = b.y - m.pad * z, y0 = y1 - side;
  float x = a.x + m.pad * z;
  int last_kind = -1;
  for (const Chip& chip : f.chips) {
    if (chip.removed) continue;
    if (chip.kind != last_kind && last_kind >= 0) x += m.kind_gap * z;
    last_kind = chip.kind;
    if (x + side > b.x - m.pad * z) break;
    if (chip.alarm()) {
      f.dl->AddRectFilled({x - 1.f, y0 - 1.f}, {x + side + 1.f, y1 + 1.f}, chip.dead ? palette().alarm : palette().lingering);
    }
    const bool faded = selected_owner_ != kNoIndex && chip.owner != selected_owner_;
    stats_.box_chip_kinds.back() |= static_cast<uint16_t>(1u << chip.kind);
    f.dl->AddRectFilled({x, y0}, {x + side, y1}, faded ? scale_alpha(scene_->owner_color(chip.owner), 0.3f) : scene_->owner_color(chip.owner));
    x += side + m.chip_gap * z;
  }
}

// Note [Graph level of detail], the far end: boxes become cells of a 3 px
// grid, a cell's brightness grows with the boxes in it and a cell holding an
// alarm is red. Vertices are bounded by the canvas area, not by the graph.
void GraphView::draw_cells(Frame& f) {
  constexpr float kCell = 3.f;
  const int cols = static_cast<int>((f.canvas_max.x - f.canvas_min.x) / kCell) + 1;
  const int rows = static_cast<int>((f.canvas_max.y - f.canvas_min.y) / kCell) + 1;
  // Note [Frame caches]: counted again only when the live boxes or the view change.
  const Frame::CellsKey key{f.live_stamp, f.canvas_min.x, f.canvas_min.y, f.canvas_max.x, f.canvas_max.y,
                            f.zoom,       f.view_min.x,   f.view_min.y};
  const bool fresh = key == f.cells_key && f.density.size() == static_cast<size_t>(cols) * static_cast<size_t>(rows);
  if (!fresh) f.density.assign(static_cast<size_t>(cols) * static_cast<size_t>(rows), 0);
  f.cells_key = key;
  // The source's boxes counted, then alarms marked (Note [Alarms by intervals]).
  const GraphSource::ScreenGrid grid{f.canvas_min.x, f.canvas_min.y, f.view_min.x, f.view_min.y, f.zoom, kCell, cols, rows};
  if (!fresh) f.src->count_cells(grid, f.density);
  if (!fresh) f.src->mark_alarm_cells(grid, f.density);
  for (int y = 0; y < rows; ++y) {
    for (int x = 0; x < cols; ++x) {
      const uint32_t cell = f.density[static_cast<size_t>(y) * cols + x];
      if (!cell) continue;
      const uint32_t count = cell & 0x7fffffffu;
      const float level = std::min(1.f, 0.35f + 0.16f * std::log2(1.f + static_cast<float>(count)));
      const uint32_t color = cell & 0x80000000u ? palette().alarm : scale_alpha(palette().text_label, level);
      const ImVec2 p{f.canvas_min.x + x * kCell, f.canvas_min.y + y * kCell};
      f.dl->AddRectFilled(p, {p.x + kCell - 0.5f, p.y + kCell - 0.5f}, color);
      ++stats_.cells;
      if (cell & 0x80000000u) stats_.alarm_cells.push_back({p.x, p.y, p.x + kCell, p.y + kCell});
    }
  }
}

}  // namespace hookscope::render
