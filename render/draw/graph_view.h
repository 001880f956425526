#pragma once
// The autograd graph drawn with ImGui's ImDrawList: Functions as boxes with
// their hooks as badges, edges as Bézier curves, pan / zoom / fit, a
// minimap, level of detail, hover and selection. The layout runs off the UI
// thread (LayoutJob); the view draws the last finished one.
//
// The GUI calls, per frame, inside an ImGui window:
//   GraphViewResult r = view.draw(cursor.state());
// and reads r.selected_function / r.selected_owner for the other panels.

#include <atomic>
#include <cmath>
#include <cstdint>
#include <future>
#include <memory>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/state_view.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/layout/layout_job.h"
#include "render/layout/story.h"

struct ImDrawList;

namespace hookscope::render {

class LiveIndex;      // graph_view_live.h
class GraphSource;    // graph_source.h (Note [One graph drawing path])
class StateSource;
class IndexedSource;

struct GraphViewOptions {
  BoxMetrics metrics;
  LayoutOptions layout;
  bool minimap = true;
  float minimap_width = 190.f;  // pixels
  // Note [Readable text]: no text is drawn smaller than this (pixels); fit
  // never zooms out so far that box labels would drop below it.
  float min_text_px = 10.f;
  // A removed hook's ghost chip stays this many events, fading.
  uint32_t ghost_events = 24;
  // Compact view: the canvas shape (width / height) ranks are packed to
  // (Note [Packed ranks]); 0 = the shape of the canvas drawn last. A second
  // view of the same graph (the whole-graph export) sets the first's.
  float pack_aspect = 0.f;
  // Note [Graph at a million Functions]: above this many Functions a frame
  // at a new event reads the liveness from the layout's LiveIndex, not from
  // the State's every live Function (the app sets Session::lazy_threshold()).
  size_t indexed_functions = 200000;
};

struct GraphViewResult {
  analysis::FunctionIndex selected_function = analysis::kNoIndex;
  analysis::OwnerIndex selected_owner = analysis::kNoIndex;
  analysis::FunctionIndex hovered_function = analysis::kNoIndex;
  analysis::HookIndex hovered_hook = analysis::kNoIndex;
  bool selection_changed = false;  // by a click in this frame
};

// Note [Graph level of detail]: what a frame drew, for tests and benchmarks.
enum class GraphDetail : uint8_t { kFull, kBoxes, kCells };
struct GraphDrawStats {
  GraphDetail detail = GraphDetail::kFull;
  uint32_t boxes = 0;   // boxes drawn (full or plain)
  uint32_t texts = 0;   // boxes whose text was drawn
  uint32_t edges = 0;
  uint32_t cells = 0;   // dots / density cells
  uint32_t alarms = 0;  // boxes drawn as alarms: hooks of a destroyed or lingering owner on them
  // What a test needs to measure the picture (screen pixels).
  struct Rect {
    float x0 = 0.f, y0 = 0.f, x1 = 0.f, y1 = 0.f;
  };
  float min_text_px = 0.f;        // smallest text drawn (0: none)
  uint32_t small_texts = 0;       // texts drawn below GraphViewOptions::min_text_px
  std::vector<Rect> box_rects;    // every box drawn
  std::vector<uint32_t> box_units;  // per box drawn: its unit (GraphView::folded_graph())
  // Per box drawn: a bit per trace::HookKind whose chips it shows (tag and
  // at least one chip), and the chips it could not fit ("+N") in all boxes.
  std::vector<uint16_t> box_chip_kinds;
  uint32_t hidden_chips = 0;
  std::vector<std::pair<uint16_t, Rect>> rank_columns;  // every rank's column (boxes' bounds)
  std::vector<std::pair<uint16_t, Rect>> captions;      // every rank's "rank N" caption drawn (Note [Banner rows])
  std::vector<std::pair<uint16_t, Rect>> banners;       // a failed / lost rank's banner
  std::vector<uint16_t> banner_failed;                  // per banner: 1 failed or lost, 0 rebuilt
  std::vector<uint16_t> banner_clipped;                 // per banner: 1 its text is wider than it (hover shows it)
  Rect banner_more;  // "+N more" after the banners that found no row (Note [Banner rows]); empty: none
  bool minimap_shown = false;
  Rect minimap;
  Rect content;                   // where boxes are drawn
  uint32_t stale_chips = 0;       // chips of a hook firing stale at this event
  uint32_t ghost_chips = 0;       // removed hooks' fading chips
  bool pulsing = false;           // a fire's ring pulsed this frame (Note [Idle frames])
  // The owners' legend: entries drawn, left for "+N more", lines, entries
  // saying "gen", and its right edge beside the panel's (it never runs past).
  uint32_t legend_entries = 0, legend_more = 0, legend_lines = 0, legend_gens = 0;
  float legend_right = 0.f, panel_right = 0.f;
  std::vector<std::string> legend_names;  // every entry's owner name, shown or in "+N more" (Note [Legend of the trace's owners])
  uint32_t removal_boxes = 0;     // boxes highlighted for a removal at this event
  uint32_t live_units = 0;        // boxes that are live now (drawn or not: off screen, culled)
  uint32_t layout_units = 0;      // boxes laid out (compact: the live ones only)
  uint32_t gen_labels = 0;        // boxes labelled "gen N" (Note [Module generations])
  bool state_pending = false;     // drawn from a StateView (Note [Graph while the state is pending])
  bool indexed = false;           // liveness from the LiveIndex (Note [Graph at a million Functions])
  std::vector<Rect> alarm_cells;  // density cells drawn as alarms (Note [Alarms by intervals])
  bool fit = false;               // this frame fitted the view
  bool fit_on_alarms = false;     // ... around the alarm boxes (focus_region)
  Rect fit_focus;                 // ... its focus region (world units; zero when everything fit)
  float layout_w = 0.f, layout_h = 0.f;  // the layout's extent, world units
  // Of `alarms`, those whose alarm is a lingering owner only (Note [Lingering
  // owners]: outlined in its colour), their "lingering: ..." tags drawn, and
  // legend entries drawn as lingering.
  uint32_t lingering = 0, lingering_tags = 0, legend_lingering = 0;
  std::vector<Rect> tag_rects;  // tags over boxes ("stale fire", "lingering: ..."): lingering ones never overlap
  // Note [Fit shows every rank]: what of the live boxes is not wholly on the
  // canvas, as the toolbar says it ("" when everything is), and whether what
  // matters (focus_region: the current event's box, the alarm boxes) is.
  std::string off_canvas;
  bool focus_on_canvas = true;
  // The current event's box (the Function running, firing or losing a hook),
  // on screen, when it is laid out (Note [The view follows the current event]).
  bool has_current = false;
  Rect current;
};

class GraphView {
 public:
  explicit GraphView(GraphViewOptions options = {});
  ~GraphView();
  GraphView(const GraphView&) = delete;
  GraphView& operator=(const GraphView&) = delete;

