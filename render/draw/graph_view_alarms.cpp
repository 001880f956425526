// The boxes holding a hook of a destroyed owner (the alarm), at any event
// in the time of the alarms, not of the Functions: the LiveIndex's alarm
// intervals (Note [Alarms by intervals]) and the rules a frame checks them by.

#include <algorithm>
#include <cmath>

#include "analysis/owner_status.h"
#include "render/draw/graph_view_internal.h"
#include "render/draw/graph_view_live.h"

namespace hookscope::render {

namespace {

size_t count_until(const analysis::EventIndex* begin, const analysis::EventIndex* end, analysis::EventIndex e) {
  return static_cast<size_t>(std::upper_bound(begin, end, e) - begin);
}

}  // namespace

// Note [Alarms by intervals]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A box is an alarm while it holds a hook whose owner is destroyed (the
// #21591 leak) or lingers (Note [Lingering owners]: from alarm_from): zoomed out, its density cell is red; fit frames such boxes
// first. Below GraphViewOptions::indexed_functions a frame finds them by
// walking the live boxes; above it, and while the State is pending, that
// walk is what the LiveIndex exists to avoid. When a hook becomes leaked is
// known from the model: a segment of hook h (on a Function, or on its
// leaf's tensor) whose owner is destroyed at d holds a dead owner's hook
// from max(segment start, d) to the segment's end, and on a Function only
// while that Function lives. Per laid-out unit the LiveIndex merges these
// intervals over its slots' Functions, once per layout; per grid cell
// (Note [Liveness by intervals]) it keeps their starts and ends sorted, so
// that at event e the cells with some alarm unit are found in O(log) each
// (only cells that ever hold one are looked at; a unit's intervals are
// disjoint, so the count is of units) and their units are checked by their
// own intervals. That gives every unit that is an alarm at e. A unit of one
// Function (no folded group) with no leaked tensor hook is an alarm by both
// rules exactly then; for the others (a Function's leaked hook while
// another Function of its slot is the one drawn, a tensor hook while the
// slot is live) the frame checks the rule the walk uses (cell_alarm,
// box_alarm; kAlarmCheck), so the marks and the focus are the walk's.
// A cell with more than kExactAlarms alarm units at e (a Reducer destroyed
// with every parameter's hook left: hundreds of thousands of boxes) is
// crowded: a frame walks the crowded cells in view unit by unit while
// kWalkAlarms units last (zoomed in a little, few are in view), else marks
// every density cell its alarm units' centres span (as pending_cells spreads
// counts; zoomed all the way out a grid cell is a density cell or two), and
// fit takes their boxes' bounds. A frame asks for the alarms only when it
// draws density cells or fits (Frame::resolve_alarms) and keeps them while
// no interval, Function or tensor hook starts or ends (alarms_changed):
// playing through fires costs nothing, and neither does a leak-free trace.
bool LiveIndex::index_alarms(const analysis::Model& model, const FoldedGraph& fg, const std::vector<uint32_t>& cell_of,
                             const std::atomic<bool>& cancel) {
  const auto& owners = model.owners();
  const auto& hooks = model.hooks();
  struct Entry {
    uint32_t cell, unit, begin, end;  // its intervals: merged[begin, end)
  };
  std::vector<Entry> entries;
  std::vector<std::pair<EventIndex, EventIndex>> scratch, merged;
  for (uint32_t u = 0; u < cell_of.size(); ++u) {
    if ((u & 0xffff) == 0 && cancel) return false;
    scratch.clear();
    // One Function, no folded group, no tensor hook: its intervals are
    // exactly when both rules hold (a leaked hook on the live Function drawn).
    bool exact = fg.group_of_unit[u] == kNoGroup && slots_of_unit(u).size() == 1 &&
                 functions_of_slot(slots_of_unit(u)[0]).size() == 1;
    for (uint32_t s : slots_of_unit(u)) {
      for (uint32_t fn : functions_of_slot(s)) {
        const analysis::FunctionInfo& info = model.functions()[fn];
        for (uint32_t si : model.segments_of(fn)) {
          const analysis::HookSegment& seg = model.segments()[si];
          const analysis::OwnerIndex o = hooks[seg.hook].owner;
          if (o >= owners.size() || analysis::alarm_from(owners[o]) == analysis::kNever) continue;
          EventIndex from = std::max(seg.from, analysis::alarm_from(owners[o])), to = seg.to;
          if (!seg.on_tensor) {
            from = std::max(from, info.created_at);
            to = std::min(to, info.released_at);
          }
          if (from < to) scratch.push_back({from, to});
          exact = exact && !(seg.on_tensor && from < to);
        }
      }
    }
    if (scratch.empty()) continue;
    std::sort(scratch.begin(), scratch.end());
    const auto begin = static_cast<uint32_t>(merged.size());
    for (const auto& iv : scratch) {
      if (merged.size() > begin && iv.first <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, iv.second);
      } else {
        merged.push_back(iv);
      }
    }
    entries.push_back({cell_of[u], u | (exact ? 0u : kAlarmCheck), begin, static_cast<uint32_t>(merged.size())});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.cell < b.cell; });
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& en = entries[i];
    if (i == 0 || en.cell != entries[i - 1].cell) {
      alarm_cells_.push_back(en.cell);
      alarm_cell_iv_.push_back(static_cast<uint32_t>(alarm_starts_.size()));
      alarm_cell_unit_.push_back(static_cast<uint32_t>(alarm_unit_.size()));
    }
    alarm_unit_.push_back(en.unit);
    alarm_unit_iv_.push_back(static_cast<uint32_t>(alarm_iv_.size()));
    for (uint32_t k = en.begin; k < en.end; ++k) {
      alarm_iv_.push_back(merged[k]);
      alarm_starts_.push_back(merged[k].first);
      alarm_ends_.push_back(merged[k].second);
    }
  }
  alarm_cell_iv_.push_back(static_cast<uint32_t>(alarm_starts_.size()));
  alarm_cell_unit_.push_back(static_cast<uint32_t>(alarm_unit_.size()));
  alarm_unit_iv_.push_back(static_cast<uint32_t>(alarm_iv_.size()));
  alarm_cell_bounds_.resize(4 * alarm_cells_.size());
  for (size_t c = 0; c < alarm_cells_.size(); ++c) {
    std::sort(alarm_starts_.begin() + alarm_cell_iv_[c], alarm_starts_.begin() + alarm_cell_iv_[c + 1]);
    std::sort(alarm_ends_.begin() + alarm_cell_iv_[c], alarm_ends_.begin() + alarm_cell_iv_[c + 1]);
    Vec2 b[4] = {{INFINITY, INFINITY}, {-INFINITY, -INFINITY}, {INFINITY, INFINITY}, {-INFINITY, -INFINITY}};
    for (uint32_t j = alarm_cell_unit_[c]; j < alarm_cell_unit_[c + 1]; ++j) {
      const uint32_t u = alarm_unit_[j] & ~kAlarmCheck;
      const Vec2 centre{(box_min_[u].x + box_max_[u].x) * 0.5f, (box_min_[u].y + box_max_[u].y) * 0.5f};
      b[0] = {std::min(b[0].x, centre.x), std::min(b[0].y, centre.y)};
      b[1] = {std::max(b[1].x, centre.x), std::max(b[1].y, centre.y)};
      b[2] = {std::min(b[2].x, box_min_[u].x), std::min(b[2].y, box_min_[u].y)};
      b[3] = {std::max(b[3].x, box_max_[u].x), std::max(b[3].y, box_max_[u].y)};
    }
    std::copy(b, b + 4, alarm_cell_bounds_.begin() + static_cast<long>(4 * c));
  }
  alarm_changes_.reserve(2 * alarm_iv_.size());
  for (const auto& [from, to] : alarm_iv_) {
    alarm_changes_.push_back(from);
    if (to != analysis::kNever) alarm_changes_.push_back(to);
  }
  std::sort(alarm_changes_.begin(), alarm_changes_.end());
  alarm_changes_.erase(std::unique(alarm_changes_.begin(), alarm_changes_.end()), alarm_changes_.end());
  return true;
}

