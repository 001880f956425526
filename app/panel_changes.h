#pragma once
// "What changed at this event": the hooks added, removed and fired on the
// current event's rank since the previous event of the same kind there (the
// previous fire, backward pass, prepare...), shown under "Why did this
// fire?" (app/panel_explain.cpp). No ImGui: tested headless.

#include <cstdint>
#include <vector>

#include "analysis/model.h"

namespace hookscope::app {

struct EventChanges {
  size_t at = 0;
  analysis::EventIndex since = analysis::kNever;  // kNever: none within the scan (from `scanned_from`)
  size_t scanned_from = 0;
  std::vector<analysis::EventIndex> added, removed, fired;  // at most `max_list` each, in order
  size_t num_added = 0, num_removed = 0, num_fired = 0;     // all of them
};

// Looks back at most `max_scan` events (a frame's budget on a huge trace).
EventChanges changes_since_previous(const analysis::Model& model, size_t index, size_t max_scan = 200'000,
                                    size_t max_list = 12);

}  // namespace hookscope::app
