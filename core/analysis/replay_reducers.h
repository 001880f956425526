#pragma once
// Reducers in replay (Note [Reducers in a step]): internal to
// core/analysis/replay*.cpp.

#include "analysis/state.h"

namespace hookscope::analysis::replay {

// st.reducers at event e: every Reducer constructed by then, in index
// order. Reuses st's records; keeps those destroyed after their last prepare
// that st has destroyed already.
void fill_reducers(const Model& m, EventIndex e, State& st);

// What the one event x does to st.reducers, a step forward (st at x - 1
// before, x after) or back (x before, x - 1 after); false when every
// Reducer must be refreshed (fill_reducers).
bool step_reducers(const Model& m, State& st, EventIndex x, bool forward);

}  // namespace hookscope::analysis::replay