  // A new model (or nullptr): builds its scene and starts the layout. Needs
  // a current ImGui context (text is measured with the current font). The
  // model must outlive the view or the next set_model().
  void set_model(const analysis::Model* model);
  // The same with the scene and story already built from `model` off the UI
  // thread (Note [Scene off the UI thread]); null ones are built here.
  // `open_at`: the event the first frame will draw, when known; the first
  // layout is then the one that frame needs (Note [One layout at open]).
  void set_model(const analysis::Model* model, std::shared_ptr<GraphScene> scene,
                 std::shared_ptr<const RunStory> story, analysis::EventIndex open_at = analysis::kNever);
  // The same trace, grown (a live recording) or reloaded: slots that were
  // there keep their place (Note [Stable layout]), new ones fit around
  // them; selection and view stay.
  void update_model(const analysis::Model* model);
  // Draws into the current window's remaining content region. `state` is
  // the state right after the current event (state.index).
  GraphViewResult draw(const analysis::State& state);
  // The same, with the selection owned by the caller (the app's Session,
  // one home for it): the view draws `selected_function` / `selected_owner` and
  // returns a click's new selection as an intent (selection_changed), which
  // the caller applies or not; the view keeps no selection of its own.
  GraphViewResult draw(const analysis::State& state, analysis::FunctionIndex selected_function,
                       analysis::OwnerIndex selected_owner);
  // Note [Graph while the state is pending]: the same at the event of
  // `view` while its full State is being built (app/session.h, Note [Lazy
  // seeks in the GUI]), in the time of the boxes in view.
  GraphViewResult draw(const analysis::StateView& view, analysis::FunctionIndex selected_function,
                       analysis::OwnerIndex selected_owner);

