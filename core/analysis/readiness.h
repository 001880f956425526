#pragma once
// The DDP readiness map: for each rank, parameters x backward passes, each
// cell saying whether the parameter's gradient was marked ready once (ok),
// never (unused), twice, or whether a destroyed Reducer's hook fired on it
// (stale). The data behind the GUI's readiness view and `hookscope-cli
// readiness`. See Note [Readiness map].

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

// Note [Readiness map]
// ~~~~~~~~~~~~~~~~~~~~
// Columns are the rank's backward passes (kBackwardBegin of backward(), not
// of autograd::grad, which runs no AccumulateGrad), each with the Reducer
// that prepared for it: the last kPrepareForBackward on the rank before the
// pass begins whose Reducer was not destroyed by then. Rows are the
// parameters that Reducers of the rank reported (by parameter index, which is
// stable across rebuilds on the same module), named by their AccumulateGrad's
// label. A column spans from its Reducer's prepare (find_unused_parameters
// reports and marks unused ones there, before backward begins) or from its
// begin when no Reducer prepared, to its end. A cell counts, inside its
// column, the rank's kMarkReady,
// kMarkedTwice and kUnusedParameter events for that parameter, the fires of
// hooks whose Reducer was already destroyed (stale) and the no-op fires of
// live Reducers that did not prepare. Its status, most alarming first:
// twice, unused, stale, ok; `kNoDdp` when no Reducer prepared for the pass;
// `kNotReached` for a parameter with no mark in a pass that did not complete
// (a failure cut it short: calling it unused would claim what did not happen).
enum class Readiness : uint8_t {
  kNoDdp = 0, kOk = 1, kUnused = 2, kTwice = 3, kStale = 4, kNotReached = 5
};
std::string_view to_string(Readiness r);  // "none", "ok", "unused", "twice", "stale", "cut"

// Counts are 64-bit: a hostile trace can mark one cell more than 65,535
// times, and a count that wrapped to 0 read "unused".
struct ReadinessCell {
  uint64_t marks = 0;       // kMarkReady by the prepared Reducer
  uint64_t stale = 0;       // fires of destroyed Reducers' hooks
  uint64_t noops = 0;       // fires of live Reducers that did not prepare
  EventIndex event = kNever;  // the event that proves the status (the GUI jumps there)
  bool unused = false;      // kUnusedParameter
  bool twice = false;       // kMarkedTwice
  Readiness status = Readiness::kNoDdp;
};

struct BackwardColumn {
  EventIndex prepared_at = kNever;   // its Reducer's kPrepareForBackward (unused parameters are found there)
  EventIndex begin = 0;
  EventIndex end = kNever;           // kNever: the pass never ended (a failure)
  bool completed = false;            // its kBackwardEnd says it ran to the end
  ReducerIndex reducer = kNoIndex;   // the Reducer that prepared for it
};

struct ParameterRow {
  uint32_t index = 0;                  // parameter index in its Reducer
  FunctionIndex accumulator = kNoIndex;  // its latest AccumulateGrad on this rank
  std::string name;                    // "0.weight [256, 784]" or "parameter 3"
};

struct ReadinessGrid {
  uint16_t rank = 0;
  std::vector<ParameterRow> parameters;
  std::vector<BackwardColumn> backwards;
  std::vector<ReadinessCell> cells;  // parameters x backwards, row-major
  const ReadinessCell& cell(size_t parameter, size_t backward) const {
    return cells[parameter * backwards.size() + backward];
  }
};

// Note [Readiness map size]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A grid is dense (parameters x backward passes) and a trace pays for its
// rows and columns separately: 20k parameter indices and 20k passes cost 40k
// events but ask for 400M cells (13 GB), which ended the GUI with an
// uncaught std::bad_alloc. Grids of all ranks together hold at most
// kMaxReadinessCells cells (a real run of 1,000 parameters reaches it after
// 16,000 backward passes); past that readiness_grids throws
// ReadinessTooLarge, whose message says how large and what to do, before
// allocating anything. The CLI prints it (exit 2), the panel shows it.
constexpr size_t kMaxReadinessCells = size_t{1} << 24;

struct ReadinessTooLarge : std::length_error {
  using std::length_error::length_error;
};

// One grid per rank that had a Reducer, by rank. Throws ReadinessTooLarge
// (Note [Readiness map size]).
std::vector<ReadinessGrid> readiness_grids(const Model& model);

}  // namespace hookscope::analysis
