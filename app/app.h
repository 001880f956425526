#pragma once
// The app: what is open (trace files through loader.h, or a live run,
// live_run.h), the background jobs (event filter, diagnostics, compare), the
// Session every panel follows (app/session.h), and the panels, one source
// file each (app/panel_*.cpp), with what they cache between frames. A new
// model reaches every view through publish_model() alone. main.cpp owns the
// window; tests drive an App with an ImGui context and no window (test_app_ui).

#include <imgui.h>

#include <atomic>
#include <chrono>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "analysis/diagnostics.h"
#include "analysis/diagnostics_table.h"
#include "analysis/diff.h"
#include "app_args.h"
#include "config.h"
#include "event_filter.h"
#include "live_run.h"
#include "loader.h"
#include "app_export.h"
#include "panel_compare.h"
#include "reducer_buckets.h"
#include "render/draw/graph_view.h"
#include "render/draw/timeline_view.h"
#include "session.h"
#include "view_panels.h"

namespace hookscope::app {

// Note [Default layout] (app.cpp): fractions of the window below the menu.
// The graph is kLeft wide and kTop high, the Function panel kFunction high
// beside it, the timeline kTimeline high under both.
constexpr float kLayoutLeft = 0.62f, kLayoutTop = 0.52f, kLayoutTimeline = 0.27f, kLayoutFunction = 0.34f;
// Note [UI glyphs]: the code points the UI font is loaded with (app.cpp).
const ImWchar* ui_glyph_ranges();

// What the Diagnostics panel drew last frame, for the draw report (Note
// [Draw report]): each message's text and rect, and the area it must stay
// inside (the findings' child window, or the panel when there is none).
struct DiagnosticsDrawn {
  struct Row {
    std::string kind;  // the finding kind's name; "none" for the no-findings line
    std::string text;  // as drawn
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool wrapped = false;  // drawn with a wrap position (a group too long to wrap draws one line each)
  };
  float x0 = 0, y0 = 0, x1 = 0, y1 = 0;  // the text area: content region across, the visible part down
  float line_h = 0;
  std::vector<Row> rows;
};

// The Events panel's filtered rows, computed off the UI thread for big traces.
struct EventRows {
  std::string expression;            // what the rows are for
  FilterParseError error;            // of the expression being typed
  bool all = true;                   // no filter: row i is event i
  std::vector<analysis::EventIndex> rows;
  std::future<std::vector<analysis::EventIndex>> pending;
  std::shared_ptr<std::atomic<bool>> cancel;  // of `pending`
  const analysis::Model* model = nullptr;  // the model the rows belong to
  // Jobs superseded while the user typed: cancelled, dropped once they stop
  // (a std::async future's destructor would wait for it on the UI thread).
  std::vector<std::future<std::vector<analysis::EventIndex>>> retired;
  void retire() {
    if (!pending.valid()) return;
    cancel->store(true);
    retired.push_back(std::move(pending));
  }
};

// Diagnostics run off the UI thread; the panel shows them once ready.
struct FindingsState {
  // Note [Compact findings]. Never null (empty until diagnosed); shared with
  // the compare job that unpacks it (Note [Compare off the UI thread]).
  std::shared_ptr<const analysis::FindingTable> findings = std::make_shared<const analysis::FindingTable>();
  bool ready = false;
  std::future<analysis::FindingTable> pending;
  const analysis::Model* model = nullptr;  // what `findings` describe
  // The model to diagnose next. A live run grows its model a few times a
  // second: one diagnose runs at a time, the findings shown stay until the
  // next are ready (indices stay valid in a grown model, Note [Analysis ids]).
  std::shared_ptr<const analysis::Model> wanted;
  std::shared_ptr<const analysis::Model> running;  // kept alive while diagnosed
  // Keeps `model` alive while it is compared by address: a freed model's
  // address reused by a newer one would make old findings look current.
  std::shared_ptr<const analysis::Model> described;
};

// A second trace beside the first (Compare panel).
struct CompareState {
  std::vector<std::string> files;
  std::shared_ptr<const analysis::Model> model;
  // B's findings, diagnosed once and off the UI thread as soon as B is
  // loaded: the counts' diff and the synchronised graphs both read them (a
  // 300k-hook B took seconds on the UI thread, twice).
  std::shared_future<std::vector<analysis::Finding>> findings;
  std::unique_ptr<analysis::ModelDiff> diff;  // once both models and findings are there
  // A's findings unpacked (FindingTable::to_vector) for `diff`, kept for the
  // synchronised graphs: unpacking a million findings is not done twice a frame.
  std::vector<analysis::Finding> findings_a;
  // The A that `diff`, or the diff being made, describes.
  const analysis::Model* diffed_against = nullptr;
  TraceLoader loader;
  std::string error;

