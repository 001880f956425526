#include "analysis/interval_index.h"

#include <algorithm>
#include <cassert>

namespace hookscope::analysis {

IntervalIndex::Family IntervalIndex::Family::sorted(SpanView spans) {
  std::vector<uint32_t> all(spans.size());
  for (uint32_t id = 0; id < all.size(); ++id) all[id] = id;
  std::vector<uint32_t> ending = all;
  return ordered(spans, std::move(all), std::move(ending));
}

IntervalIndex::Family IntervalIndex::Family::ordered(SpanView spans, std::vector<uint32_t> by_from,
                                                     std::vector<uint32_t> by_to) {
  Family f;
  f.spans = spans;
  // Sized exactly: the model's memory counts their capacity.
  std::erase_if(by_from, [&](uint32_t id) { return spans[id].empty(); });
  std::erase_if(by_to, [&](uint32_t id) { return spans[id].empty() || spans[id].to == kNever; });
  auto from_less = [&](uint32_t a, uint32_t b) {
    const uint32_t x = spans[a].from, y = spans[b].from;
    return x != y ? x < y : a < b;
  };
  auto to_less = [&](uint32_t a, uint32_t b) {
    const uint32_t x = spans[a].to, y = spans[b].to;
    return x != y ? x < y : a < b;
  };
  // Runs of one `to` (hooks dropped with their Function at one event) come in any order.
  for (size_t i = 0; i < by_to.size();) {
    size_t j = i + 1;
    while (j < by_to.size() && spans[by_to[j]].to == spans[by_to[i]].to) ++j;
    if (j - i > 1) std::sort(by_to.begin() + i, by_to.begin() + j);
    i = j;
  }
  if (!std::is_sorted(by_from.begin(), by_from.end(), from_less)) {
    std::sort(by_from.begin(), by_from.end(), from_less);
  }
  if (!std::is_sorted(by_to.begin(), by_to.end(), to_less)) {
    std::sort(by_to.begin(), by_to.end(), to_less);
  }
  by_from.shrink_to_fit();
  by_to.shrink_to_fit();
  f.by_from = std::move(by_from);
  f.by_to = std::move(by_to);
  return f;
}

std::vector<uint32_t> IntervalIndex::choose_blocks(
    size_t num_events, std::span<const SpanView> families, uint32_t min_events,
    double bytes_per_event) {
  std::vector<Family> ordered;
  for (const SpanView& f : families) ordered.push_back(Family::sorted(f));
  return choose_blocks(num_events, ordered, min_events, bytes_per_event);
}

// A block closes after event e once it has `since` events with since >=
// min_events and since * bytes_per_event >= 4 * (intervals alive right after
// e). Between the events where intervals start or end the count is constant,
// so the walk jumps from one such event to the next.
std::vector<uint32_t> IntervalIndex::choose_blocks(size_t num_events,
                                                   std::span<const Family> families,
                                                   uint32_t min_events, double bytes_per_event) {
  std::vector<uint32_t> starts{0};
  if (num_events == 0) return starts;
  const uint64_t n = num_events;
  std::vector<size_t> next_from(families.size(), 0), next_to(families.size(), 0);
  int64_t alive = 0;
  uint64_t block = 0;  // the current block's first event
  auto closes = [&](uint64_t since) {
    return since >= min_events &&
           static_cast<double>(since) * bytes_per_event >= 4.0 * static_cast<double>(alive);
  };
  // The fewest events a block needs while `alive` stays as it is (monotone in since).
  auto needed = [&]() -> uint64_t {
    uint64_t s = std::max<uint64_t>(min_events, 1);
    if (closes(s)) return s;
    const double guess = 4.0 * static_cast<double>(alive) / bytes_per_event;
    if (!(guess < static_cast<double>(n) + 2)) return n + 2;  // never within the trace
    s = std::max<uint64_t>(s, static_cast<uint64_t>(guess));
    while (s > 1 && s - 1 >= min_events && closes(s - 1)) --s;
    while (!closes(s)) ++s;
    return s;
  };
  uint64_t e = 0;
  while (e < n) {
    uint64_t next = n;  // the next event where an interval starts or ends
    for (size_t k = 0; k < families.size(); ++k) {
      const Family& f = families[k];
      size_t& a = next_from[k];
      for (; a < f.by_from.size() && f.spans[f.by_from[a]].from == e; ++a) ++alive;
      if (a < f.by_from.size() && f.spans[f.by_from[a]].from < next) next = f.spans[f.by_from[a]].from;
      size_t& b = next_to[k];
      for (; b < f.by_to.size() && f.spans[f.by_to[b]].to == e; ++b) --alive;
      if (b < f.by_to.size() && f.spans[f.by_to[b]].to < next) next = f.spans[f.by_to[b]].to;
    }
    if (closes(e - block + 1) && e + 1 < n) {
      starts.push_back(static_cast<uint32_t>(e + 1));
      block = e + 1;
    }
    if (next > e + 1) {  // events e + 1 .. next - 1 change nothing
      const uint64_t need = needed();
      for (uint64_t x = std::max(block + need - 1, e + 1); x < next && x + 1 < n;
           x = block + need - 1) {
        starts.push_back(static_cast<uint32_t>(x + 1));
        block = x + 1;
      }
    }
    e = std::max(next, e + 1);
  }
  return starts;
}

void IntervalIndex::build(SpanView spans, std::span<const uint32_t> block_starts) {
  build(Family::sorted(spans), block_starts);
}

void IntervalIndex::build(Family family, std::span<const uint32_t> block_starts) {
  spans_ = family.spans;
  by_from_ = std::move(family.by_from);
  by_to_ = std::move(family.by_to);

  // Checkpoint b: ids alive at every event of block b they were not removed
  // at, i.e. from < start < to.
  ckpt_begin_.assign(1, 0);
  ckpt_ids_.clear();
  std::vector<uint32_t> alive, next;
  size_t k = 0;  // position in by_from_
  for (size_t b = 0; b < block_starts.size(); ++b) {
    const uint32_t start = block_starts[b];
    next.clear();
    for (uint32_t id : alive) {
      if (spans_[id].to > start) next.push_back(id);
    }
    for (; k < by_from_.size() && spans_[by_from_[k]].from < start; ++k) {
      if (spans_[by_from_[k]].to > start) next.push_back(by_from_[k]);
    }
    alive.swap(next);
    ckpt_ids_.insert(ckpt_ids_.end(), alive.begin(), alive.end());
    ckpt_begin_.push_back(static_cast<uint32_t>(ckpt_ids_.size()));
  }
  ckpt_ids_.shrink_to_fit();
}

void IntervalIndex::alive_at(uint32_t e, std::span<const uint32_t> block_starts,
                             std::vector<uint32_t>& out) const {
  assert(!block_starts.empty() && block_starts.size() + 1 == ckpt_begin_.size());
  const size_t b =
      std::upper_bound(block_starts.begin(), block_starts.end(), e) - block_starts.begin() - 1;
  const uint32_t start = block_starts[b];
  for (uint32_t i = ckpt_begin_[b]; i < ckpt_begin_[b + 1]; ++i) {
    const uint32_t id = ckpt_ids_[i];
    if (spans_[id].to > e) out.push_back(id);
  }
  auto first = std::partition_point(by_from_.begin(), by_from_.end(),
                                    [&](uint32_t id) { return spans_[id].from < start; });
  for (auto it = first; it != by_from_.end() && spans_[*it].from <= e; ++it) {
    if (spans_[*it].to > e) out.push_back(*it);
  }
}

std::span<const uint32_t> IntervalIndex::starting_at(uint32_t e) const {
  auto lo = std::partition_point(by_from_.begin(), by_from_.end(),
                                 [&](uint32_t id) { return spans_[id].from < e; });
  auto hi = std::partition_point(lo, by_from_.end(),
                                 [&](uint32_t id) { return spans_[id].from <= e; });
  return {lo, hi};
}

std::span<const uint32_t> IntervalIndex::ending_at(uint32_t e) const {
  auto lo = std::partition_point(by_to_.begin(), by_to_.end(),
                                 [&](uint32_t id) { return spans_[id].to < e; });
  auto hi =
      std::partition_point(lo, by_to_.end(), [&](uint32_t id) { return spans_[id].to <= e; });
  return {lo, hi};
}

size_t IntervalIndex::checkpoint_bytes() const {
  return (ckpt_ids_.capacity() + ckpt_begin_.capacity()) * sizeof(uint32_t);
}

size_t IntervalIndex::memory_bytes() const {
  return checkpoint_bytes() + (by_from_.capacity() + by_to_.capacity()) * sizeof(uint32_t);
}

}  // namespace hookscope::analysis
