#include "render/layout/graph_svg.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "analysis/owner_status.h"

namespace hookscope::render {

namespace {

// Escaped for XML text and attributes; bytes that are not valid in XML 1.0
// (control characters) become '?'.
std::string xml_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: {
        const auto u = static_cast<unsigned char>(c);
        out += (u < 0x20 && c != '\t' && c != '\n') ? '?' : c;
      }
    }
  }
  return out;
}

// DejaVu Sans (the app's font): ascent + descent is 1.164 em, the ascent
// 0.797 of it. ImGui sizes a font by ascent + descent, SVG by the em.
constexpr float kEmPerHeight = 1.f / 1.164f;
constexpr float kAscent = 0.797f;

// A hook run on a box: same kind and owner in a row ("R1×4"). An owner
// destroyed or lingering (Note [Lingering owners]) makes it an alarm.
struct SvgChip {
  uint8_t kind = 0;
  analysis::OwnerIndex owner = analysis::kNoIndex;
  uint16_t count = 0;
  analysis::OwnerStatus status = analysis::OwnerStatus::kAlive;
  bool alarm() const { return status != analysis::OwnerStatus::kAlive; }
};

struct Writer {
  const GraphScene& scene;
  const FoldedGraph& folded;
  const Layout& layout;
  const analysis::State& state;
  const GraphSvgOptions& o;
  const Palette& pal;
  std::vector<uint32_t> live;      // per unit
  std::vector<analysis::OwnerStatus> owner_status;  // per owner, at the state's event
  std::string out;
  GraphSvgStats stats;

  float measure(std::string_view text, float size) const {
    const float at_line = o.measure ? o.measure(text) : 0.56f * o.metrics.line_height * static_cast<float>(text.size());
    return at_line * size / o.metrics.line_height;
  }
  bool in_view(Vec2 lo, Vec2 hi) const {
    return o.whole || (hi.x >= o.view_min.x && lo.x <= o.view_max.x && hi.y >= o.view_min.y && lo.y <= o.view_max.y);
  }
  // Text `size` pixels tall (ascent + descent, as ImGui sizes fonts) with its
  // top at y, squeezed to the width the view measured (textLength), so that
  // chips after it land where they do on screen whatever font draws it.
  void text(float x, float y, float size, uint32_t color, std::string_view s, const char* cls) {
    out += fmt::format(
        "<text class=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{:.2f}\" textLength=\"{:.1f}\" "
        "lengthAdjust=\"spacingAndGlyphs\" fill=\"{}\">{}</text>\n",
        cls, x, y + size * kAscent, size * kEmPerHeight, measure(s, size), svg_color(color), xml_escape(s));
    ++stats.texts;
  }
  void chips_of(uint32_t unit, std::vector<SvgChip>& chips) const;
  void edges();
  void path(uint32_t layout_edge);
  void box(uint32_t unit);
  void chip_row(uint32_t unit, float left, float right, float top);
};

void Writer::chips_of(uint32_t unit, std::vector<SvgChip>& chips) const {
  chips.clear();
  auto push = [&](int k, const analysis::HookAt& h) {
    const analysis::OwnerIndex owner = scene.model().hooks()[h.hook].owner;
    const analysis::OwnerStatus status =
        owner < owner_status.size() ? owner_status[owner] : analysis::OwnerStatus::kAlive;
    if (!chips.empty() && chips.back().kind == k && chips.back().owner == owner && chips.back().status == status) {
      ++chips.back().count;
    } else {
      chips.push_back({static_cast<uint8_t>(k), owner, 1, status});
    }
  };
  auto add = [&](const analysis::FunctionAt& fa) {
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      for (const analysis::HookAt& h : fa.hooks[static_cast<size_t>(k)]) push(k, h);
    }
    // As the view: module hooks on their anchors (Note [Module hook anchors]).
    scene.for_module_hooks_on(fa.function, state.module_hooks, [&](const analysis::HookAt& h) {
      push(static_cast<int>(scene.model().hooks()[h.hook].kind), h);
    });
  };
  const uint32_t g = folded.group_of_unit[unit];
  if (g == kNoGroup) {
    if (live[unit]) add(state.functions[live[unit] - 1]);
    return;
  }
  for (const analysis::FunctionAt& fa : state.functions) {
    if (folded.unit_of_node[scene.slot_of(fa.function)] == unit) add(fa);
  }
  std::stable_sort(chips.begin(), chips.end(), [](const SvgChip& a, const SvgChip& b) { return a.kind < b.kind; });
}