  // Note [Compare off the UI thread]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // Unpacking A's findings and diffing the two models took 150-700 ms of one
  // frame when a compare opened (and again whenever A changed): they run as
  // a job of their own, started by App::poll_background once both models and
  // both sides' findings are in; the Compare panel says "comparing ..."
  // until it lands. The job holds what it reads (A, its findings, B, B's
  // findings), so a newer A or B, or closing B, only retires it: its
  // result is dropped, and retired jobs are forgotten once done (a
  // std::async future's destructor would wait for it on the UI thread).
  struct Diffed {
    std::vector<analysis::Finding> findings_a;
    std::unique_ptr<analysis::ModelDiff> diff;
  };
  std::future<Diffed> pending;
  std::vector<std::future<Diffed>> retired;
  // Drops the diff and any diff being made: the next poll makes a new one.
  void drop_diff() {
    diff.reset();
    diffed_against = nullptr;
    if (pending.valid()) retired.push_back(std::move(pending));
  }
};

class App {
 public:
  explicit App(const Args& args);
  ~App();
  // Fonts, theme and scale. `scale`: the monitor's content scale (HiDPI).
  void setup_style(float scale);
  void frame();
  void shutdown();
  void report();  // --bench-frames output

  bool quit_requested() const { return quit_; }
  // The first error code asked for stays (a later "done, 0" does not hide it).
  void request_quit(int code) {
    quit_ = true;
    if (exit_code_ == 0) exit_code_ = code;
  }
  int exit_code() const { return exit_code_; }

  // Opening things: asynchronous, with a progress bar; errors go to a dialog.
  void open_files(std::vector<std::string> files);
  void open_compare(std::vector<std::string> files);
  // Dropped onto the window (main.cpp's GLFW callback): opens them; with
  // Shift held, opens them for comparison.
  void on_drop(std::vector<std::string> files);

  // Note [Idle frames]
  // ~~~~~~~~~~~~~~~~~~
  // A still window costs nothing: main.cpp draws a frame only after input
  // (and a few more for ImGui to settle) or while the App says something
  // will change without input: playback, a load, a live run growing, a
  // background job (filter, diagnostics, lazy state, layout, LiveIndex,
  // compare), an export, a fire's ring pulsing (it pulses for
  // kFlashPulseSeconds, then stays lit). Otherwise it waits in
  // glfwWaitEventsTimeout. Anything new that moves on its own must say so here.
  bool wants_frames() const;
  // True once what was asked for on the command line is loaded (or failed)
  // and the graph layout has landed: screenshots wait for it.
  bool settled() const;
  // Blocks until loads and diagnostics finish (tests, screenshots).
  // One line saying what the window shows (printed with --screenshot).
  std::string describe_view() const;
  // Note [Draw report]: the last frame's measured drawing as JSON.
  bool write_draw_report(const std::string& path) const;

  Session& session() { return session_; }
  const Session& session() const { return session_; }
  const std::string& error() const { return error_; }
  const FindingsState& findings() const { return findings_; }
  const EventRows& event_rows() const { return rows_; }
  render::GraphView& graph() { return graph_; }
  // The Events panel's filter text (tests set it as a user types).
  void set_filter(const std::string& expression);
  bool help_open() const { return show_help_; }
  // The Help window as last drawn (tests): its width, its description column's.
  struct HelpLayout {
    float window_w = 0.f, what_w = 0.f;
  };
  const HelpLayout& help_layout() const { return help_layout_; }
  bool live() const { return live_.active(); }
  bool live_finished() const { return live_.finished(); }

  // Every key the app handles (Help lists them; tests press them).
  void handle_keys();

  // Export (app_export.h): what main.cpp reads back after rendering this
  // frame, and tells the App it wrote; the export queue is empty.
  std::vector<Capture> take_captures();
  void capture_written(const Capture& capture, bool ok);
  bool exports_done() const { return export_.queue.empty() && export_.captures.empty(); }
  // Non-zero while the next frame is to be drawn offscreen at this size (a
  // whole-graph PNG): main.cpp sets ImGui's display size to it and renders
  // into a framebuffer object; captures then read that framebuffer.
  int offscreen_width() const { return export_.off_w; }
  int offscreen_height() const { return export_.off_h; }
  void request_export(ExportRequest request);
  // The whole-graph PNG's own view while it is laid out and drawn (tests).
  const render::GraphView* export_view() const { return export_.whole.get(); }
  // The Compare view's synchronised state (tests).
  const CompareGraphs& compare_state() const { return compare_graphs_; }
  const CompareState& compare() const { return compare_; }  // B, its findings, the diff (tests)
  // Shows every panel and view at once, the Compare panel included (the
  // GUI fuzzer, fuzz/fuzz_gui_frame.cpp: one frame draws them all).
  void show_every_panel();