  // Note [Graph at a million Functions]: GraphViewOptions::indexed_functions.
  void set_indexed_functions(size_t functions) { options_.indexed_functions = functions; }

  // ---- commands (take effect in the next draw) ----
  void fit();  // the live Functions (or all) fill the view
  void focus(analysis::FunctionIndex function);
  void select_function(analysis::FunctionIndex function);
  void select_owner(analysis::OwnerIndex owner);
  // Folds or expands a group (GraphScene::groups()): a seeded re-layout
  // (Note [Stable layout]), everything else stays where it is.
  void set_folded(uint32_t group, bool folded);
  bool folded(uint32_t group) const;
  void relayout();  // from scratch, compact again
  // Note [Compact boxes]: one-line boxes, chosen by fit when the full ones
  // cannot all show with readable text; the toolbar toggles it.
  void set_compact(bool compact);
  bool compact() const { return metrics_.compact; }
  // The canvas shape the last compact layout was packed to (0: none yet).
  float packed_aspect() const { return packed_aspect_; }

  // ---- inspection (tests, benchmarks, the demo) ----
  bool layout_ready() const { return layout_ != nullptr; }
  bool layout_pending() const { return job_ != nullptr; }
  // Note [Idle frames]: something will change without input (a layout or
  // LiveIndex being built, a fire's ring still pulsing): draw again soon.
  bool busy() const;
  // Layout jobs started since the view was made (Note [One layout at open]).
  uint64_t layouts_started() const { return layouts_started_; }
  void wait_for_layout();  // blocks until the pending layout lands
  // Blocks until the drawn layout's LiveIndex is built (Note [Graph while the
  // state is pending]: until then a pending frame draws no boxes).
  void wait_for_live_index();
  const GraphScene* scene() const { return scene_.get(); }
  const Layout* layout() const { return layout_.get(); }
  const FoldedGraph* folded_graph() const { return folded_.get(); }
  const GraphDrawStats& stats() const { return stats_; }
  // World point at the centre of the canvas and pixels per world unit.
  Vec2 center() const { return center_; }
  float zoom() const { return zoom_; }
  void set_view(Vec2 center, float zoom);
  // Where the box of `function` was drawn in the last frame (screen
  // pixels); false when it was not on screen.
  bool box_on_screen(analysis::FunctionIndex function, Vec2* min, Vec2* max) const;
  // The world rectangle the last frame showed.
  void visible_rect(Vec2* min, Vec2* max) const;

 private:
  struct Frame;  // per-frame scratch, graph_view_internal.h
  struct Chip;
  // Where a frame reads the event from (Note [One graph drawing path]): a
  // StateView and the LiveIndex, or neither (the full State walked).
  struct Pick {
    const analysis::StateView* view = nullptr;
    const LiveIndex* index = nullptr;
    bool pending = false;
  };

