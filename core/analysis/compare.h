#pragma once
// Comparing two traces at matching points of their story, and the order in
// which hooks were added and fired on each Function. See Note [Matching points].

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Matching points]
// ~~~~~~~~~~~~~~~~~~~~~~
// Two runs of one story (policy by-key vs none, PyTorch vs our runtime) have
// different event indices, so they are compared at the same step of the
// story instead: the n-th (1-based) occurrence of a story event, counted over
// the whole merged timeline, and the state right after it. Names:
//   end                 the last event (the default)
//   backward:N          the N-th backward() pass to end (kBackwardEnd of a
//                       backward, not of autograd::grad), on the lowest rank
//   rebuild:N           the N-th "DDP rebuilt" recovery step, on the lowest rank
//   failure:N           the N-th failure
//   constructed:N       the N-th Reducer constructed
//   destroyed:N         the N-th Reducer destroyed
//   KIND:N              the N-th event of any kind by its name (hook_fire:100)
// A point one trace does not reach is an error naming how many it has.
struct MatchPoint {
  size_t index = 0;    // the event
  std::string label;   // "after backward 5"
};
// Throws std::invalid_argument for a malformed name or a point the model lacks.
MatchPoint resolve_point(const Model& model, std::string_view name);
// Throws std::invalid_argument, as resolve_point does, when `name` is no
// point of any trace (not a number, a count below 1, an unknown kind): a
// caller resolving it in several traces says that once, and names the
// traces that lack a well-formed point.
void check_point(std::string_view name);

// The lowest rank that has an event of `kind` (UINT16_MAX: none); matching
// points count on it, since every rank goes through the same story.
uint16_t lowest_rank(const Model& model, trace::EventKind kind);

// The ends of backward() passes (not autograd::grad) on the lowest rank, in
// order: what backward:N counts (an end is paired with its begin per thread).
std::vector<EventIndex> backward_pass_ends(const Model& model);

// One Function's hook history as a sequence of steps comparable across runs:
// no keys (they differ), but the hook's kind and registration ordinal on the
// Function and its owner's kind and ordinal on its rank ("post#2 reducer#2":
// labels such as "Reducer 7" carry process-wide counters).
struct OrderStep {
  bool fire = false;  // else an add
  std::string hook;   // "post#2 reducer#2"
  friend bool operator==(const OrderStep&, const OrderStep&) = default;
};

struct OrderDiff {
  std::string function;          // as a user reads it
  FunctionIndex a = kNoIndex, b = kNoIndex;
  size_t position = 0;           // first step where they differ
  std::vector<OrderStep> steps_a, steps_b;  // each side's whole sequence (up to the point)
};

// Functions matched by signature (Note [Matching Functions across traces])
// whose add/fire sequences differ up to the given events; sorted by name. A
// leaf's successive AccumulateGrads count as one Function (its first).
std::vector<OrderDiff> hook_order_diff(const Model& a, size_t at_a, const Model& b, size_t at_b);
// The same with each model's FunctionMatch (analysis/diff_match.h) built once.
class FunctionMatch;
std::vector<OrderDiff> hook_order_diff(const Model& a, FunctionMatch& match_a, size_t at_a, const Model& b,
                                       FunctionMatch& match_b, size_t at_b);

std::string format_order_diff(const std::vector<OrderDiff>& diffs, std::string_view name_a,
                              std::string_view name_b, size_t max_functions = 20);

}  // namespace hookscope::analysis