 private:
  void adopt(LoadResult result);
  // The one place a model reaches the views (Note [Publishing a model]).
  // `keep_position`: a live run's grown model (event and selection stay).
  void publish_model(std::shared_ptr<const analysis::Model> model, bool keep_position,
                     std::shared_ptr<render::GraphScene> scene = nullptr,
                     std::shared_ptr<const render::RunStory> story = nullptr,
                     std::shared_ptr<render::TimelineIndex> timeline = nullptr);
  void poll_live();
  void poll_background();
  void poll_compare();  // Note [Compare off the UI thread]
  void jump_to(size_t event, analysis::FunctionIndex select = analysis::kNoIndex);
  // Sets window positions/sizes for the default layout (always when
  // `force`, else only for windows that have none in imgui.ini).
  void place(float x, float y, float w, float h);  // then the window's Begin

  // Panels, one file each.
  void draw_menu();          // app_menu.cpp
  void draw_status_bar();    // panel_status.cpp
  void draw_graph_panel();   // panel_graph.cpp
  void draw_inspector_panel();    // panel_inspector.cpp
  void draw_timeline_panel();     // panel_timeline.cpp
  void draw_events_panel();       // panel_events.cpp
  void draw_reducers_panel();     // panel_reducers.cpp
  void draw_diagnostics_panel();  // panel_diagnostics.cpp
  void draw_compare_panel();      // panel_compare.cpp
  // Its sections: panel_compare.cpp (counts at the end, findings) and
  // panel_compare_graphs.cpp (graphs synchronised on matching points, hook order).
  bool compare_waiting(const analysis::Model* m);
  int compare_tab_asked() const;  // --compare-tab as the panel's tab number, or -1
  bool compare_findings_ready() const;  // B's, diagnosed off the UI thread (app_model.cpp)
  bool compare_header(const std::string& name_a, const std::string& name_b);
  void compare_counts_table(const analysis::ModelDiff& diff);
  void compare_findings(const analysis::ModelDiff& diff);
  void compare_sync();
  void compare_graphs();
  void compare_graph_side(bool side_b, float width);
  void compare_differences();
  void compare_order_table();
  bool compare_settled() const;
  // Export (app_export.cpp): File > Export and --export-graph / --export-lanes.
  void draw_exports();
  void draw_export_window();
  void draw_export_menu_items();  // app_menu.cpp
  void draw_export_dialog();      // app_menu.cpp
  void draw_view_panels();        // panel_views.cpp: Lanes, Readiness, Why did this fire?
  void draw_view_menu_items();    // panel_views.cpp
  void draw_lanes_panel();        // panel_lanes.cpp
  void draw_readiness_panel();    // panel_readiness.cpp
  void draw_explain_panel();      // panel_explain.cpp
  void draw_changes_section();    // panel_explain.cpp: what changed at this event
  void draw_help_window();        // panel_help.cpp
  void draw_goto_dialog();        // panel_help.cpp
  void draw_file_browser();       // file_browser.cpp
  void draw_error_dialog();
  void draw_progress();

  Args args_;
  Session session_;
  std::vector<std::string> files_;  // what is open ("" entries for a live run)
  std::string title_;               // the status bar's name for it
  TraceLoader loader_;
  bool initial_load_pending_ = false;
  std::string error_;               // shown in a modal dialog
  std::string warning_;             // shown in the status bar (truncated files)
  std::string ini_path_;            // imgui.ini under config_dir()

  render::GraphView graph_;
  render::TimelineView timeline_;
  EventRows rows_;
  render::CollectiveNames collective_names_;  // the Events panel's names for collectives
  FindingsState findings_;
  CompareState compare_;
  ViewPanels views_;  // Lanes, Readiness, Why did this fire? (view_panels.h)
  RecentFiles recent_;

  LiveRun live_;

  // UI state.
  bool show_help_ = false;
  HelpLayout help_layout_;
  bool show_goto_ = false;
  bool show_browser_ = false;
  bool browser_for_compare_ = false;
  bool show_compare_ = false;
  bool compare_tab_shown_ = false;  // --compare-tab's tab was selected once (panel_compare.cpp)
  bool goto_focus_ = false;
  bool focus_filter_ = false;       // Ctrl+F: put the cursor in the filter box
  bool reset_layout_ = false;       // View > Reset layout: place windows again
  bool scroll_events_ = false;      // the current event moved: scroll the table to it
  size_t last_current_ = SIZE_MAX;
  char goto_text_[32] = "";
  char filter_text_[256] = "";
  std::chrono::steady_clock::time_point last_frame_{};

  // --bench-frames: each frame's CPU time; the first kBenchWarmupFrames (fonts,
  // the first layout) are not counted.
  static constexpr size_t kBenchWarmupFrames = 5;
  std::vector<double> frame_ms_;
  bool quit_ = false;
  int exit_code_ = 0;