bool LiveIndex::alarms_changed(EventIndex a, EventIndex b) const {
  if (keep_changed(a, b)) return true;  // kNever included
  if (a > b) std::swap(a, b);
  const auto it = std::upper_bound(alarm_changes_.begin(), alarm_changes_.end(), a);
  return it != alarm_changes_.end() && *it <= b;
}

void LiveIndex::alarm_units(EventIndex e, std::vector<uint32_t>& out, std::vector<uint32_t>& crowded) const {
  out.clear();
  crowded.clear();
  const EventIndex* starts = alarm_starts_.data();
  const EventIndex* ends = alarm_ends_.data();
  for (size_t c = 0; c < alarm_cells_.size(); ++c) {
    const uint32_t b = alarm_cell_iv_[c], n = alarm_cell_iv_[c + 1];
    if (e < starts[b] || e >= ends[n - 1]) continue;  // before every interval, after every one
    // Intervals holding e: those started by e less those ended by e; a
    // unit's are disjoint, so that is its units holding e.
    const size_t holding = count_until(starts + b, starts + n, e) - count_until(ends + b, ends + n, e);
    if (holding == 0) continue;
    if (holding > kExactAlarms) {
      crowded.push_back(static_cast<uint32_t>(c));
    } else {
      alarm_units_of_cell(static_cast<uint32_t>(c), e, out);
    }
  }
}