// As the view: the edges of live Functions to live Functions, each layout
// edge once, with an arrowhead at its target.
void Writer::edges() {
  const uint32_t color = pal.edge;
  const analysis::Model& model = scene.model();
  out += fmt::format(
      "<defs><marker id=\"arrow\" viewBox=\"0 0 10 10\" refX=\"10\" refY=\"5\" markerWidth=\"7\" "
      "markerHeight=\"7\" markerUnits=\"userSpaceOnUse\" orient=\"auto\"><path d=\"M0,0 L10,5 L0,10 z\" "
      "fill=\"{}\"/></marker></defs>\n"
      "<g class=\"edges\" fill=\"none\" stroke=\"{}\" stroke-opacity=\"{:.2f}\" stroke-width=\"1.4\">\n",
      svg_color(color), svg_color(color), svg_alpha(color));
  std::vector<uint8_t> drawn(folded.graph.edges.size(), 0);
  for (const analysis::FunctionAt& fa : state.functions) {
    const analysis::FunctionInfo& info = model.functions()[fa.function];
    for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
      const analysis::FunctionIndex to = model.edges()[e].to;
      if (to >= model.functions().size() || !live[folded.unit_of_node[scene.slot_of(to)]]) continue;
      const uint32_t se = scene.edge_of(e);
      const uint32_t le = se == kNoSlot ? kNoSlot : folded.edge_of_scene_edge[se];
      if (le == kNoSlot || drawn[le]) continue;
      drawn[le] = 1;
      path(le);
    }
  }
  out += "</g>\n";
}

void Writer::path(uint32_t e) {
  const uint32_t b = layout.route_begin[e], end = layout.route_begin[e + 1];
  if (end - b < 4) return;
  const Vec2 p0 = layout.route[b];
  Vec2 lo = p0, hi = p0;
  std::string d = fmt::format("M{:.1f},{:.1f}", p0.x, p0.y);
  for (uint32_t i = b + 1; i + 2 < end; i += 3) {
    const Vec2 c1 = layout.route[i], c2 = layout.route[i + 1], p = layout.route[i + 2];
    d += fmt::format(" C{:.1f},{:.1f} {:.1f},{:.1f} {:.1f},{:.1f}", c1.x, c1.y, c2.x, c2.y, p.x, p.y);
    for (const Vec2 q : {c1, c2, p}) {
      lo = {std::min(lo.x, q.x), std::min(lo.y, q.y)};
      hi = {std::max(hi.x, q.x), std::max(hi.y, q.y)};
    }
  }
  if (!in_view(lo, hi)) return;
  out += fmt::format("<path d=\"{}\" marker-end=\"url(#arrow)\"/>\n", d);
  ++stats.edges;
}