  // keep_at_open: a compact layout of the slots live at drawn_at_ (Note [One layout at open]).
  void start_layout(bool seeded, bool keep_at_open = false);
  bool full_boxes_cannot_fit(const analysis::Model& model, analysis::EventIndex at) const;
  void wait_for_box_sizes();  // Note [Box sizes off the UI thread]
  void poll_layout();
  void land_layout();
  // Note [Landing a layout off the UI thread]: what a finished layout needs
  // before it is drawn, built by finish_ (graph_view_land.cpp).
  struct Landed;
  void start_finish();
  void drop_finish();  // waits for finish_, discards it
  void take_landed(Landed& x);
  void take_edge_tables(Landed& x);  // the edge index part of take_landed
  void adopt_scene(const analysis::Model& model, std::shared_ptr<GraphScene> scene,
                   std::shared_ptr<const RunStory> story);  // takes the finished job's layout
  void index_edges();  // graph_edges.cpp
  // The frame at `state`'s event; `pending`: its StateView while the State is
  // being built (Note [Graph while the state is pending]), `state` empty.
  GraphViewResult draw_frame(const analysis::State& state, const analysis::StateView* pending);
  Pick pick_source(const analysis::State& state, const analysis::StateView* pending);
  void begin_frame(Frame& f, const analysis::State& state);
  void draw_toolbar(const analysis::State& state, bool pending);
  bool place_canvas(Frame& f);  // true when the minimap's column is reserved
  void note_event(Frame& f);    // the hook firing, the Function running or losing a hook
  void follow_commands(Frame& f);  // a compact re-layout, fit, focus
  void focus_now(Frame& f);
  void draw_content(Frame& f, bool minimap);
  // Sets f.src to the source of `state`'s event, refreshed when the event,
  // scene or layout changed (Note [Frame caches]; graph_view_live.cpp).
  void refresh_liveness(Frame& f, const analysis::State& state, const Pick& pick);
  void stop_live_index();
  const LiveIndex* live_index(bool wait = false);  // null until built
  void handle_input(Frame& f);
  void draw_edges(Frame& f);
  void draw_boxes(Frame& f);
  void draw_cells(Frame& f);
  void draw_box(Frame& f, uint32_t unit);
  void draw_plain_box(Frame& f, uint32_t unit);
  void draw_minimap(Frame& f);
  void draw_rank_captions(Frame& f);
  void draw_banners(Frame& f);
  struct Banner;  // graph_story.cpp
  std::vector<Banner> plan_banners(const Frame& f, float font_size) const;
  // Note [Banner rows]: the header strip's rows, fixed for the trace.
  static constexpr size_t kBannerRows = 3;
  int banner_rows() const;
  void draw_legend(const analysis::State& state);
  struct LegendEntry;  // graph_story.cpp
  std::vector<LegendEntry> legend_entries(const analysis::State& state) const;
  // Per owner, the event its first hook was added at (kNever: none), for the
  // legend (Note [Legend of the trace's owners]); made at the first legend of a model.
  mutable std::vector<analysis::EventIndex> owner_first_hook_;
  mutable const analysis::Model* owner_first_hook_of_ = nullptr;
  void draw_legend_entry(const LegendEntry& e, const std::string& label);
  // False when `yield` and it would overlap a tag drawn already (then it is not drawn).
  bool draw_tag(Frame& f, uint32_t unit, const char* text, uint32_t color, bool yield = false);
  // The parts of a box (graph_draw.cpp, Note [Box contents]).
  struct BoxLook;
  BoxLook look_of(Frame& f, uint32_t unit);
  void draw_box_frame(Frame& f, const BoxLook& b);
  void draw_box_tags(Frame& f, const BoxLook& b);
  void draw_box_text(Frame& f, const BoxLook& b);
  void draw_compact_title(Frame& f, const BoxLook& b, float fs, const float* clip);
  void draw_chips(Frame& f, const BoxLook& b);
  void draw_chip(Frame& f, const Chip& chip, float x0, float x1, float y0, float y1, bool text_on, bool pulsing, double pulse);
  // Edges (graph_edges.cpp): those to draw this frame into f.edge_order, then drawn.
  size_t live_next_edges(const Frame& f, size_t cap) const;
  size_t tiles_in_view(const Frame& f, int* x0, int* x1, int* y0, int* y1) const;
  void list_walked_edges(Frame& f);
  void list_tiled_edges(Frame& f, int x0, int x1, int y0, int y1);
  void draw_edge(Frame& f, uint32_t le, uint32_t color, float thick, float arrow);
  // Hover (graph_badges.cpp): the tooltip of unit u, its hooks' table.
  void box_tooltip(const Frame& f, uint32_t u, const Chip* hovered_chip);
  void hooks_table(const Frame& f, const std::vector<std::pair<uint8_t, const analysis::HookAt*>>& hooks);
  bool minimap_rect(const Frame& f, float* x0, float* y0, float* x1, float* y1, float* scale) const;
  float minimap_column(const Frame& f) const;  // the minimap column's width (graph_fit.cpp)
  // Text through here, so that stats know the smallest size drawn.
  void put_text(Frame& f, float size, float x, float y, uint32_t color, const char* begin,
                const char* end = nullptr, const float* clip = nullptr);
  // True when it framed the alarm boxes.
  bool focus_region(const Frame& f, Vec2* lo, Vec2* hi) const;
  // Note [Fit shows every rank]: off_canvas_ and the stats, after the boxes are drawn (graph_fit.cpp).
  void note_off_canvas(const Frame& f);
  // Note [Alarms by intervals]: fit's rule for an alarm box (graph_view_alarms.cpp).
  bool box_alarm(const Frame& f, uint32_t unit, std::vector<Chip>& scratch) const;
  void hover_and_click(Frame& f);
  void context_menu(Frame& f);
  // A unit's badges (graph_badges.cpp, Note [Box contents]).
  void chips_of(const Frame& f, uint32_t unit, std::vector<Chip>& out) const;
  void slot_chips(const Frame& f, uint32_t slot, std::vector<Chip>& out) const;
  Chip hook_chip(const Frame& f, uint8_t kind, const analysis::HookAt& h) const;
  void ghost_chips(const Frame& f, analysis::FunctionIndex function, std::vector<Chip>& out) const;
  static bool same_chip(const Chip& a, const Chip& b);
  static void push_chip(std::vector<Chip>& out, const Chip& c);
  static void merge_group_chips(std::vector<Chip>& out);
  // Chips left to right after their kind's tag (world x); those that do not
  // fit get NAN and the returned x is where "+N" goes (NAN when all fit).
  static float place_chips(std::vector<Chip>& chips, const GraphScene& scene, float left,
                           float right, const BoxMetrics& m, float* kind_x);
  void fit_now(const Frame& f);
  // Note [The view follows the current event]; `by_hand`: the user pans or zooms this frame.
  void follow_current(Frame& f, bool by_hand);
  void switch_metrics(bool compact);
  // Where a unit's chips go (world): from `left` to `right`, row starting at `top`.
  void chip_row(uint32_t unit, float* left, float* right, float* top) const;

