#pragma once
// The timeline drawn with ImGui's ImDrawList: a track per rank (and per
// thread when a rank has several), events as ticks folded by pixel
// (Note [Timeline folding]), backward / apply / collective spans in lanes,
// the current event as a cursor, a range selection and bookmarks.
//
// The GUI calls, per frame, inside an ImGui window:
//   TimelineResult r = timeline.draw(cursor.index());
//   if (r.current_event) cursor.seek(*r.current_event);

#include <cstdint>
#include <string>
#include <optional>
#include <utility>
#include <vector>

#include "analysis/model.h"
#include "render/layout/story.h"
#include "render/layout/timeline_index.h"

namespace hookscope::render {

struct TimelineViewOptions {
  float header_width = 118.f;  // track names
  float axis_height = 22.f;
  float tick_height = 14.f;
  float lane_height = 17.f;
  float track_gap = 6.f;
  float min_mark_px = 3.f;     // closer events fold (Note [Timeline folding])
  float marker_height = 20.f;  // the strip of labelled lifecycle markers under the axis
};

// Note [Timeline markers]: the moments of the story, drawn as labelled lines
// across every track (a legend above the canvas names every colour).
// kReducerLingering: a Reducer replaced while alive (Note [Lingering owners]).
enum class MarkerKind : uint8_t { kFailed, kLost, kRebuilt, kReducerBuilt, kReducerDestroyed, kReducerLingering };
struct TimelineMarker {
  analysis::EventIndex at = 0;
  MarkerKind kind = MarkerKind::kFailed;
  std::string label;
};

// Failures, losses, rebuilds, Reducers built and destroyed, in event order.
std::vector<TimelineMarker> timeline_markers(const analysis::Model& model, const RunStory& story);
uint32_t marker_color(MarkerKind kind);
const char* marker_name(MarkerKind kind);

struct TimelineResult {
  std::optional<size_t> current_event;  // the user moved the cursor here
  // The range selection as events [first, last], set in the frame it changed.
  std::optional<std::pair<size_t, size_t>> range;
  uint32_t hovered_event = UINT32_MAX;
};

struct TimelineFrame;  // per-frame scratch, timeline_view.cpp

// Note [Idle gaps]: a gap as drawn: its band (collapsed or expanded) and
// the label that toggles it.
struct TimelineGapDraw {
  float x0 = 0.f, x1 = 0.f;                            // the band
  float lx0 = 0.f, ly0 = 0.f, lx1 = 0.f, ly1 = 0.f;    // its label
  bool collapsed = true;
  uint32_t events = 0;                                 // inside it: a start-up band's (Note [Start-up band])
  std::string label;                                   // "4.5 s start-up"
};

struct TimelineDrawStats {
  uint32_t ticks = 0;   // lone events
  uint32_t folds = 0;   // marks that fold several events
  // Per fold holding an alarm: its left edge, where its red part starts (the
  // x of its first alarm: what comes before it is drawn as the rest), its right edge.
  struct AlarmFold {
    float x0 = 0.f, alarm_x = 0.f, x1 = 0.f;
  };
  std::vector<AlarmFold> alarm_folds;
  uint32_t spans = 0;   // spans and span folds
  uint32_t markers = 0;        // marker lines drawn
  uint32_t marker_labels = 0;  // of them labelled (labels never overlap each other nor an idle gap)
  std::vector<std::pair<float, float>> marker_label_x;  // each label's left and right
  struct MarkerDraw {
    const char* kind = "";  // marker_name(): "failed", "lingering", ...
    float x = 0.f, top = 0.f;  // its line's x; its triangle's top (8 px high, 10 wide)
  };
  std::vector<MarkerDraw> marker_lines;  // every marker drawn
  std::vector<float> lost_label_x;  // where each lost rank's "no data after here" starts
  std::vector<std::string> legend;  // the legend's names: tick classes and marker kinds the trace has
  std::vector<std::pair<float, float>> track_y;  // each track's rows on screen, top and bottom
  std::vector<TimelineGapDraw> gaps;             // idle gaps in view (Note [Idle gaps])
  float plot_x0 = 0.f, plot_x1 = 0.f;            // where time is drawn
  // Note [Start-up band]: the x of the first backward_begin and of the last
  // event (a model with a backward only): the training's width on screen.
  float first_backward_x = 0.f, last_event_x = 0.f;
};

class TimelineView {
 public:
  explicit TimelineView(TimelineViewOptions options = {});

  // Indexes every event of `model` (or clears with nullptr). The model must
  // outlive the view or the next set_model().
  void set_model(const analysis::Model* model);
  // The same with the index and story already built for `model` (by the
  // loader thread: Note [Scene off the UI thread]).
  void set_model(const analysis::Model* model, TimelineIndex index, const RunStory& story);
  // An index made elsewhere (benchmarks): no model, so no names or ranges.
  void set_index(TimelineIndex index);
  // Draws into the current window's remaining content region.
  TimelineResult draw(size_t current_event);