void Writer::chip_row(uint32_t unit, float left, float right, float top) {
  static thread_local std::vector<SvgChip> chips;
  chips_of(unit, chips);
  const BoxMetrics& m = o.metrics;
  const float cfs = m.compact ? m.line_height : m.line_height * 0.85f;
  float x = left;
  int last_kind = -1;
  for (const SvgChip& c : chips) {
    if (c.kind != last_kind) {
      if (last_kind >= 0) x += m.kind_gap;
      const std::string_view tag = box_kind_tag(m, static_cast<trace::HookKind>(c.kind));
      if (!tag.empty()) {
        text(x, top + (m.chip_height - cfs) * 0.5f, cfs, pal.text_dim, tag, "kind");
        x += measure(tag, cfs) + m.chip_gap;
      }
      last_kind = c.kind;
    }
    std::string label = scene.owner_tag(c.owner);
    if (c.count > 1) label += fmt::format("\xc3\x97{}", c.count);
    const float w = measure(label, cfs) + 2.f * m.chip_pad;
    if (x + w > right) break;  // the view shows "+N" there
    uint32_t fill = scene.owner_color(c.owner);
    const uint32_t alarm = c.status == analysis::OwnerStatus::kDestroyed ? pal.alarm : pal.lingering;
    const std::string stroke = c.alarm() ? fmt::format(" stroke=\"{}\" stroke-width=\"2\"", svg_color(alarm)) : "";
    out += fmt::format(
        "<rect class=\"chip\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"3\" fill=\"{}\" "
        "fill-opacity=\"{:.2f}\"{}/>\n",
        x, top, w, m.chip_height, svg_color(fill), c.alarm() ? 0.55f : 1.f, stroke);
    ++stats.chips;
    text(x + m.chip_pad, top + (m.chip_height - cfs) * 0.5f, cfs, pal.chip_text, c.alarm() ? label + "!" : label, "owner");
    x += w + m.chip_gap;
  }
}

void Writer::box(uint32_t u) {
  const Vec2 c = layout.center[u], s = layout.size[u];
  const Vec2 lo{c.x - s.x * 0.5f, c.y - s.y * 0.5f}, hi{c.x + s.x * 0.5f, c.y + s.y * 0.5f};
  if (!in_view(lo, hi)) return;
  const BoxMetrics& m = o.metrics;
  const uint32_t g = folded.group_of_unit[u];
  const uint32_t slot = g == kNoGroup ? folded.node_of_unit[u] : kNoSlot;
  const analysis::Model& model = scene.model();
  const bool leaf = slot != kNoSlot && model.functions()[scene.nodes()[slot].first].is_leaf_accumulator();
  static thread_local std::vector<SvgChip> chips;
  chips_of(u, chips);
  // Destroyed owners win over lingering ones, as on screen (Note [Box contents]).
  const bool dead = std::any_of(chips.begin(), chips.end(),
                                [](const SvgChip& ch) { return ch.status == analysis::OwnerStatus::kDestroyed; });
  const bool alarm = dead || std::any_of(chips.begin(), chips.end(), [](const SvgChip& ch) { return ch.alarm(); });
  const uint32_t alarm_color = dead ? pal.alarm : pal.lingering;
  const bool hot = u < o.highlight.size() && o.highlight[u];
  const uint32_t border = hot ? o.highlight_color : alarm ? alarm_color : pal.box_border;
  const uint32_t fill = g != kNoGroup ? pal.box_group : leaf ? pal.box_leaf : pal.box;
  out += fmt::format(
      "<rect class=\"box\" data-unit=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" rx=\"4\" "
      "fill=\"{}\" stroke=\"{}\" stroke-width=\"{}\"/>\n",
      u, lo.x, lo.y, s.x, s.y, svg_color(fill), svg_color(border), hot ? 3 : alarm ? 2 : 1);
  ++stats.boxes;
  stats.alarm_boxes += alarm;
  stats.lingering_boxes += alarm && !dead;
  if (alarm) {  // the view's marker: a red disc with "!" on the top right corner
    out += fmt::format("<circle class=\"alarm\" cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"7\" fill=\"{}\"/>\n", hi.x - 1.f,
                       lo.y + 1.f, svg_color(alarm_color));
    text(hi.x - 3.f, lo.y + 1.f - 5.5f, 11.f, rgba(255, 255, 255), "!", "alarm");
  }
  std::string title, label;
  if (g != kNoGroup) {
    title = scene.unit_title(folded, u);
    label = scene.unit_label(folded, u);
  } else {
    const SceneNode& node = scene.nodes()[slot];
    title = model.str(node.name) +
            fmt::format("  #{}", model.functions()[state.functions[live[u] - 1].function].id);
    label = model.str(node.label);
  }
  if (m.compact) {
    text(lo.x + m.pad, c.y - m.line_height * 0.5f, m.line_height, leaf ? pal.text_label : pal.text,
         scene.unit_compact_title(folded, u), "title");
  } else {
    text(lo.x + m.pad, lo.y + m.pad, m.line_height, pal.text, title, "title");
    if (!label.empty()) {
      text(lo.x + m.pad, lo.y + m.pad + m.line_height, m.line_height, g != kNoGroup ? pal.text_dim : pal.text_label,
           label, "label");
    }
  }
  if (chips.empty()) return;
  float left = lo.x + m.pad, top = hi.y - m.pad - m.chip_height;
  if (m.compact) {
    left += measure(scene.unit_compact_title(folded, u), m.line_height) + m.kind_gap;
    top = c.y - m.chip_height * 0.5f;
  }
  chip_row(u, left, hi.x - m.pad, top);
}

}  // namespace

