// Note [Rebuilt buckets]: a Reducer's buckets from its backward passes.
#include "reducer_buckets.h"

#include <fmt/format.h>

#include <algorithm>

#include "panel_common.h"

namespace hookscope::app {

using trace::EventKind;

BucketLayout bucket_layout(const analysis::Model& model, analysis::ReducerIndex reducer) {
  const analysis::ReducerInfo& info = model.reducers()[reducer];
  BucketLayout out;
  out.at_construction = info.num_buckets;
  uint32_t previous = info.num_buckets;
  int64_t backward = -1;
  analysis::EventIndex prepared = analysis::kNever;
  uint32_t reduced = 0;  // buckets this backward reduced so far (highest index + 1)
  for (const analysis::EventIndex i : info.events) {
    const trace::Event e = model.event(i);
    if (e.kind == EventKind::kPrepareForBackward) {
      backward = static_cast<int64_t>(e.as<trace::ev::PrepareForBackward>().backward_index);
      prepared = i;
      reduced = 0;
    } else if (e.kind == EventKind::kBucketReady) {
      const uint64_t b = e.as<trace::ev::BucketReady>().bucket;
      if (b < (1u << 24)) reduced = std::max(reduced, static_cast<uint32_t>(b) + 1);
    } else if (e.kind == EventKind::kBucketsFinalized && reduced > 0) {
      if (reduced != previous && out.rebuilt_at == analysis::kNever && prepared != analysis::kNever) {
        out.rebuilt_backward = backward;
        out.rebuilt_at = prepared;
        out.before = previous;
      }
      previous = out.buckets = reduced;
      reduced = 0;
    }
  }
  if (out.buckets > 0 && info.bucket_sizes.size() == out.buckets &&
      std::all_of(info.bucket_sizes.begin(), info.bucket_sizes.end(), [](uint32_t n) { return n > 0; })) {
    out.sizes = info.bucket_sizes;
  }
  return out;
}

std::string bucket_words(const analysis::ReducerInfo& info, const BucketLayout& layout, size_t at) {
  const bool rebuilt = layout.rebuilt_at != analysis::kNever;
  const bool now = rebuilt && layout.rebuilt_at <= at;
  const uint32_t buckets = now ? layout.buckets : (rebuilt ? layout.before : info.num_buckets);
  std::string words = fmt::format("{} in {}", count_of(info.num_parameters, "parameter"), count_of(buckets, "bucket"));
  if (now && !layout.sizes.empty()) {
    std::string sizes;
    for (uint32_t n : layout.sizes) sizes += fmt::format("{}{}", sizes.empty() ? "" : ", ", n);
    words += fmt::format(" ({})", sizes);
  }
  return words;
}

std::string rebuild_words(const BucketLayout& layout, size_t at) {
  if (layout.rebuilt_at == analysis::kNever) return "";
  if (layout.rebuilt_at > at) {
    return fmt::format("buckets rebuilt later, at backward {} (#{})", layout.rebuilt_backward, layout.rebuilt_at);
  }
  return fmt::format("buckets rebuilt at backward {} (#{}); {} at construction", layout.rebuilt_backward,
                     layout.rebuilt_at, count_of(layout.before, "bucket"));
}

}  // namespace hookscope::app
