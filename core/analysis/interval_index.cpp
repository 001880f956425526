#include "analysis/interval_index.h"

#include <algorithm>
#include <cassert>

namespace hookscope::analysis {

std::vector<uint32_t> IntervalIndex::choose_blocks(
    size_t num_events, std::span<const SpanView> families, uint32_t min_events,
    double bytes_per_event) {
  // delta[e]: intervals becoming alive at e minus those ending at e.
  std::vector<int32_t> delta(num_events + 1, 0);
  for (const SpanView& family : families) {
    for (size_t id = 0; id < family.size(); ++id) {
      const Span s = family[id];
      if (s.empty() || s.from >= num_events) continue;
      ++delta[s.from];
      if (s.to < num_events) --delta[s.to];
    }
  }
  std::vector<uint32_t> starts{0};
  int64_t alive = 0;  // alive right after event e
  size_t since = 0;   // events in the current block
  for (size_t e = 0; e < num_events; ++e) {
    alive += delta[e];
    ++since;
    const double paid = static_cast<double>(since) * bytes_per_event;
    if (since >= min_events && paid >= 4.0 * static_cast<double>(alive) &&
        e + 1 < num_events) {
      starts.push_back(static_cast<uint32_t>(e + 1));
      since = 0;
    }
  }
  return starts;
}

void IntervalIndex::build(SpanView spans, std::span<const uint32_t> block_starts) {
  spans_ = spans;
  // Sized exactly: the model's memory counts their capacity.
  size_t from_count = 0, to_count = 0;
  for (uint32_t id = 0; id < spans_.size(); ++id) {
    const Span s = spans_[id];
    from_count += !s.empty();
    to_count += !s.empty() && s.to != kNever;
  }
  by_from_.clear();
  by_to_.clear();
  by_from_.reserve(from_count);
  by_to_.reserve(to_count);
  for (uint32_t id = 0; id < spans_.size(); ++id) {
    if (spans_[id].empty()) continue;
    by_from_.push_back(id);
    if (spans_[id].to != kNever) by_to_.push_back(id);
  }
  std::stable_sort(by_from_.begin(), by_from_.end(),
                   [&](uint32_t a, uint32_t b) { return spans_[a].from < spans_[b].from; });
  std::stable_sort(by_to_.begin(), by_to_.end(),
                   [&](uint32_t a, uint32_t b) { return spans_[a].to < spans_[b].to; });

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