  GraphViewOptions options_;
  float packed_aspect_ = 0.f;  // what the last pack used (0: none yet)
  BoxMetrics metrics_;      // options_.metrics, or their compact form
  bool auto_compact_ = true;  // fit may switch to compact boxes (until the user chooses)
  // Note [Compact boxes]: the slots the compact layout holds (the live ones
  // when it started); the view lays out again when the live set differs.
  std::vector<uint8_t> layout_keep_;
  analysis::EventIndex drawn_at_ = 0;  // the last frame's event: packing groups by generation then
  bool at_fit_ = true;  // no pan or zoom since the last fit: a new compact layout fits again
  const analysis::Model* model_ = nullptr;
  std::shared_ptr<GraphScene> scene_;
  std::vector<uint8_t> folded_groups_;
  // The layout drawn and the folded graph it belongs to; the job computes
  // the next one for pending_.
  // Shared with the LiveIndex job, which reads them off the UI thread.
  std::shared_ptr<FoldedGraph> folded_, pending_;
  std::shared_ptr<Layout> layout_;
  std::unique_ptr<LayoutJob> job_;  // until its layout lands (finish_ included)
  std::future<std::shared_ptr<Landed>> finish_;
  std::shared_future<void> box_sizes_done_;  // the job's box sizes measured (Note [Box sizes off the UI thread])
  // Note [Stable layout]: the last place of every slot and group, so that
  // expanding a group puts its members back where they were.
  std::vector<int> node_layer_, group_layer_;
  std::vector<float> node_x_, group_x_;
  std::vector<float> layer_height_;  // the tallest each layer has been
  // Per layout: the widest box of each layer (culling), edge bounding boxes.
  std::vector<float> layer_max_width_;
  std::vector<Vec2> edge_min_, edge_max_;
  // Note [Frame caches]: per layout edge, the model edges drawn as it (CSR,
  // ascending); a grid of tiles over the layout listing the edges whose
  // bounds touch each tile, and the long edges that would touch too many.
  std::vector<uint32_t> edge_model_begin_, edge_model_;
  int edge_cols_ = 0, edge_rows_ = 0;
  Vec2 edge_tile_{1.f, 1.f};
  std::vector<uint32_t> tile_edge_begin_, tile_edges_, long_edges_;
  bool edges_indexed_ = false;
  uint64_t generation_ = 0;  // bumped by every new scene or layout
  uint64_t layouts_started_ = 0;
  struct RankBounds {
    uint16_t rank;
    Vec2 min, max;
  };
  std::vector<RankBounds> rank_bounds_;  // captions "rank N" when several
  RunStory story_;                       // Note [Run story]
  std::vector<std::pair<uint16_t, uint32_t>> rank_sources_;  // (rank, source) of per-rank traces
  bool minimap_open_ = true;             // the toolbar's toggle
  bool minimap_needed_ = false;          // the last frame did not show everything
  // Note [Fit shows every rank]: the widest the minimap's column may be so
  // that the ranks' columns fit beside it at the readable zoom (set by fit).
  float minimap_cap_ = INFINITY;
  std::string off_canvas_;               // the last frame's note, shown in the toolbar
  uint32_t legend_lines_ = 1;            // the last legend's lines, kept while the state is pending