std::vector<uint32_t> live_units(const GraphScene& scene, const FoldedGraph& folded, const analysis::State& state) {
  std::vector<uint32_t> live(folded.group_of_unit.size(), 0);
  for (size_t i = 0; i < state.functions.size(); ++i) {
    const uint32_t slot = scene.slot_of(state.functions[i].function);
    if (slot >= folded.unit_of_node.size()) continue;
    uint32_t& l = live[folded.unit_of_node[slot]];
    if (!l) l = static_cast<uint32_t>(i + 1);
  }
  return live;
}

std::string svg_color(uint32_t color) {
  return fmt::format("#{:02x}{:02x}{:02x}", color & 0xffu, (color >> 8) & 0xffu, (color >> 16) & 0xffu);
}
float svg_alpha(uint32_t color) { return static_cast<float>(color >> 24) / 255.f; }

std::string graph_svg(const GraphScene& scene, const FoldedGraph& folded, const Layout& layout,
                      const analysis::State& state, const GraphSvgOptions& options, GraphSvgStats* stats) {
  const size_t units = folded.group_of_unit.size();
  if (layout.center.size() != units || layout.size.size() != units ||
      layout.route_begin.size() != folded.graph.edges.size() + 1) {
    throw std::invalid_argument(fmt::format("graph_svg: the layout has {} boxes, the folded graph {} units",
                                            layout.center.size(), units));
  }
  Writer w{scene, folded, layout, state, options, *options.palette, live_units(scene, folded, state), {}, {}, {}};
  for (const analysis::OwnerInfo& info : scene.model().owners()) {
    w.owner_status.push_back(analysis::owner_status(info, state.index));
  }
  const float margin = 16.f;
  Vec2 lo = options.whole ? layout.min : options.view_min, hi = options.whole ? layout.max : options.view_max;
  if (!(hi.x > lo.x) || !(hi.y > lo.y)) lo = {0.f, 0.f}, hi = {1.f, 1.f};
  lo = {lo.x - margin, lo.y - margin};
  hi = {hi.x + margin, hi.y + margin};
  w.stats.width = hi.x - lo.x;
  w.stats.height = hi.y - lo.y;
  w.out = fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{:.0f}\" height=\"{:.0f}\" viewBox=\"{:.1f} {:.1f} {:.1f} "
      "{:.1f}\" font-family=\"DejaVu Sans, sans-serif\">\n"
      "<title>hookscope graph after event #{}</title>\n"
      "<rect class=\"background\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"{}\"/>\n",
      w.stats.width, w.stats.height, lo.x, lo.y, w.stats.width, w.stats.height, state.index, lo.x, lo.y,
      w.stats.width, w.stats.height, svg_color(w.pal.background));
  w.edges();
  w.out += "<g class=\"boxes\">\n";
  for (uint32_t u = 0; u < units; ++u) {
    if (w.live[u]) w.box(u);
  }
  w.out += "</g>\n</svg>\n";
  if (stats) *stats = w.stats;
  return std::move(w.out);
}

}  // namespace hookscope::render
