// The boxes holding a hook of a destroyed owner (the alarm), at any event
// in the time of the alarms, not of the Functions: the LiveIndex's alarm
// intervals (Note [Alarms by intervals]) and the rules a frame checks them by.

#include <algorithm>
#include <cmath>

#include "analysis/owner_status.h"
#include "render/draw/graph_source.h"
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
// slot is live) the frame checks the rule the walk uses
// (GraphSource::cell_alarm, GraphView::box_alarm; kAlarmCheck), so the marks and the focus are the walk's.
// A cell with more than kExactAlarms alarm units at e (a Reducer destroyed
// with every parameter's hook left: hundreds of thousands of boxes) is
// crowded: a frame walks the crowded cells in view unit by unit while
// kWalkAlarms units last (zoomed in a little, few are in view), else marks
// every density cell its alarm units' centres span (as IndexedSource::index_cells spreads
// counts; zoomed all the way out a grid cell is a density cell or two), and
// fit takes their boxes' bounds. A frame asks for the alarms only when it
// draws density cells or fits (IndexedSource::resolve_alarms) and keeps them while
// no interval, Function or tensor hook starts or ends (alarms_changed):
// playing through fires costs nothing, and neither does a leak-free trace.
bool LiveIndex::index_alarms(const analysis::Model& model, const FoldedGraph& fg, const std::vector<uint32_t>& cell_of,
                             const std::atomic<bool>& cancel) {
  struct Entry {
    uint32_t cell, unit, begin, end;  // its intervals: merged[begin, end)
  };
  std::vector<Entry> entries;
  std::vector<std::pair<EventIndex, EventIndex>> scratch, merged;
  for (uint32_t u = 0; u < cell_of.size(); ++u) {
    if ((u & 0xffff) == 0 && cancel) return false;
    const bool exact = alarm_intervals(model, fg, u, scratch);
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
  finish_alarms();
  return true;
}

// Unit u's alarm intervals (unsorted) into out; true when they are exactly
// when both rules hold (one Function, no folded group, no tensor hook: a
// leaked hook on the live Function drawn).
bool LiveIndex::alarm_intervals(const analysis::Model& model, const FoldedGraph& fg, uint32_t u,
                                std::vector<std::pair<EventIndex, EventIndex>>& out) const {
  const auto& owners = model.owners();
  const auto& hooks = model.hooks();
  out.clear();
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
        if (from < to) out.push_back({from, to});
        exact = exact && !(seg.on_tensor && from < to);
      }
    }
  }
  return exact;
}

// Per alarm cell: its units' centres' and boxes' bounds; every event where an alarm interval starts or ends.
void LiveIndex::finish_alarms() {
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

// Fit's rule (focus_region): a box with a chip of a destroyed owner's hook
// still attached (on a Function or on a leaf's tensor; not a removed one's ghost).
bool GraphView::box_alarm(const Frame& f, uint32_t unit, std::vector<Chip>& scratch) const {
  chips_of(f, unit, scratch);
  return std::any_of(scratch.begin(), scratch.end(), [](const Chip& c) { return c.alarm() && !c.removed; });
}

// The alarm units at the event, asked for only by density cells and fit.
void IndexedSource::resolve_alarms() const {
  const analysis::EventIndex e = event();
  if (alarms_at_ != analysis::kNever && alarms_index_ == index_ && alarms_generation_ == s_.generation &&
      !index_->alarms_changed(alarms_at_, e)) {
    return;
  }
  index_->alarm_units(e, alarm_units_, alarm_crowded_);
  alarms_at_ = e;
  alarms_index_ = index_;
  alarms_generation_ = s_.generation;
}

void IndexedSource::mark_alarm_cells(const ScreenGrid& g, std::vector<uint32_t>& out) const {
  const Layout& l = *s_.layout;
  resolve_alarms();
  auto mark = [&](int x, int y) { out[static_cast<size_t>(y) * g.cols + x] |= 0x80000000u; };
  // On screen, as the full State's density cells: the cell of its centre.
  auto cell_of = [&](Vec2 w, float* x, float* y) {
    *x = (g.canvas_x + (w.x - g.view_x) * g.zoom - g.canvas_x) / g.cell;
    *y = (g.canvas_y + (w.y - g.view_y) * g.zoom - g.canvas_y) / g.cell;
  };
  auto mark_units = [&](const std::vector<uint32_t>& units) {
    for (const uint32_t a : units) {
      const uint32_t u = a & ~LiveIndex::kAlarmCheck;
      if (u >= l.center.size()) continue;
      float fx, fy;
      cell_of(l.center[u], &fx, &fy);
      const int x = static_cast<int>(fx), y = static_cast<int>(fy);
      if (x < 0 || y < 0 || x >= g.cols || y >= g.rows) continue;
      if ((a & LiveIndex::kAlarmCheck) && !cell_alarm(u)) continue;
      mark(x, y);
    }
  };
  mark_units(alarm_units_);
  // A crowded cell in view: its units one by one while kWalkAlarms lasts
  // (zoomed in a little, a few cells are in view), else, as index_cells
  // spreads its count, every cell its alarm units' centres span.
  constexpr uint32_t kWalkAlarms = 16384;
  uint32_t walk = kWalkAlarms;
  const LiveIndex& x = *index_;
  for (uint32_t c : alarm_crowded_) {
    float ax, ay, bx, by;
    cell_of(x.alarm_cell_min(c), &ax, &ay);
    cell_of(x.alarm_cell_max(c), &bx, &by);
    const int x0 = static_cast<int>(std::floor(ax)), y0 = static_cast<int>(std::floor(ay));
    const int x1 = static_cast<int>(std::floor(bx)), y1 = static_cast<int>(std::floor(by));
    if (x1 < 0 || y1 < 0 || x0 >= g.cols || y0 >= g.rows) continue;
    if (x.alarm_cell_size(c) <= walk) {
      walk -= x.alarm_cell_size(c);
      alarm_scratch_.clear();
      x.alarm_units_of_cell(c, event(), alarm_scratch_);
      mark_units(alarm_scratch_);
      continue;
    }
    for (int y = std::max(y0, 0); y <= std::min(y1, g.rows - 1); ++y) {
      for (int k = std::max(x0, 0); k <= std::min(x1, g.cols - 1); ++k) mark(k, y);
    }
  }
}

void IndexedSource::alarm_boxes(const AlarmRule& is_alarm, Vec2* lo, Vec2* hi) const {
  const Layout& l = *s_.layout;
  resolve_alarms();
  auto take = [&](Vec2 a, Vec2 b) {
    *lo = {std::min(lo->x, a.x), std::min(lo->y, a.y)};
    *hi = {std::max(hi->x, b.x), std::max(hi->y, b.y)};
  };
  for (const uint32_t a : alarm_units_) {
    const uint32_t u = a & ~LiveIndex::kAlarmCheck;
    if (u >= l.center.size() || ((a & LiveIndex::kAlarmCheck) && !is_alarm(u))) continue;
    const Vec2 c = l.center[u], s = l.size[u];
    take({c.x - s.x * 0.5f, c.y - s.y * 0.5f}, {c.x + s.x * 0.5f, c.y + s.y * 0.5f});
  }
  const LiveIndex& x = *index_;
  for (uint32_t c : alarm_crowded_) take(x.alarm_cell_box_min(c), x.alarm_cell_box_max(c));
}

}  // namespace hookscope::render