  // ---- Function / Reducers / Diagnostics / Compare panels: shared helpers
  // (defined in panel_common.cpp) and what they keep between frames ----
  // "#i" drawn as a link: hover describes event i, a click jumps there
  // (keeping the selection). True when clicked.
  bool event_link(size_t event);
  // A small square in the owner's graph colour (red-outlined when `dead`),
  // then its name; a click selects the owner (its chips light up in the graph).
  void owner_label(analysis::OwnerIndex owner, bool dead);
  void select_owner(analysis::OwnerIndex owner);
  void select_function(analysis::FunctionIndex function);  // and focus it in the graph
  // The Function panel's sections (panel_inspector.cpp).
  struct HookRow;
  HookRow hook_row(const analysis::HookAt& at, bool on_tensor) const;
  void hook_cells(const HookRow& row, bool show_kind, bool grey);
  void inspector_owner(analysis::OwnerIndex owner);
  void inspector_owner_hooks(analysis::OwnerIndex owner);
  bool inspector_function_header(analysis::FunctionIndex function);
  void inspector_hooks_now(analysis::FunctionIndex function);
  void inspector_history(analysis::FunctionIndex function);
  // The Reducers panel's sections (panel_reducers.cpp).
  void reducer_section(analysis::ReducerIndex k, const analysis::ReducerAt& at);
  void reducer_summary(size_t alive, size_t lingering, size_t destroyed, size_t later);
  bool reducer_header(const analysis::ReducerInfo& info, const analysis::ReducerAt& at, uint32_t left);
  float reducer_summary_right_ = 0.f;  // how far the summary line ran past the panel's edge (<= 0: inside)
  std::vector<std::string> reducer_words_;  // each Reducer's state as its header said it last frame (draw report)
  // Note [Rebuilt buckets]: each Reducer's buckets, of the model they were read from.
  const analysis::Model* bucket_layouts_of_ = nullptr;
  std::vector<BucketLayout> bucket_layouts_;
  void reducer_life(const analysis::ReducerInfo& info, bool live);
  void reducer_ready_order(const analysis::ReducerInfo& info, const analysis::ReducerAt& at);
  // The Events panel's sections (panel_events.cpp).
  bool events_filter_box();  // true when Enter was pressed in it
  void events_table(size_t shown, size_t cur_row);
  // The Diagnostics panel's sections (panel_diagnostics.cpp).
  void diagnostics_refresh();
  void diagnostics_filters();
  bool diagnostics_group(size_t g);  // false when every row is filtered out
  void diagnostics_rows(size_t g, size_t n);
  void diagnostics_detail();
  // The Lanes panel's sections (panel_lanes.cpp).
  struct LanesFrame;
  void lanes_counters(const LanesFrame& f);
  void lanes_row_label(const LanesFrame& f, int r, ImDrawList* dl);
  void lanes_rows(const LanesFrame& f, std::optional<std::pair<size_t, analysis::FunctionIndex>>& go);
  struct OwnerHooksCache {  // the selected owner's attached hooks at one event
    const analysis::Model* model = nullptr;
    size_t at = SIZE_MAX;
    analysis::OwnerIndex owner = analysis::kNoIndex;
    std::vector<analysis::HookAt> hooks;  // on Functions, then on leaf tensors
  } owner_hooks_;
  struct DiagnosticsView {  // findings_ grouped and filtered, rows ordered by `at`
    const analysis::Model* model = nullptr;
    size_t num_findings = SIZE_MAX;
    uint32_t filter = UINT32_MAX;
    std::vector<analysis::FindingGroup> groups;
    analysis::FindingCounts counts;
    std::vector<std::vector<uint32_t>> rows;  // per group: indices into findings_
    std::vector<std::vector<size_t>> occurrences;  // per group: running sum of counts
    size_t selected = SIZE_MAX;               // the finding whose details show below
    uint32_t hidden = 0;                      // bits: severities 0..2, kinds 8..
    bool up_to_current = false;
    const analysis::Model* end_model = nullptr;  // what end_text describes (no findings)
    std::string end_text;
    DiagnosticsDrawn drawn;  // what the last frame drew (Note [Draw report])
  } diagnostics_view_;
  struct CompareView {
    const analysis::ModelDiff* diff = nullptr;  // what `rows` are for (with its size)
    size_t num_functions = 0;
    bool only_differing = false;
    std::vector<uint32_t> rows;  // indices into diff->functions
    uint32_t kinds = 0;          // bit per HookKind with hooks on either side
  } compare_view_;
  CompareGraphs compare_graphs_;  // panel_compare.h
  ExportState export_;            // app_export.h
};

}  // namespace hookscope::app