void LiveIndex::alarm_units_of_cell(uint32_t c, EventIndex e, std::vector<uint32_t>& out) const {
  for (uint32_t j = alarm_cell_unit_[c]; j < alarm_cell_unit_[c + 1]; ++j) {
    const auto* ib = alarm_iv_.data() + alarm_unit_iv_[j];
    const auto* ie = alarm_iv_.data() + alarm_unit_iv_[j + 1];
    const auto* it = std::upper_bound(ib, ie, e, [](EventIndex v, const auto& iv) { return v < iv.first; });
    if (it != ib && e < (it - 1)->second) out.push_back(alarm_unit_[j]);
  }
}

// The density cells' rule: a box of one Function (not a folded group)
// whose live Function holds a hook of a destroyed owner.
bool GraphView::cell_alarm(const Frame& f, uint32_t unit) const {
  const FoldedGraph& fg = *folded_;
  if (fg.group_of_unit[unit] != kNoGroup) return false;
  const uint32_t slot = fg.node_of_unit[unit];
  if (slot == kNoSlot) return false;
  const uint32_t live = f.slot_live_of(slot);
  if (!live) return false;
  for (const auto& hooks : f.function_at(live - 1).hooks) {
    for (const analysis::HookAt& h : hooks) {
      const analysis::OwnerIndex o = model_->hooks()[h.hook].owner;
      if (o < f.owner_status.size() && f.owner_status[o]) return true;
    }
  }
  return false;
}

// Fit's rule (focus_region): a box with a chip of a destroyed owner's hook
// still attached (on a Function or on a leaf's tensor; not a removed one's ghost).
bool GraphView::box_alarm(const Frame& f, uint32_t unit, std::vector<Chip>& scratch) const {
  chips_of(f, unit, scratch);
  return std::any_of(scratch.begin(), scratch.end(), [](const Chip& c) { return c.alarm() && !c.removed; });
}

void GraphView::Frame::resolve_alarms() const {
  const auto e = static_cast<analysis::EventIndex>(view->index());
  if (alarms_at != analysis::kNever && alarms_index == live_index && alarms_generation == live_key.generation &&
      !live_index->alarms_changed(alarms_at, e)) {
    return;
  }
  live_index->alarm_units(e, alarm_units, alarm_crowded);
  alarms_at = e;
  alarms_index = live_index;
  alarms_generation = live_key.generation;
}

