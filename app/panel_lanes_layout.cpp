#include "panel_lanes_layout.h"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace hookscope::app {

using analysis::EventIndex;
using analysis::HookLane;
using analysis::kNever;
using analysis::kNoIndex;

void EventAxis::zoom(double factor, float px, double limit) {
  const double anchor = event_at(px);
  double span = std::clamp((end - begin) * factor, 4.0, std::max(4.0, limit));
  double b = anchor - (anchor - begin) * (span / (end - begin));
  b = std::clamp(b, 0.0, std::max(0.0, limit - span));
  begin = b;
  end = b + span;
}

void EventAxis::pan(float dx_px, double limit) {
  const double span = end - begin;
  const double b = std::clamp(begin - dx_px / width * span, 0.0, std::max(0.0, limit - span));
  begin = b;
  end = b + span;
}

LaneRows build_lane_rows(std::span<const HookLane> lanes, LaneGrouping grouping, std::span<const uint32_t> folded,
                         size_t num_events) {
  LaneRows out;
  std::vector<uint32_t> order(lanes.size());
  std::iota(order.begin(), order.end(), 0u);
  auto key_of = [&](const HookLane& l) { return grouping == LaneGrouping::kFunction ? l.function : l.owner; };
  if (grouping == LaneGrouping::kOwner) {
    // Owners in the order they first added a hook; lanes by add within.
    std::vector<EventIndex> first_add;
    for (const HookLane& l : lanes) {
      if (l.owner == kNoIndex) continue;
      if (l.owner >= first_add.size()) first_add.resize(l.owner + 1, kNever);
      first_add[l.owner] = std::min(first_add[l.owner], l.added_at);
    }
    auto rank = [&](const HookLane& l) { return l.owner == kNoIndex ? kNever : first_add[l.owner]; };
    std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
      const HookLane &x = lanes[a], &y = lanes[b];
      if (rank(x) != rank(y)) return rank(x) < rank(y);
      if (x.owner != y.owner) return x.owner < y.owner;
      return x.added_at < y.added_at;
    });
  }
  // hook_lanes orders by Function, then by add: already grouped that way.
  for (size_t i = 0; i < order.size();) {
    const uint32_t key = key_of(lanes[order[i]]);
    LaneGroup g;
    g.key = key;
    g.begin = kNever;
    g.folded = std::binary_search(folded.begin(), folded.end(), key);
    size_t j = i;
    for (; j < order.size() && key_of(lanes[order[j]]) == key; ++j) {
      const HookLane& l = lanes[order[j]];
      g.begin = std::min(g.begin, l.added_at);
      g.end = std::max<EventIndex>(g.end, l.ended_at == kNever ? static_cast<EventIndex>(num_events) : l.ended_at);
      g.outliving += l.outlives_owner();
      g.unused += l.outlives_use() && !l.outlives_owner();
      g.stale_fires += l.fires_after;
    }
    g.count = static_cast<uint32_t>(j - i);
    const uint32_t gi = static_cast<uint32_t>(out.groups.size());
    out.groups.push_back(g);
    out.rows.push_back({gi, kNoIndex});
    if (!g.folded) {
      for (size_t k = i; k < j; ++k) out.rows.push_back({gi, order[k]});
    }
    i = j;
  }
  return out;
}

void tick_columns(std::span<const EventIndex> fires, const EventAxis& axis, EventIndex stale_from,
                  std::vector<TickColumn>& out) {
  out.clear();
  const double lo = std::max(0.0, std::ceil(axis.begin));
  auto it = std::lower_bound(fires.begin(), fires.end(), static_cast<EventIndex>(std::min(lo, 4e9)));
  while (it != fires.end() && *it < axis.end) {
    const float column = std::floor(axis.x(*it));
    // The first event that maps to the next column (at least one past this fire).
    const double next = std::max<double>(*it + 1.0, std::ceil(axis.event_at(column + 1.f) - 1e-9));
    const auto stop = std::lower_bound(it, fires.end(), static_cast<EventIndex>(std::min(next, 4e9)));
    TickColumn t;
    t.x = column;
    t.fires = static_cast<uint32_t>(stop - it);
    t.first = *it;
    t.stale = stale_from != kNever && *(stop - 1) >= stale_from;
    out.push_back(t);
    it = stop;
  }
}

EventIndex nearest_lane_event(const HookLane& lane, std::span<const EventIndex> fires, double event) {
  EventIndex best = lane.added_at;
  double best_d = std::abs(event - lane.added_at);
  auto consider = [&](EventIndex e) {
    if (e == kNever) return;
    const double d = std::abs(event - e);
    if (d < best_d) best = e, best_d = d;
  };
  consider(lane.ended_at);
  consider(lane.owner_died_at);
  consider(lane.owner_replaced_at);
  const auto it = std::lower_bound(fires.begin(), fires.end(),
                                   static_cast<EventIndex>(std::clamp(event, 0.0, 4e9)));
  if (it != fires.end()) consider(*it);
  if (it != fires.begin()) consider(*(it - 1));
  return best;
}

void LiveCounter::build(std::span<const HookLane> lanes, size_t num_owners) {
  all_ = {};
  owners_.assign(num_owners, {});
  std::vector<uint32_t> added(num_owners, 0);
  for (const HookLane& l : lanes) {
    if (l.ended_at != kNever && l.ended_at <= l.added_at) continue;  // never attached after an event
    all_.from.push_back(l.added_at);
    if (l.ended_at != kNever) all_.to.push_back(l.ended_at);
    if (l.owner < num_owners) {
      owners_[l.owner].from.push_back(l.added_at);
      if (l.ended_at != kNever) owners_[l.owner].to.push_back(l.ended_at);
      ++added[l.owner];
    }
  }
  auto sort = [](Steps& s) {
    std::sort(s.from.begin(), s.from.end());
    std::sort(s.to.begin(), s.to.end());
  };
  sort(all_);
  for (Steps& s : owners_) sort(s);
  by_size_.clear();
  for (uint32_t o = 0; o < num_owners; ++o) {
    if (added[o]) by_size_.push_back(o);
  }
  std::stable_sort(by_size_.begin(), by_size_.end(), [&](uint32_t a, uint32_t b) { return added[a] > added[b]; });
}

uint32_t LiveCounter::at(const Steps& s, size_t event) {
  const auto e = static_cast<EventIndex>(std::min<size_t>(event, kNever - 1));
  const auto started = std::upper_bound(s.from.begin(), s.from.end(), e) - s.from.begin();
  const auto ended = std::upper_bound(s.to.begin(), s.to.end(), e) - s.to.begin();
  return static_cast<uint32_t>(started - ended);
}

}  // namespace hookscope::app
