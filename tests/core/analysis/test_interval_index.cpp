// IntervalIndex (Note [Replay by intervals]): the block choice and the orders
// the load pass hands in, against the plain definitions on random intervals.

#include <doctest/doctest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "analysis/interval_index.h"

namespace an = hookscope::analysis;
using Span = an::IntervalIndex::Span;

namespace {

// The definition: a block closes after event e once it has at least
// min_events events and events * bytes_per_event >= 4 * intervals alive after e.
std::vector<uint32_t> blocks_by_definition(size_t n, const std::vector<std::vector<Span>>& families,
                                           uint32_t min_events, double bytes_per_event) {
  std::vector<int64_t> delta(n + 1, 0);
  for (const auto& f : families) {
    for (const Span& s : f) {
      if (s.empty() || s.from >= n) continue;
      ++delta[s.from];
      if (s.to < n) --delta[s.to];
    }
  }
  std::vector<uint32_t> starts{0};
  int64_t alive = 0;
  size_t since = 0;
  for (size_t e = 0; e < n; ++e) {
    alive += delta[e];
    ++since;
    if (since >= min_events && static_cast<double>(since) * bytes_per_event >= 4.0 * alive &&
        e + 1 < n) {
      starts.push_back(static_cast<uint32_t>(e + 1));
      since = 0;
    }
  }
  return starts;
}

std::vector<Span> random_spans(std::mt19937& rng, size_t count, uint32_t n) {
  std::vector<Span> spans(count);
  for (Span& s : spans) {
    s.from = rng() % n;
    const uint32_t r = rng() % 10;
    s.to = r == 0 ? an::kNever : r == 1 ? s.from : std::min<uint32_t>(n - 1, s.from + rng() % 40);
  }
  return spans;
}

an::IntervalIndex::SpanView view(const std::vector<Span>& spans) {
  return an::IntervalIndex::SpanView::of(spans, 0);
}

}  // namespace

TEST_CASE("interval index: blocks jump between changes and match the definition") {
  std::mt19937 rng(3);
  for (int round = 0; round < 300; ++round) {
    const uint32_t n = 1 + rng() % 400;
    std::vector<std::vector<Span>> families = {random_spans(rng, rng() % 60, n),
                                               random_spans(rng, rng() % 60, n)};
    const uint32_t min_events = 1 + rng() % 20;
    const double bytes_per_event = (1 + rng() % 16) / 4.0;
    const std::vector<an::IntervalIndex::SpanView> views = {view(families[0]), view(families[1])};
    CAPTURE(round);
    CHECK(an::IntervalIndex::choose_blocks(n, views, min_events, bytes_per_event) ==
          blocks_by_definition(n, families, min_events, bytes_per_event));
  }
}

TEST_CASE("interval index: orders handed in (ties shuffled, a few out of place) equal sorting") {
  std::mt19937 rng(5);
  for (int round = 0; round < 200; ++round) {
    const uint32_t n = 1 + rng() % 200;
    std::vector<Span> spans = random_spans(rng, 1 + rng() % 80, n);
    // As the load pass sees them: ids in order of start, those that end in order of end
    // with ties in any order, and a few records made later but backdated.
    std::vector<uint32_t> by_from(spans.size()), by_to;
    for (uint32_t id = 0; id < spans.size(); ++id) by_from[id] = id;
    std::stable_sort(by_from.begin(), by_from.end(),
                     [&](uint32_t a, uint32_t b) { return spans[a].from < spans[b].from; });
    if (rng() % 2 && by_from.size() > 2) std::swap(by_from.front(), by_from.back());
    for (uint32_t id = 0; id < spans.size(); ++id) {
      if (spans[id].to != an::kNever) by_to.push_back(id);
    }
    std::shuffle(by_to.begin(), by_to.end(), rng);
    std::stable_sort(by_to.begin(), by_to.end(),
                     [&](uint32_t a, uint32_t b) { return spans[a].to < spans[b].to; });
    const auto handed = an::IntervalIndex::Family::ordered(view(spans), by_from, by_to);
    const auto sorted = an::IntervalIndex::Family::sorted(view(spans));
    CAPTURE(round);
    CHECK(handed.by_from == sorted.by_from);
    CHECK(handed.by_to == sorted.by_to);

    // And the index built from them answers like the intervals themselves.
    const std::vector<an::IntervalIndex::SpanView> views = {view(spans)};
    const auto starts = an::IntervalIndex::choose_blocks(n, views, 1 + rng() % 8, 1.0);
    an::IntervalIndex index;
    index.build(an::IntervalIndex::Family::ordered(view(spans), by_from, by_to), starts);
    for (uint32_t e = 0; e < n; ++e) {
      std::vector<uint32_t> got;
      index.alive_at(e, starts, got);
      std::sort(got.begin(), got.end());
      std::vector<uint32_t> want;
      for (uint32_t id = 0; id < spans.size(); ++id) {
        if (spans[id].from <= e && e < spans[id].to) want.push_back(id);
      }
      CHECK(got == want);
    }
  }
}
