// What the graph says about the run around the boxes (Note [Graph canvas]):
// rank captions and banners in the header strip, the owners' legend in the
// toolbar, tags over the box of the current event, fit's focus, and the one
// way text is drawn (Note [Readable text]).

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include <fmt/format.h>

#include "analysis/owner_status.h"
#include "render/layout/colors.h"
#include "render/layout/owner_label.h"
#include "render/draw/graph_view_internal.h"

namespace hookscope::render {

using analysis::kNoIndex;


// Note [Readable text]
// ~~~~~~~~~~~~~~~~~~~~
// Every text of the graph goes through put_text(), which keeps the smallest
// size drawn in GraphDrawStats; the level of detail (Note [Graph level of
// detail]) drops text before it would be smaller than min_text_px, and fit
// stops zooming out there (fit_now), so at fit every label is readable.
void GraphView::put_text(Frame& f, float size, float x, float y, uint32_t color, const char* begin,
                         const char* end, const float* clip) {
  if (stats_.min_text_px == 0.f || size < stats_.min_text_px) stats_.min_text_px = size;
  if (size < options_.min_text_px - 0.01f) ++stats_.small_texts;
  const ImVec4 c = clip ? ImVec4(clip[0], clip[1], clip[2], clip[3]) : ImVec4(f.panel_min.x, f.panel_min.y, f.panel_max.x, f.panel_max.y);
  f.dl->AddText(ImGui::GetFont(), size, {x, y}, color, begin, end, 0.f, &c);
}

bool GraphView::draw_tag(Frame& f, uint32_t unit, const char* text, uint32_t color, bool yield) {
  const Layout& l = *layout_;
  const Vec2 c = l.center[unit], s = l.size[unit];
  const ImVec2 a = f.to_screen({c.x - s.x * 0.5f, c.y - s.y * 0.5f});
  const float fs = std::max(options_.min_text_px + 1.f, ImGui::GetFontSize() * 0.85f);
  const float w = text_width(fs, text) + 8.f;
  const ImVec2 p{a.x, std::max(a.y - fs - 6.f, f.canvas_min.y)};
  const GraphDrawStats::Rect r{p.x, p.y, p.x + w, p.y + fs + 4.f};
  if (yield && std::any_of(stats_.tag_rects.begin(), stats_.tag_rects.end(), [&](const GraphDrawStats::Rect& t) {
        return r.x0 < t.x1 + 2.f && t.x0 < r.x1 + 2.f && r.y0 < t.y1 && t.y0 < r.y1;
      })) {
    return false;
  }
  stats_.tag_rects.push_back(r);
  f.dl->AddRectFilled(p, {p.x + w, p.y + fs + 4.f}, color, 3.f);
  put_text(f, fs, p.x + 4.f, p.y + 2.f, ink_on(color), text);
  return true;
}

// Ranks lay out as disjoint columns (LayoutGraph::cluster); the header strip
// names each above its column, clipped to it, so captions never overprint.
void GraphView::draw_rank_captions(Frame& f) {
  f.caption_spans.clear();
  if (f.header_h <= 0.f) return;
  const float fs = ImGui::GetFontSize();
  std::string left_of, right_of;  // ranks whose columns are off screen
  size_t left_n = 0, right_n = 0;  // beyond 3, a count: a list would overprint
  struct Caption {
    uint16_t rank;
    float x0, x1;
    std::string text;
  };
  std::vector<Caption> shown;  // drawn after the edge lists, clear of them
  // A rank's banner starts after its caption (Note [Banner rows]): every
  // column on screen keeps its "rank N".
  for (const RankBounds& b : rank_bounds_) {
    const ImVec2 lo = f.to_screen(b.min), hi = f.to_screen(b.max);
    stats_.rank_columns.push_back({b.rank, {lo.x, lo.y, hi.x, hi.y}});
    // One rank and no incident: nothing to tell apart, no caption.
    if (rank_bounds_.size() < 2 && story_.incidents().empty()) continue;
    float x0 = std::max(lo.x, f.canvas_min.x), x1 = std::min(hi.x, f.canvas_max.x);
    std::string caption = fmt::format("rank {}", b.rank);
    if (x1 - x0 < 12.f) {  // off screen: named at the edge it is beyond (pan, or use the minimap)
      std::string& side = lo.x >= f.canvas_max.x ? right_of : left_of;
      (lo.x >= f.canvas_max.x ? right_n : left_n) += 1;
      side += fmt::format("{}{}", side.empty() ? "rank " : ", ", b.rank);
      continue;
    }
    // A rank recorded by several processes (replacements): which one is live.
    uint32_t sources = 0, live_source = UINT32_MAX;
    for (const auto& [rank, source] : rank_sources_) {
      if (rank != b.rank) continue;
      ++sources;
      // Note [Frame caches]: the (rank, source) pairs with live Functions.
      if (std::binary_search(f.src->live_sources().begin(), f.src->live_sources().end(), std::make_pair(rank, source))) {
        live_source = sources - 1;
      }
    }
    if (sources > 1 && live_source != UINT32_MAX) caption += fmt::format(" · process gen {} of {}", live_source, sources);
    shown.push_back({b.rank, x0, x1, std::move(caption)});
  }
  if (right_n > 3) right_of = fmt::format("{} ranks", right_n);
  if (left_n > 3) left_of = fmt::format("{} ranks", left_n);
  float left_end = f.canvas_min.x, right_start = f.canvas_max.x;  // what the edge lists take
  const float y = f.panel_min.y + fs * 0.2f;
  if (!right_of.empty()) {
    right_of += " >>";
    const float w = text_width(fs, right_of.c_str());
    right_start = f.canvas_max.x - w - 12.f;
    put_text(f, fs, f.canvas_max.x - w - 6.f, y, palette().text_dim, right_of.c_str());
    f.caption_spans.push_back({f.canvas_max.x - w - 6.f, f.canvas_max.x - 6.f});
  }
  if (!left_of.empty()) {
    left_of = "<< " + left_of;
    left_end = f.canvas_min.x + text_width(fs, left_of.c_str()) + 10.f;
    put_text(f, fs, f.canvas_min.x + 4.f, y, palette().text_dim, left_of.c_str());
    f.caption_spans.push_back({f.canvas_min.x + 4.f, left_end - 6.f});
  }
  for (const auto& [rank, cx0, cx1, caption] : shown) {
    const float x0 = std::max(cx0, left_end), x1 = std::min(cx1, right_start);
    if (x1 - x0 < 12.f) continue;
    const float clip[4] = {x0, f.panel_min.y, x1, f.panel_min.y + fs * 1.5f};
    put_text(f, fs, x0 + 4.f, y, palette().text_dim, caption.c_str(), nullptr, clip);
    const float end = std::min(x1, x0 + 4.f + text_width(fs, caption.c_str()));
    f.caption_spans.push_back({x0 + 4.f, end, rank});
    stats_.captions.push_back({rank, {x0 + 4.f, y, end, y + fs}});
  }
}

// Note [Banner rows]
// ~~~~~~~~~~~~~~~~~~
// A rank's banner sits over its column in the header strip. Two can meet: a
// rank with no live Function has its banner at the strip's right end, and a
// banner wider than its column grows over its neighbour's. So banners are
// packed into rows, each in the first row where it touches nothing (with
// several rows, the captions' line is row 0's and counts too). The strip has
// as many rows as the run has ranks with a status (a status lasts to the end,
// so that is the most banners at once), at most kBannerRows: fixed for the
// trace, the canvas does not move as events step past a failure and a fit
// holds. A banner that finds no row is counted in "+N more" at the right of
// the last row (hover lists them). Its text leads with what matters ("rank 1
// lost at #532"), the detail after, dropped when the banner has no room for
// it; hover shows it whole when it is shortened or clipped.
// A banner never takes its rank's caption place: a user must always see which
// column is which rank, so the caption ("rank 1") stays and the banner starts
// after it, without the "rank 1 " the caption says ("lost at #532 ...").
// Every caption drawn is in GraphDrawStats::captions.
int GraphView::banner_rows() const {
  return static_cast<int>(std::clamp<size_t>(story_.ranks().size(), 1, kBannerRows));
}

namespace {

// "rank 0 failed (throw)" at #12: "rank 0 failed at #12 (throw)".
std::string status_at(const std::string& text, analysis::EventIndex at) {
  const size_t paren = text.find(" (");
  if (paren == std::string::npos) return fmt::format("{} at #{}", text, at);
  return fmt::format("{} at #{}{}", text.substr(0, paren), at, text.substr(paren));
}

}  // namespace

struct GraphView::Banner {
  uint16_t rank = 0;
  bool failed = true;  // failed or lost; else rebuilt
  std::string text;
  std::string full;  // the text before it was shortened to fit (hover shows it)
  size_t skip = 0;  // leading characters not drawn: the "rank N " its caption beside it says
  float x0 = 0.f, x1 = 0.f, text_w = 0.f;
  int row = -1;  // -1: no row (counted in "+N more")
  const char* drawn() const { return text.c_str() + skip; }
};

// Each rank's banner at this event: its text, where it goes, its row.
std::vector<GraphView::Banner> GraphView::plan_banners(const Frame& f, float fs) const {
  std::vector<Banner> banners;
  const int rows = banner_rows();
  auto free_row = [&](float x0, float x1) {
    auto clear = [&](float a, float b) { return x0 >= b + 4.f || a >= x1 + 4.f; };
    for (int row = 0; row < rows; ++row) {
      const bool taken = std::any_of(banners.begin(), banners.end(), [&](const Banner& o) {
        return o.row == row && !clear(o.x0, o.x1);
      }) || (row == 0 && rows > 1 && std::any_of(f.caption_spans.begin(), f.caption_spans.end(), [&](const auto& c) {
        return !clear(c.x0, c.x1);
      }));
      if (!taken) return row;
    }
    return -1;
  };
  for (uint16_t rank : story_.ranks()) {
    const RankIncident* st = story_.rank_status(rank, f.state->index);
    if (!st) continue;
    Banner b;
    b.rank = rank;
    b.failed = st->kind != IncidentKind::kRebuilt;
    if (!b.failed) {
      const RankIncident* before = story_.failure_before(*st);
      b.text = before ? fmt::format("rank {} rebuilt at #{} after it {} at #{}", rank, st->at,
                                    before->kind == IncidentKind::kLost ? "was lost" : "failed", before->at)
                      : fmt::format("rank {} rebuilt at #{}", rank, st->at);
    } else {
      b.text = status_at(st->text, st->at);
      if (st->kind == IncidentKind::kLost) b.text += fmt::format(" · no data after #{}", st->last_data);
    }
    float x0 = f.canvas_min.x + 2.f, x1 = f.canvas_max.x - 2.f;
    bool has_column = false;
    for (const RankBounds& r : rank_bounds_) {
      if (r.rank != rank) continue;
      has_column = true;
      x0 = std::max(f.to_screen(r.min).x, f.canvas_min.x + 2.f);
      x1 = std::min(f.to_screen(r.max).x, f.canvas_max.x - 2.f);
    }
    // After its column's caption, which names the rank: the banner need not.
    float after_caption = f.panel_min.x + 2.f;
    for (const Frame::CaptionSpan& c : f.caption_spans) {
      if (c.rank != rank) continue;
      after_caption = c.x1 + 6.f;
      x0 = std::max(x0, after_caption);
      const std::string prefix = fmt::format("rank {} ", rank);
      if (b.text.rfind(prefix, 0) == 0) b.skip = prefix.size();
    }
    // A rebuilt rank off screen is named in the edge list; a failure always shows.
    if (!b.failed && (x1 - x0 < 12.f || !has_column)) continue;
    if (!has_column) {
      // No live Function on that rank here (the compact view lays out live
      // ones only): the banner goes at the right end, as wide as its text,
      // so it does not sit over the other ranks' captions and boxes.
      b.text += " · no live Functions";
      x0 = x1 - (text_width(fs, b.drawn()) + 16.f);
    }
    // Longer than the room from its start to the panel's edge: the detail
    // goes first (" · no data after #N", then "(process killed)", and a
    // rebuilt rank's " after it failed at #N"), so what matters ("lost at
    // #532", "rebuilt at #696") is read whole; hover shows the full text.
    b.full = b.text;
    for (const char* detail : {" · ", " (", " after it "}) {
      if (text_width(fs, b.drawn()) + 16.f <= f.panel_max.x - 2.f - x0) break;
      const size_t at = b.text.find(detail, b.skip);
      if (at != std::string::npos) b.text.erase(at);
    }
    b.text_w = text_width(fs, b.drawn()) + 16.f;
    if (x1 - x0 < b.text_w) x1 = std::min(x0 + b.text_w, f.panel_max.x - 2.f);
    if (x1 - x0 < b.text_w) x0 = std::max(after_caption, x1 - b.text_w);
    b.x0 = x0;
    b.x1 = x1;
    b.row = free_row(x0, x1);
    banners.push_back(std::move(b));
  }
  return banners;
}

void GraphView::draw_banners(Frame& f) {
  if (story_.incidents().empty()) return;
  const Palette& pal = palette();
  const float fs = ImGui::GetFontSize();
  const float h = std::round(fs * 1.45f), step = h + 2.f;
  const int rows = banner_rows();
  std::vector<Banner> banners = plan_banners(f, fs);
  // "+N more" at the right of the last row; the banners it would cover join it.
  std::string more;
  float more_x0 = f.panel_max.x;
  for (size_t n = 0;;) {
    size_t now = 0;
    for (const Banner& b : banners) now += b.row < 0;
    if (now == 0 || now == n) break;
    n = now;
    more = fmt::format("+{} more", n);
    more_x0 = f.panel_max.x - 2.f - (text_width(fs, more.c_str()) + 16.f);
    for (Banner& b : banners) {
      if (b.row == rows - 1 && b.x1 + 4.f > more_x0) b.row = -1;
    }
  }
  std::string hidden;
  for (const Banner& b : banners) {
    if (b.row < 0) {
      hidden += fmt::format("{}{}", hidden.empty() ? "" : "\n", b.full);
      continue;
    }
    const float y0 = f.panel_min.y + 1.f + static_cast<float>(b.row) * step, y1 = y0 + h;
    f.dl->AddRectFilled({b.x0, y0}, {b.x1, y1}, b.failed ? pal.banner : pal.recovered, 3.f);
    const float clip[4] = {b.x0, y0, b.x1, y1};
    put_text(f, fs, b.x0 + 8.f, y0 + (h - fs) * 0.5f, pal.banner_text, b.drawn(), nullptr, clip);
    const bool clipped = b.x1 - b.x0 < b.text_w - 0.5f;
    stats_.banners.push_back({b.rank, {b.x0, y0, b.x1, y1}});
    stats_.banner_failed.push_back(b.failed);
    stats_.banner_clipped.push_back(clipped);
    if ((clipped || b.text != b.full) && ImGui::IsMouseHoveringRect({b.x0, y0}, {b.x1, y1})) {
      ImGui::SetTooltip("%s", b.full.c_str());
    }
  }
  if (hidden.empty()) return;
  const float y0 = f.panel_min.y + 1.f + static_cast<float>(rows - 1) * step, y1 = y0 + h;
  const float x1 = f.panel_max.x - 2.f;
  f.dl->AddRectFilled({more_x0, y0}, {x1, y1}, pal.banner, 3.f);
  put_text(f, fs, more_x0 + 8.f, y0 + (h - fs) * 0.5f, pal.banner_text, more.c_str());
  stats_.banner_more = {more_x0, y0, x1, y1};
  if (ImGui::IsMouseHoveringRect({more_x0, y0}, {x1, y1})) ImGui::SetTooltip("%s", hidden.c_str());
}

// The owners that hold hooks now (or held one and are alive: Note [Legend of
// the trace's owners]), each a square of its colour
// (red-ringed once destroyed, ringed in the lingering colour while replaced
// but alive: Note [Lingering owners]) and its tag; hover for the full name. Entries
// wrap onto a second line; what does not fit then is "+N more" (hover
// lists them): the legend never runs past the panel's edge.
// One entry per owner identity (Note [Owner colours]): "Reducer 1" of every rank together.
struct GraphView::LegendEntry {
  std::string tag, name;
  uint32_t color = 0;
  uint32_t live = 0, dead = 0, lingering = 0, hooks = 0;  // lingering: of the live
  std::string ranks;
  std::vector<uint32_t> gens;  // Note [Module generations]: only on a rank holding copies
};

// Note [Legend of the trace's owners]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The legend names what the graph can show: owners holding hooks now, and
// live owners that have held one by this event (a Reducer between removing
// and adding its hooks). An owner that has never held a hook is not there:
// the torch bridge makes its "c++ hooks" owner at start whether or not the
// program registers a C++ hook, and a legend saying "C++ hooks" beside a
// graph of R1 chips sends the user looking for chips that do not exist.
std::vector<GraphView::LegendEntry> GraphView::legend_entries(const analysis::State& state) const {
  const analysis::Model& model = *model_;
  if (owner_first_hook_of_ != &model || owner_first_hook_.size() != model.owners().size()) {
    owner_first_hook_.assign(model.owners().size(), analysis::kNever);
    for (const analysis::HookInfo& h : model.hooks()) {
      if (h.owner < owner_first_hook_.size()) owner_first_hook_[h.owner] = std::min(owner_first_hook_[h.owner], h.added_at);
    }
    owner_first_hook_of_ = &model;
  }
  std::vector<LegendEntry> entries;
  const Generations& gens = scene_->generations();
  const auto at = static_cast<analysis::EventIndex>(state.index);
  for (const analysis::OwnerAt& o : state.owners) {
    const bool held = o.owner < owner_first_hook_.size() && owner_first_hook_[o.owner] <= at;
    if (o.hooks == 0 && (!o.live || !held)) continue;
    const std::string name = model.owner_name(o.owner);
    auto it = std::find_if(entries.begin(), entries.end(), [&](const LegendEntry& e) { return e.name == name; });
    if (it == entries.end()) {  // Note [Owner legend labels]
      LegendEntry e;
      e.tag = owner_legend_label(model, o.owner, scene_->owner_tag(o.owner));
      e.name = name;
      e.color = scene_->owner_color(o.owner);
      it = entries.insert(entries.end(), std::move(e));
    }
    (o.live ? it->live : it->dead) += 1;
    it->lingering += o.live && analysis::owner_status(model, o.owner, at) == analysis::OwnerStatus::kLingering;
    it->hooks += o.hooks;
    it->ranks += fmt::format("{}{}", it->ranks.empty() ? "" : ", ", model.owners()[o.owner].rank);
    if (gens.owner_label_from(o.owner) != analysis::kNever && gens.owner_label_from(o.owner) <= at &&
        std::find(it->gens.begin(), it->gens.end(), gens.of_owner(o.owner)) == it->gens.end()) {
      it->gens.push_back(gens.of_owner(o.owner));
    }
  }
  return entries;
}

void GraphView::draw_legend(const analysis::State& state) {
  const std::vector<LegendEntry> entries = legend_entries(state);
  for (const LegendEntry& e : entries) stats_.legend_names.push_back(e.name);
  if (entries.empty()) {
    ImGui::TextDisabled("no hook owners");
    return;
  }
  auto label_of = [](const LegendEntry& e) {
    std::string gen;
    for (uint32_t g : e.gens) gen += fmt::format("{}{}", gen.empty() ? " gen " : "/", g);
    return e.tag + gen +
           (e.live == 0                   ? " destroyed"
            : e.lingering == e.live       ? (e.dead ? " lingering (part destroyed)" : " lingering")
            : e.lingering > 0             ? (e.dead ? " (part lingering, part destroyed)" : " (part lingering)")
            : e.dead                      ? " (part destroyed)"
                                          : "");
  };
  const float h = ImGui::GetTextLineHeight(), side = h * 0.75f, gap = 10.f;
  const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
  constexpr int kLines = 2;
  int line = 1;
  size_t shown = 0;
  for (; shown < entries.size(); ++shown) {
    const LegendEntry& e = entries[shown];
    const std::string label = label_of(e);
    const float w = side + 3.f + 2.f + ImGui::CalcTextSize(label.c_str()).x;
    // On the last line, room for "+N more" after it unless it is the last entry.
    const std::string more = fmt::format("+{} more", entries.size() - shown - 1);
    const float reserve = line == kLines && shown + 1 < entries.size() ? gap + ImGui::CalcTextSize(more.c_str()).x : 0.f;
    if (shown > 0) {
      const float x = ImGui::GetItemRectMax().x + gap;
      if (x + w + reserve <= right) {
        ImGui::SameLine(0.f, gap);
      } else if (line < kLines) {
        ++line;  // the next line, at the window's left
      } else {
        break;
      }
    }
    const ImVec2 p = ImGui::GetCursorScreenPos();
    if (shown == 0 && p.x + w > right && line < kLines) {  // after the toolbar: start below it
      ImGui::NewLine();
      ++line;
    }
    draw_legend_entry(e, label);
  }
  stats_.legend_entries = static_cast<uint32_t>(shown);
  stats_.legend_more = static_cast<uint32_t>(entries.size() - shown);
  stats_.legend_lines = static_cast<uint32_t>(line);
  legend_lines_ = stats_.legend_lines;
  stats_.panel_right = right;
  if (shown < entries.size()) {
    ImGui::SameLine(0.f, gap);
    ImGui::TextDisabled("+%zu more", entries.size() - shown);
    stats_.legend_right = std::max(stats_.legend_right, ImGui::GetItemRectMax().x);
    if (ImGui::IsItemHovered()) {
      ImGui::BeginTooltip();
      for (size_t i = shown; i < entries.size(); ++i) ImGui::TextUnformatted(label_of(entries[i]).c_str());
      ImGui::EndTooltip();
    }
  }
}

// A square of the owner's colour (ringed once destroyed or lingering), its label, its tooltip.
void GraphView::draw_legend_entry(const LegendEntry& e, const std::string& label) {
  const Palette& pal = palette();
  const float h = ImGui::GetTextLineHeight(), side = h * 0.75f;
  ImDrawList* dl = ImGui::GetWindowDrawList();
  const ImVec2 q = ImGui::GetCursorScreenPos();
  const ImVec2 a{q.x + 1.f, q.y + (h - side) * 0.5f + 1.f}, b{a.x + side, a.y + side};
  const bool dead = e.live == 0, lingering = !dead && e.lingering > 0;  // of some rank
  if (dead || lingering) {
    dl->AddRectFilled({a.x - 2.f, a.y - 2.f}, {b.x + 2.f, b.y + 2.f}, dead ? pal.alarm : pal.lingering);
  }
  dl->AddRectFilled(a, b, e.color);
  ImGui::Dummy({side + 3.f, h});
  ImGui::SameLine(0.f, 2.f);
  stats_.legend_lingering += lingering;
  if (dead || lingering) {
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(dead ? pal.alarm : pal.lingering), "%s", label.c_str());
  } else {
    ImGui::TextUnformatted(label.c_str());
  }
  stats_.legend_right = std::max(stats_.legend_right, ImGui::GetItemRectMax().x);
  stats_.legend_gens += e.gens.empty() ? 0 : 1;
  if (ImGui::IsItemHovered()) {
    ImGui::SetTooltip("%s on rank%s %s: %u alive (%u of them replaced, still alive: lingering), %u destroyed; "
                      "%u hook%s attached", e.name.c_str(), e.live + e.dead == 1 ? "" : "s", e.ranks.c_str(), e.live,
                      e.lingering, e.dead, e.hooks, e.hooks == 1 ? "" : "s");
  }
}

