// The timeline's time <-> x mapping (Note [Timeline time mapping]), its fit,
// and idle gaps and the start-up band drawn collapsed or expanded (Note [Idle
// gaps], Note [Start-up band]).

#include <imgui.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "render/layout/colors.h"
#include "render/draw/timeline_view.h"
#include "render/draw/timeline_view_internal.h"

namespace hookscope::render {

namespace {

// The widest a collapsed gap is drawn at fit, and the most of the plot all
// collapsed gaps together may take.
constexpr float kGapPx = 96.f;
constexpr float kGapsShare = 0.3f;

double length(const IdleGap& g) { return static_cast<double>(g.end) - static_cast<double>(g.begin); }

}  // namespace

// Note [Timeline time mapping]: view time is time less, for each collapsed
// gap before it, the gap's length minus gap_ns_; inside a collapsed gap, time
// is scaled into its gap_ns_. Monotone, so hit tests invert drawing exactly.
double TimelineView::view_of(double t) const {
  const std::vector<IdleGap>& gaps = index_.idle_gaps();
  double shift = 0.0;  // view time minus time
  for (size_t k = 0; k < gaps.size() && k < gap_collapsed_.size(); ++k) {
    if (!gap_collapsed_[k]) continue;
    const IdleGap& g = gaps[k];
    if (t <= static_cast<double>(g.begin)) break;
    const double len = length(g);
    if (t >= static_cast<double>(g.end)) {
      shift += gap_ns_ - len;
      continue;
    }
    return static_cast<double>(g.begin) + shift + (t - static_cast<double>(g.begin)) * gap_ns_ / len;
  }
  return t + shift;
}

double TimelineView::time_of(double v) const {
  const std::vector<IdleGap>& gaps = index_.idle_gaps();
  double shift = 0.0;
  for (size_t k = 0; k < gaps.size() && k < gap_collapsed_.size(); ++k) {
    if (!gap_collapsed_[k]) continue;
    const IdleGap& g = gaps[k];
    const double vb = static_cast<double>(g.begin) + shift;
    if (v <= vb) break;
    const double len = length(g);
    if (v >= vb + gap_ns_) {
      shift += gap_ns_ - len;
      continue;
    }
    return static_cast<double>(g.begin) + (gap_ns_ > 0.0 ? (v - vb) * len / gap_ns_ : 0.0);
  }
  return v - shift;
}

float TimelineView::x_of(double t) const {
  return canvas_x_ + static_cast<float>((view_of(t) - begin_) / ns_per_px_);
}
double TimelineView::t_of(float x) const { return time_of(begin_ + static_cast<double>(x - canvas_x_) * ns_per_px_); }

// The trace's events fill the plot; each collapsed gap gets kGapPx (less when
// many share the plot), the rest of the width is the time with activity.
void TimelineView::fit_now() {
  fit_pending_ = false;
  const double begin = static_cast<double>(index_.begin_ns()), end = static_cast<double>(index_.end_ns());
  double active = end - begin;
  int collapsed = 0;
  for (size_t k = 0; k < index_.idle_gaps().size(); ++k) {
    if (!gap_collapsed(k)) continue;
    active -= length(index_.idle_gaps()[k]);
    ++collapsed;
  }
  active = std::max(active, 1.0);
  const float gap_px =
      collapsed == 0 ? 0.f : std::min(kGapPx, canvas_w_ * kGapsShare / static_cast<float>(collapsed));
  ns_per_px_ = active * 1.02 / std::max(canvas_w_ - gap_px * static_cast<float>(collapsed), 1.f);
  gap_ns_ = gap_px * ns_per_px_;
  begin_ = view_of(begin) - active * 0.01;
}

void TimelineView::set_gap_collapsed(size_t k, bool collapsed) {
  if (k >= gap_collapsed_.size() || gap_collapsed_[k] == collapsed) return;
  gap_collapsed_[k] = collapsed ? 1 : 0;
  fit_pending_ = true;  // the view time of everything after it moved
}

// Collapsed: a hatched band over every track with what the gap was, wrapped
// to the band. Expanded: a thin bracket under the axis with the same label.
// A click on the label toggles the gap; a click elsewhere in it still moves
// to the nearest event (Note [Idle gaps]).
void TimelineView::draw_gaps(TimelineFrame& f, float top, float bottom) {
  const std::vector<IdleGap>& gaps = index_.idle_gaps();
  const Palette& p = palette();
  const float fs = ImGui::GetFontSize();
  for (size_t k = 0; k < gaps.size(); ++k) {
    const IdleGap& g = gaps[k];
    const bool collapsed = gap_collapsed(k);
    const float x0 = x_of(static_cast<double>(g.begin)), x1 = x_of(static_cast<double>(g.end));
    if (x1 < f.plot_x || x0 > f.max.x) continue;
    char dur[32];
    format_duration(dur, sizeof dur, length(g));
    TimelineGapDraw d;
    d.x0 = x0;
    d.x1 = x1;
    d.collapsed = collapsed;
    d.events = g.events;
    d.label = std::string(dur) + " " + g.what;
    const float band0 = std::max(x0, f.plot_x), band1 = std::min(x1, f.max.x);
    if (collapsed) {
      f.dl->AddRectFilled({band0, top}, {band1, bottom}, with_alpha(p.background, 235));
      for (float hx = x0 - (bottom - top); hx < x1; hx += 8.f) {  // hatching, clipped to the band
        const float a = std::max(hx, x0), b = std::min(hx + (bottom - top), x1);
        if (b <= a) continue;
        f.dl->AddLine({a, bottom - (a - hx)}, {b, bottom - (b - hx)}, with_alpha(p.grid, 200));
      }
      f.dl->AddLine({x0, top}, {x0, bottom}, p.text_dim, 1.f);
      f.dl->AddLine({x1, top}, {x1, bottom}, p.text_dim, 1.f);
    } else {
      f.dl->AddLine({band0, top + 2.f}, {band1, top + 2.f}, p.text_dim, 1.f);
      f.dl->AddLine({x0, top}, {x0, top + 6.f}, p.text_dim, 1.f);
      f.dl->AddLine({x1, top}, {x1, top + 6.f}, p.text_dim, 1.f);
    }
    // The label: wrapped inside a collapsed band; on one line, centred, over an expanded one.
    const float inner = std::max(band1 - band0 - 6.f, fs * 3.f);
    const ImVec2 size = ImGui::GetFont()->CalcTextSizeA(fs, FLT_MAX, collapsed ? inner : 0.f, d.label.c_str());
    const float lx = collapsed ? (band0 + band1 - size.x) * 0.5f
                               : std::clamp((band0 + band1 - size.x) * 0.5f, f.plot_x, f.max.x - size.x);
    const float ly = top + 5.f;
    d.lx0 = lx - 2.f;
    d.ly0 = ly - 1.f;
    d.lx1 = lx + size.x + 2.f;
    d.ly1 = ly + size.y + 1.f;
    f.dl->AddRectFilled({d.lx0, d.ly0}, {d.lx1, d.ly1}, with_alpha(p.background, 230), 3.f);
    f.dl->AddText(ImGui::GetFont(), fs, {lx, ly}, p.text, d.label.c_str(), nullptr, collapsed ? inner : 0.f);
    const bool over = f.hovered && f.mouse.x >= d.lx0 && f.mouse.x < d.lx1 && f.mouse.y >= d.ly0 && f.mouse.y < d.ly1;
    if (over) {
      f.hover_event = UINT32_MAX;
      f.hover_span = nullptr;
      if (g.events > 0) {  // Note [Start-up band]
        ImGui::SetTooltip("%s: %u events before the first step's forward (#%u).\nClick to %s.", d.label.c_str(),
                          g.events, g.after, collapsed ? "draw it to scale" : "collapse it");
      } else {
        ImGui::SetTooltip("%s: no event on any rank from #%u to #%u.\nClick to %s.", d.label.c_str(), g.before,
                          g.after, collapsed ? "draw it to scale" : "collapse it");
      }
      if (f.clicked) {
        f.gap_clicked = true;
        set_gap_collapsed(k, !collapsed);
      }
    }
    stats_.gaps.push_back(std::move(d));
  }
}

}  // namespace hookscope::render