  Vec2 center_{0.f, 0.f};
  float zoom_ = 1.f;
  bool fit_pending_ = true;
  bool fit_on_layout_ = false;  // fit once the pending layout lands (box shape changed)
  analysis::FunctionIndex focus_pending_ = analysis::kNoIndex;
  // What follow_current last saw: the event and the layout (generation_).
  analysis::EventIndex followed_at_ = analysis::kNever;
  uint64_t followed_generation_ = 0;
  bool view_set_ = false;  // set_view() since: the caller's view stands
  analysis::FunctionIndex selected_function_ = analysis::kNoIndex;
  analysis::OwnerIndex selected_owner_ = analysis::kNoIndex;
  uint32_t menu_unit_ = UINT32_MAX;
  double event_since_ = 0.0;  // ImGui time the drawn event was first drawn (the fire ring's pulse)
  GraphDrawStats stats_;
  std::unique_ptr<Frame> frame_;
  // Note [Graph while the state is pending]: the view drawn from, and the
  // empty State at its event that stands in for the full one.
  analysis::StateView lazy_view_;
  // Note [Graph at a million Functions]: a StateView at the full State's
  // event, and the event the compact layout's live slots are of (kNever:
  // not known, lay out again).
  analysis::StateView indexed_view_;
  // The last frame read the full State through the LiveIndex: a compact
  // layout works its live slots out from the model (keep_at).
  bool keep_from_index_ = false;
  // Note [One graph drawing path]: the two sources a frame may draw from.
  std::unique_ptr<StateSource> state_source_;
  std::unique_ptr<IndexedSource> indexed_source_;
  analysis::EventIndex layout_keep_at_ = analysis::kNever;
  std::shared_ptr<std::vector<uint8_t>> pending_keep_;  // the job's live slots, filled by its prepare
  analysis::State lazy_state_;
  // Note [Liveness by intervals]: the LiveIndex of the layout drawn, built
  // by live_job_ (cancelled by *live_cancel_).
  std::shared_ptr<const LiveIndex> live_index_;
  std::future<std::shared_ptr<const LiveIndex>> live_job_;
  std::shared_ptr<std::atomic<bool>> live_cancel_;
};

}  // namespace hookscope::render
