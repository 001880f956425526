// The graph drawn from a StateView while a far seek's full State is being
// built (Note [Graph while the state is pending]), and the LiveIndex job that
// makes it possible; what a frame asks is the IndexedSource's
// (graph_source_indexed.cpp, Note [One graph drawing path]).

#include <chrono>

#include "render/draw/graph_view.h"
#include "render/draw/graph_view_internal.h"
#include "render/draw/graph_view_live.h"

namespace hookscope::render {

// Note [Graph while the state is pending]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// After a far seek on a big trace the full State comes from a worker a few
// hundred ms later (Note [Lazy seeks in the GUI]), and while playing fast it
// may never catch up; meanwhile the view draws the new event from its
// StateView (Note [Lazy state]). A frame costs what it shows, not the
// Functions: a box in view is worked out when first asked for (its slots'
// Functions live or not, O(1) each; its tensor hooks, O(segments); its hooks
// for chips and tooltip, O(its hooks)), once per event. What needs every
// live box comes from the layout's LiveIndex (Note [Liveness by intervals]),
// built off the UI thread when the layout lands: the count and bounds of the
// live boxes (exact), the minimap and the density cells (from its grid of
// about 16k cells: coarser than the full State's, but of this event), the
// ranks with live Functions (banners), the alarm mark of density cells and
// fit's focus on alarm boxes (Note [Alarms by intervals]) and on a failing
// or lost rank's boxes (the rank's units it shows, walked at that event
// only; focus_region). Left out, never taken from another event: the
// owners' legend (a "state pending" tag instead). The compact
// layout waits for the full State (no re-layout while pending). Until the
// layout's LiveIndex is built the canvas stays empty. Below the lazy
// threshold the full State is always there and none of this runs.
// Note [Graph at a million Functions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// With the full State the walk over its live Functions (refresh_liveness)
// costs tens of ms at a million, at every new event: while playing, every
// frame. Above GraphViewOptions::indexed_functions (the app: the lazy
// threshold, Note [Lazy seeks in the GUI]) a frame with the full State
// reads the liveness as a pending one does, once the layout's LiveIndex is
// there (it lands with the layout, Note [Landing a layout off the UI
// thread]): a box in view is worked out when asked for, through a StateView
// at the State's event (its tensor hooks), a live Function's hooks from
// State::find; counts, bounds, minimap and density cells from the
// LiveIndex. Unlike pending, the legend is drawn (the State has the
// owners) and the compact view lays out again when the live set may have
// changed: the LiveIndex lists every event where some slot's keep can
// change (keep_changed), and the layout job works the live slots out from
// the model at its event (keep_at), where the walk compares its keep
// (StateSource::keep).
// Alarms (density cells, fit's focus) come from the LiveIndex too (Note
// [Alarms by intervals]), and fit's focus on a failing rank's boxes as while
// pending. Below the threshold nothing of this runs.
GraphViewResult GraphView::draw(const analysis::StateView& view, analysis::FunctionIndex selected_function,
                                analysis::OwnerIndex selected_owner) {
  selected_function_ = selected_function;
  selected_owner_ = selected_owner;
  lazy_state_ = analysis::State{};
  lazy_state_.index = view.index();
  return draw_frame(lazy_state_, &view);
}

void GraphView::stop_live_index() {
  if (live_cancel_) *live_cancel_ = true;
  if (live_job_.valid()) live_job_.wait();
  live_job_ = {};
  live_cancel_.reset();
  live_index_.reset();
}

const LiveIndex* GraphView::live_index(bool wait) {
  if (!live_index_ && live_job_.valid() &&
      (wait || live_job_.wait_for(std::chrono::seconds(0)) == std::future_status::ready)) {
    live_index_ = live_job_.get();
  }
  return live_index_.get();
}

}  // namespace hookscope::render