  void fit();  // the whole trace, idle gaps collapsed or not as the user left them
  // ns on the model's clock; the window's ends are in time, idle gaps between them keep their width.
  void set_window(double begin_ns, double end_ns);
  // Note [Idle gaps]: expand (false) or collapse gap k of index().idle_gaps(); the view fits again.
  void set_gap_collapsed(size_t k, bool collapsed);
  bool gap_collapsed(size_t k) const { return k < gap_collapsed_.size() && gap_collapsed_[k]; }
  void toggle_bookmark(size_t event);
  // The GUI keeps its bookmarks elsewhere (app/session.h) and shows them here.
  void set_bookmarks(std::vector<size_t> events) { bookmarks_ = std::move(events); }
  const std::vector<size_t>& bookmarks() const { return bookmarks_; }
  const TimelineIndex& index() const { return index_; }
  const TimelineDrawStats& stats() const { return stats_; }
  // The last click on the canvas that moved to the nearest event: where, the
  // time under it then, and the event (tests of the real window read it).
  struct Click {
    float x = 0.f, y = 0.f;
    double t = 0.0;
    size_t event = SIZE_MAX;  // SIZE_MAX: none yet
  };
  const Click& last_click() const { return last_click_; }
  const std::vector<TimelineMarker>& markers() const { return markers_; }
  // The time (ns on the model's clock) at screen x in the last frame, and
  // the screen x of a time: Note [Timeline time mapping].
  double time_at(float x) const { return t_of(x); }
  float x_at(double t) const { return x_of(t); }

 private:
  // Note [Timeline time mapping]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // Screen x and time map through one pair of functions, used by drawing
  // (ticks, spans, markers, bookmarks, the cursor, the axis), hit tests and
  // clicks alike. Time is first mapped to "view time": equal to time but
  // for each collapsed idle gap (Note [Idle gaps]), which takes gap_ns_ of
  // view time whatever its length; x is then linear in view time (begin_,
  // ns_per_px_). Pan and zoom work in view time.
  float x_of(double t) const;
  double t_of(float x) const;
  double view_of(double t) const;  // time -> view time
  double time_of(double v) const;  // view time -> time
  void fit_now();
  void draw_gaps(TimelineFrame& f, float top, float bottom);
  size_t event_at_time(double t) const;  // the first event at or after t (model order)
  // A click on no mark: the event nearest in time on the track under the
  // mouse (anywhere else in the plot: of the whole trace).
  std::optional<size_t> nearest_event(const TimelineFrame& f) const;
  void draw_axis(TimelineFrame& f);
  // draw's steps, in order: the toolbar row, the canvas and its input, the
  // tracks' heights, the tracks, then the cursor and bookmarks over them and
  // the tooltip of what the mouse is over.
  void draw_toolbar(size_t current_event);
  void begin_canvas(TimelineFrame& f);
  void size_tracks(TimelineFrame& f) const;
  void draw_overlays(TimelineFrame& f, size_t current_event);
  void draw_hover(TimelineFrame& f) const;
  void draw_track(TimelineFrame& f, const TimelineTrack& track, float y);
  void draw_ticks(TimelineFrame& f, const TimelineTrack& track, float y);
  void draw_lanes(TimelineFrame& f, const TimelineTrack& track, float y);
  std::string span_label(const TimelineSpan& s) const;
  void handle_input(TimelineFrame& f);
  void draw_legend();
  void draw_markers(TimelineFrame& f, float top, float bottom);
  void draw_lost(TimelineFrame& f, const TimelineTrack& track, float y, float height);

  TimelineViewOptions options_;
  const analysis::Model* model_ = nullptr;
  TimelineIndex index_;
  double begin_ = 0.0;       // visible window, view time (Note [Timeline time mapping])
  double ns_per_px_ = 1.0;
  float canvas_x_ = 0.f;     // screen x of begin_ (set per frame)
  float canvas_w_ = 1.f;
  bool fit_pending_ = true;
  std::vector<size_t> bookmarks_;
  std::vector<uint8_t> gap_collapsed_;  // per index_.idle_gaps(): collapsed (the default)
  double gap_ns_ = 0.0;                 // view time of a collapsed gap, set by fit
  std::vector<TimelineMarker> markers_;
  RunStory story_;
  std::optional<std::pair<double, double>> selection_;  // ns
  std::optional<double> selecting_from_;
  TimelineDrawStats stats_;
  Click last_click_;
  // Note [Timeline mark cache]: each track's marks for the window of the
  // last frame (t0, t1, min_gap), so that a still view asks the model
  // nothing (Note [Compact timeline index]); any pan or zoom walks again.
  struct CachedMark {
    size_t first = 0, last = 0;
    int64_t t_first = 0, t_last = 0;
    uint8_t classes = 0;  // of a fold; a lone tick's own class
    size_t first_alarm = 0;  // of a fold holding an alarm: its first (Note [Timeline folding])
  };
  std::vector<std::vector<CachedMark>> mark_cache_;  // per track
  std::vector<uint8_t> mark_cached_;                 // per track: mark_cache_ holds the key's marks
  int64_t cache_t0_ = 0, cache_t1_ = 0, cache_gap_ = 0;
};

}  // namespace hookscope::render
