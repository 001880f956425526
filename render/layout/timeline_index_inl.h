#pragma once
// The folding walks of Note [Timeline folding]; templates, so that the
// view's per-mark drawing inlines.

#include <algorithm>
#include <cstdint>

namespace hookscope::render {

// a + b for b >= 0, saturating: times from hostile traces reach the int64 ends.
inline int64_t add_sat(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }
inline int64_t sub_sat(int64_t a, int64_t b) { return a < INT64_MIN + b ? INT64_MIN : a - b; }

template <class Fn>
void for_each_mark(const TimelineTrack& track, int64_t t0, int64_t t1, int64_t min_gap, Fn&& fn) {
  min_gap = std::max<int64_t>(min_gap, 1);
  size_t i = track.lower_bound(0, track.size(), sub_sat(t0, min_gap));
  const size_t end = track.upper_bound(i, track.size(), t1);
  if (i >= end) return;
  int64_t ti = track.time(i);  // time(i), asked once per mark
  while (i < end) {
    // Everything within min_gap of the mark's first event, then as long as
    // the next event is within min_gap of the mark's last one.
    size_t j = track.lower_bound(i + 1, end, add_sat(ti, min_gap));
    int64_t tj = j < end ? track.time(j) : 0;
    while (j < end) {
      const int64_t before = j - 1 == i ? ti : track.time(j - 1);
      if (static_cast<uint64_t>(tj) - static_cast<uint64_t>(before) >= static_cast<uint64_t>(min_gap)) break;
      j = track.lower_bound(j + 1, end, add_sat(tj, min_gap));
      if (j < end) tj = track.time(j);
    }
    fn(TickMark{i, j});
    i = j;
    ti = tj;
  }
}

template <class Fn>
void for_each_span(const std::vector<TimelineSpan>& lane, int64_t t0, int64_t t1, int64_t min_gap, Fn&& fn) {
  min_gap = std::max<int64_t>(min_gap, 1);
  // Disjoint and sorted: ends are sorted too.
  auto i = std::lower_bound(lane.begin(), lane.end(), t0,
                            [](const TimelineSpan& s, int64_t t) { return s.end < t; });
  auto wide = [&](const TimelineSpan& s) {
    return static_cast<uint64_t>(s.end) - static_cast<uint64_t>(s.begin) >= static_cast<uint64_t>(min_gap);
  };
  auto begin_before = [](const TimelineSpan& s, int64_t t) { return s.begin < t; };
  while (i != lane.end() && i->begin <= t1) {
    if (wide(*i)) {
      fn(static_cast<size_t>(i - lane.begin()), static_cast<size_t>(i - lane.begin()) + 1, false);
      ++i;
      continue;
    }
    // A fold of narrow spans: jump to the first span starting at least
    // min_gap after the fold's end; stop before a wide one.
    auto j = i + 1;
    int64_t fold_end = i->end;
    while (j != lane.end()) {
      auto k = std::lower_bound(j, lane.end(), add_sat(fold_end, min_gap), begin_before);
      if (k == j) break;
      if (wide(*(k - 1))) {
        j = k - 1;
        break;
      }
      fold_end = (k - 1)->end;
      j = k;
    }
    fn(static_cast<size_t>(i - lane.begin()), static_cast<size_t>(j - lane.begin()), j - i > 1);
    i = j;
  }
}

}  // namespace hookscope::render