void GraphView::mark_alarm_cells(Frame& f, float cell, int cols, int rows) {
  const Layout& l = *layout_;
  f.resolve_alarms();
  auto mark = [&](int x, int y) { f.density[static_cast<size_t>(y) * cols + x] |= 0x80000000u; };
  // As draw_cells does for the live boxes: the cell of its centre.
  auto mark_units = [&](const std::vector<uint32_t>& units) {
    for (const uint32_t a : units) {
      const uint32_t u = a & ~LiveIndex::kAlarmCheck;
      if (u >= l.center.size()) continue;
      const ImVec2 p = f.to_screen(l.center[u]);
      const int x = static_cast<int>((p.x - f.canvas_min.x) / cell), y = static_cast<int>((p.y - f.canvas_min.y) / cell);
      if (x < 0 || y < 0 || x >= cols || y >= rows) continue;
      if ((a & LiveIndex::kAlarmCheck) && !cell_alarm(f, u)) continue;
      mark(x, y);
    }
  };
  mark_units(f.alarm_units);
  // A crowded cell in view: its units one by one while kWalkAlarms lasts
  // (zoomed in a little, a few cells are in view), else, as pending_cells
  // spreads its count, every cell its alarm units' centres span.
  constexpr uint32_t kWalkAlarms = 16384;
  uint32_t walk = kWalkAlarms;
  const LiveIndex& x = *f.live_index;
  const auto e = static_cast<analysis::EventIndex>(f.view->index());
  for (uint32_t c : f.alarm_crowded) {
    const ImVec2 a = f.to_screen(x.alarm_cell_min(c)), b = f.to_screen(x.alarm_cell_max(c));
    const int x0 = static_cast<int>(std::floor((a.x - f.canvas_min.x) / cell));
    const int y0 = static_cast<int>(std::floor((a.y - f.canvas_min.y) / cell));
    const int x1 = static_cast<int>(std::floor((b.x - f.canvas_min.x) / cell));
    const int y1 = static_cast<int>(std::floor((b.y - f.canvas_min.y) / cell));
    if (x1 < 0 || y1 < 0 || x0 >= cols || y0 >= rows) continue;
    if (x.alarm_cell_size(c) <= walk) {
      walk -= x.alarm_cell_size(c);
      f.alarm_scratch.clear();
      x.alarm_units_of_cell(c, e, f.alarm_scratch);
      mark_units(f.alarm_scratch);
      continue;
    }
    for (int y = std::max(y0, 0); y <= std::min(y1, rows - 1); ++y) {
      for (int k = std::max(x0, 0); k <= std::min(x1, cols - 1); ++k) mark(k, y);
    }
  }
}

void GraphView::take_alarm_boxes(const Frame& f, Vec2* lo, Vec2* hi) const {
  const Layout& l = *layout_;
  f.resolve_alarms();
  std::vector<Chip> chips;
  auto take = [&](Vec2 a, Vec2 b) {
    *lo = {std::min(lo->x, a.x), std::min(lo->y, a.y)};
    *hi = {std::max(hi->x, b.x), std::max(hi->y, b.y)};
  };
  for (const uint32_t a : f.alarm_units) {
    const uint32_t u = a & ~LiveIndex::kAlarmCheck;
    if (u >= l.center.size() || ((a & LiveIndex::kAlarmCheck) && !box_alarm(f, u, chips))) continue;
    const Vec2 c = l.center[u], s = l.size[u];
    take({c.x - s.x * 0.5f, c.y - s.y * 0.5f}, {c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  }
  const LiveIndex& x = *f.live_index;
  for (uint32_t c : f.alarm_crowded) take(x.alarm_cell_box_min(c), x.alarm_cell_box_max(c));
}

}  // namespace hookscope::render