// Where fit looks when everything does not fit readably: the selection,
// else the boxes holding leaked hooks, else the current event's box, else
// the top of the graph (the loss, where backward starts).
bool GraphView::focus_region(const Frame& f, Vec2* lo, Vec2* hi) const {
  const Layout& l = *layout_;
  const FoldedGraph& fg = *folded_;
  *lo = {INFINITY, INFINITY};
  *hi = {-INFINITY, -INFINITY};
  auto take = [&](uint32_t u) {
    if (u >= l.center.size()) return;  // not in the compact layout
    *lo = {std::min(lo->x, l.center[u].x - l.size[u].x * 0.5f), std::min(lo->y, l.center[u].y - l.size[u].y * 0.5f)};
    *hi = {std::max(hi->x, l.center[u].x + l.size[u].x * 0.5f), std::max(hi->y, l.center[u].y + l.size[u].y * 0.5f)};
  };
  const size_t nf = model_->functions().size();
  if (selected_function_ < nf && f.src->function_at(scene_->slot_of(selected_function_))) {
    take(fg.unit_of_node[scene_->slot_of(selected_function_)]);
    return false;
  }
  // A stale fire or a removal at this event: its box first.
  if (f.removing < nf || (f.firing_stale && f.running < nf)) {
    take(fg.unit_of_node[scene_->slot_of(f.removing < nf ? f.removing : f.running)]);
    return false;
  }
  // A rank failing or lost at this event: its live boxes.
  const auto at = static_cast<analysis::EventIndex>(f.state->index);
  for (const RankIncident& inc : story_.incidents()) {
    if (inc.at == at && inc.kind != IncidentKind::kRebuilt) f.src->take_rank_boxes(inc.rank, lo, hi);
  }
  if (std::isfinite(lo->x)) return false;
  std::vector<Chip> chips;  // Note [Alarms by intervals]
  f.src->take_alarm_boxes([&](uint32_t u) { return box_alarm(f, u, chips); }, lo, hi);
  if (std::isfinite(lo->x)) return true;
  for (analysis::FunctionIndex fn : {f.running, f.removing}) {
    if (fn < nf) {
      take(fg.unit_of_node[scene_->slot_of(fn)]);
      return false;
    }
  }
  if (f.src->shown_count() > 0) {  // the live boxes' bounds
    *lo = f.src->shown_min();
    *hi = f.src->shown_max();
  }
  hi->y = lo->y;  // the top
  return false;
}

}  // namespace hookscope::render
