#pragma once
// A DDP Reducer's buckets as its backward passes reduced them (no GUI code:
// the Reducers panel draws it, tests read it headless).

#include <cstdint>
#include <string>
#include <vector>

#include "analysis/model.h"

namespace hookscope::app {

// Note [Rebuilt buckets]
// ~~~~~~~~~~~~~~~~~~~~~~
// PyTorch's DDP logs its buckets when it builds the Reducer, then rebuilds
// them once, after the first backward, in the order gradients became ready
// (`_rebuild_buckets()` at the next forward; its log says "Reducer buckets
// have been rebuilt in this iteration", the logging data the new
// `rebuilt_bucket_sizes`). A bridge trace's reducer_constructed carries the
// count logged at construction ("8 parameters in 1 bucket"); the buckets the
// backward passes reduced are in its bucket_ready events. A finalized
// backward (buckets_finalized) that reduced a different number of buckets
// than the one before it (at first, the construction's) is a rebuild, at that
// backward's prepare_for_backward. Backward passes that reduced nothing
// (no_sync) or did not finish (a failure) prove nothing and are skipped.
// Our runtime's Reducer keeps its buckets: its traces never say "rebuilt".
struct BucketLayout {
  uint32_t at_construction = 0;  // buckets as logged when the Reducer was built
  uint32_t buckets = 0;          // buckets the last finalized backward reduced (0: none seen)
  // The first rebuild: the backward's index and its prepare_for_backward
  // (kNever: never rebuilt), and the count before it.
  int64_t rebuilt_backward = -1;
  analysis::EventIndex rebuilt_at = analysis::kNever;
  uint32_t before = 0;
  std::vector<uint32_t> sizes;  // parameters per bucket now, where the trace names them (else empty)
};

BucketLayout bucket_layout(const analysis::Model& model, analysis::ReducerIndex reducer);

// What the Reducers panel says of them at event `at`: "8 parameters in 3
// buckets (4, 2, 2)" (before the rebuild: "in 1 bucket").
std::string bucket_words(const analysis::ReducerInfo& info, const BucketLayout& layout, size_t at);
// "buckets rebuilt at backward 2 (#136); 1 bucket at construction", "buckets
// rebuilt later, at backward 2 (#136)" before it; "" when never rebuilt.
std::string rebuild_words(const BucketLayout& layout, size_t at);

}  // namespace hookscope::app
