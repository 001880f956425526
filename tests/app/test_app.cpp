// The app driven as a user would, with an ImGui context and no window: keys
// move the current event, panels follow it, bad files give an error dialog.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "analysis/compare.h"
#include "analysis/synthetic.h"
#include "app.h"
#include "testing/headless_app.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::app;
using hookscope::testing::frames_until;
using hookscope::testing::kEnd;
using hookscope::testing::kEnter;
using hookscope::testing::kEscape;
using hookscope::testing::kHome;
using hookscope::testing::kLeft;
using hookscope::testing::kPageDown;
using hookscope::testing::kPageUp;
using hookscope::testing::kRight;
using hookscope::testing::kSpace;
using trace::EventKind;
namespace fs = std::filesystem;

namespace {

// Recent files and imgui.ini go here, not into the user's config.
fs::path scratch_dir() { return testing::scratch_config_dir("hookscope_app_ui"); }

// A recovery run recorded by the CLI, as a user would make it (once per policy).
std::string recovery_trace(const std::string& policy) {
  const fs::path path = scratch_dir() / ("recovery_" + policy + ".hstrace");
  if (!fs::exists(path)) {
    const auto r = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) +
                                        " record recovery --steps 5 --policy " + policy + " -o " +
                                        path.string());
    REQUIRE_MESSAGE(r.exit == 0, r.out);
  }
  return path.string();
}

// One HeadlessApp per test, with the recent files in the scratch directory.
class HeadlessUi : public testing::HeadlessApp {
 public:
  explicit HeadlessUi(Args args) : HeadlessApp((scratch_dir(), std::move(args))) {}
};

Args args_for(std::vector<std::string> files) { return testing::headless_args(std::move(files)); }

}  // namespace

TEST_CASE("app: keys step through the trace and the panels' state follows") {
  HeadlessUi ui(args_for({recovery_trace("none")}));
  App& app = ui.app();
  Session& s = app.session();
  REQUIRE(s.model() != nullptr);
  CHECK(app.error().empty());
  CHECK(s.current() == s.num_events() - 1);  // opens at the end: the final state
  ui.press(kHome);
  CHECK(s.current() == 0);
  ui.press(kRight);
  ui.press(kRight);
  CHECK(s.current() == 2);
  ui.press(kLeft);
  CHECK(s.current() == 1);
  CHECK(s.state() == s.model()->state_at(1));
  ui.press(kEnd);
  CHECK(s.current() == s.num_events() - 1);

  // PgDn from the start: the first Reducer constructed, then on to the failure.
  ui.press(kHome);
  ui.press(kPageDown);
  CHECK(s.model()->event(s.current()).kind == EventKind::kReducerConstructed);
  bool saw_failure = false, saw_destroyed = false;
  for (int i = 0; i < 12 && !saw_destroyed; ++i) {
    ui.press(kPageDown);
    const auto k = s.model()->event(s.current()).kind;
    saw_failure |= k == EventKind::kFailure;
    saw_destroyed |= saw_failure && k == EventKind::kReducerDestroyed;
  }
  CHECK(saw_destroyed);
  const size_t destroyed_at = s.current();
  ui.press(kPageUp);
  CHECK(s.current() < destroyed_at);

  // Ctrl+Right: the next event of the current event's kind.
  ui.press(kHome);
  s.set_step_kind(EventKind::kHookFired);
  ui.press(kRight, /*ctrl=*/true);
  CHECK(s.model()->event(s.current()).kind == EventKind::kHookFired);
  const size_t first_fire = s.current();
  ui.press(kRight, true);
  CHECK(s.current() > first_fire);
  CHECK(s.model()->event(s.current()).kind == EventKind::kHookFired);
}

TEST_CASE("app: Ctrl+B bookmarks, Ctrl+1 jumps back, Ctrl+G opens Go to, Space plays") {
  HeadlessUi ui(args_for({recovery_trace("none")}));
  Session& s = ui.app().session();
  ui.press(kHome);
  for (int i = 0; i < 7; ++i) ui.press(kRight);
  ui.press('B', true);
  CHECK(s.bookmarks() == std::vector<size_t>{7});
  ui.press(kEnd);
  ui.press('1', true);
  CHECK(s.current() == 7);
  ui.press('G', true);
  CHECK(ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId));
  ui.press(kEscape);
  ui.frame();
  CHECK_FALSE(ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId));
  ui.press(kSpace);
  CHECK(s.playing());
  ui.press(kSpace);
  CHECK_FALSE(s.playing());
  ui.press(290);  // F1
  CHECK(ui.app().help_open());
}

TEST_CASE("app: --play with --bench-frames moves 1/60 s of events a frame, however long a frame takes") {
  Args args = args_for({recovery_trace("none")});
  args.play = 600.0;  // 10 events a frame
  args.bench_frames = 400;
  HeadlessUi ui(std::move(args));
  Session& s = ui.app().session();
  frames_until([&] { return s.model() != nullptr; }, [&] { ui.frame(); });
  REQUIRE(s.model() != nullptr);
  ui.frame();  // the frame that starts playing
  REQUIRE(s.playing());
  const size_t start = s.current();
  for (int i = 0; i < 5; ++i) {
    ui.frame();
    std::this_thread::sleep_for(std::chrono::milliseconds(i == 2 ? 80 : 0));  // one slow frame
  }
  CHECK(s.current() == start + 50);
}

TEST_CASE("app: the Events filter selects rows, a bad expression keeps the last rows") {
  HeadlessUi ui(args_for({recovery_trace("none")}));
  App& app = ui.app();
  app.set_filter("kind:reducer_destroyed");
  ui.frame();
  const EventRows& rows = app.event_rows();
  REQUIRE_FALSE(rows.all);
  REQUIRE(rows.rows.size() >= 2);  // a Reducer per rank, destroyed after the failure
  for (auto i : rows.rows) CHECK(app.session().model()->event(i).kind == EventKind::kReducerDestroyed);
  const size_t n = rows.rows.size();
  app.set_filter("kind:reducer_destroy");
  ui.frame();
  CHECK(rows.error.message.find("no event kind") != std::string::npos);
  CHECK(rows.rows.size() == n);
  app.set_filter("");
  ui.frame();
  CHECK(rows.all);
}

TEST_CASE("app: diagnostics of a policy none run find the leaked hooks") {
  HeadlessUi ui(args_for({recovery_trace("none")}));
  const FindingsState& f = ui.app().findings();
  REQUIRE(f.ready);
  bool leaked = false;
  for (const auto& x : *f.findings) leaked |= x.kind == analysis::FindingKind::kLeakedHook;
  CHECK(leaked);
}

TEST_CASE("app: a corrupt or missing file gives an error dialog and the app keeps running") {
  const fs::path junk = scratch_dir() / "junk.hstrace";
  {
    std::ofstream out(junk, std::ios::binary);
    out << "this is not a trace, just some bytes that look nothing like one";
  }
  HeadlessUi ui(args_for({junk.string()}));
  App& app = ui.app();
  CHECK(app.session().model() == nullptr);
  CHECK(app.error().find("junk.hstrace") != std::string::npos);
  for (int i = 0; i < 5; ++i) ui.frame();
  ui.press(kRight);  // nothing open: keys do nothing, nothing breaks
  // A good trace opened afterwards replaces nothing and loads fine.
  app.open_files({recovery_trace("by-key")});
  frames_until([&] { return app.session().model() != nullptr; }, [&] { ui.frame(); });
  CHECK(app.session().model() != nullptr);
  // And a corrupt one opened now leaves the good one open.
  app.open_files({junk.string()});
  for (int i = 0; i < 20; ++i) ui.frame();
  CHECK(app.session().model() != nullptr);
}

TEST_CASE("app: a cut-short trace opens with what was recovered and says so") {
  const std::string good = recovery_trace("by-key");
  const fs::path cut = scratch_dir() / "cut.hstrace";
  const auto size = fs::file_size(good);
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes(size * 2 / 3, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(cut, std::ios::binary) << bytes;
  }
  HeadlessUi ui(args_for({cut.string()}));
  // Either some events were recovered (a warning) or none could be (an error); never a crash.
  if (ui.app().session().model()) {
    CHECK(ui.app().session().num_events() > 0);
  } else {
    CHECK_FALSE(ui.app().error().empty());
  }
}
#endif

#if HOOKSCOPE_APP_UI
TEST_CASE("app: --live shows the recovery scenario's events as they arrive, then all of them") {
  Args a;
  a.live = true;
  a.scenario.scenario = "recovery";
  a.scenario.policy = "none";
  a.scenario.steps = 8;
  a.cli = HOOKSCOPE_CLI_PATH;
  // Not a headless run: the scenario runs in its child while frames draw.
  HeadlessUi ui(a);
  App& app = ui.app();
  REQUIRE(app.live());
  std::vector<size_t> sizes;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!app.live_finished() && std::chrono::steady_clock::now() < deadline) {
    ui.frame();
    const size_t n = app.session().num_events();
    if (sizes.empty() || sizes.back() != n) sizes.push_back(n);
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(app.live_finished());
  REQUIRE(app.session().model() != nullptr);
  // The view followed the end while the run went on...
  CHECK(app.session().current() == app.session().num_events() - 1);
  // ...and diagnostics of the finished run arrive and find the leak. (Under
  // CPU load the findings ready first may be those of a model of the run
  // still going, without the leak yet: wait for the final model's.)
  auto final_findings = [&] {
    return app.findings().ready && app.findings().model == app.session().model();
  };
  for (int i = 0; i < 4000 && !final_findings(); ++i) {
    ui.frame();
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  REQUIRE(final_findings());
  bool leaked = false;
  for (const auto& f : *app.findings().findings) leaked |= f.kind == analysis::FindingKind::kLeakedHook;
  CHECK(leaked);
  MESSAGE("live model sizes seen: " << sizes.size() << ", last " << sizes.back());
  CHECK(sizes.back() > 500);
}
#endif

#if HOOKSCOPE_APP_UI
TEST_CASE("app: the window layout is saved to imgui.ini in the config directory") {
  Args a;
  a.files = {recovery_trace("by-key")};  // not headless: the layout is the user's
  const fs::path ini = scratch_dir() / "hookscope" / "imgui.ini";
  fs::remove(ini);
  {
    HeadlessUi ui(a);
    frames_until([&] { return ui.app().session().model() != nullptr; }, [&] { ui.frame(); });
    REQUIRE(ui.app().session().model() != nullptr);
    CHECK(std::string(ImGui::GetIO().IniFilename) == ini.string());
  }
  REQUIRE(fs::exists(ini));
  std::ifstream in(ini);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("[Window][Graph]") != std::string::npos);
  CHECK(text.find("[Window][Events]") != std::string::npos);
  // Nothing else was written next to the tests (a freed ini name once did).
  const fs::path recent = scratch_dir() / "hookscope" / "recent.txt";
  CHECK(fs::exists(recent));
}
#endif

#if HOOKSCOPE_APP_UI
TEST_CASE("app: files dropped on the window open, Ctrl+O opens the file browser") {
  HeadlessUi ui(args_for({}));
  App& app = ui.app();
  CHECK(app.session().model() == nullptr);
  app.on_drop({recovery_trace("by-key")});
  for (int i = 0; i < 3; ++i) ui.frame();
  REQUIRE(app.session().model() != nullptr);
  ui.press('O', true);
  CHECK(ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId));
  ui.press(kEscape);
  ui.frame();
  CHECK_FALSE(ImGui::IsPopupOpen(nullptr, ImGuiPopupFlags_AnyPopupId));
}

TEST_CASE("recent files: newest first, no duplicates, at most ten, kept across runs") {
  const fs::path file = scratch_dir() / "recent_test.txt";
  fs::remove(file);
  {
    RecentFiles r(file);
    CHECK(r.entries().empty());
    for (int i = 0; i < 12; ++i) r.add({"/traces/run" + std::to_string(i) + ".hstrace"});
    r.add({"/traces/run5.hstrace"});
    r.add({"/traces/a.rank0.hstrace", "/traces/a.rank1.hstrace"});
  }
  RecentFiles again(file);
  REQUIRE(again.entries().size() == RecentFiles::kMax);
  CHECK(again.entries()[0] == std::vector<std::string>{"/traces/a.rank0.hstrace", "/traces/a.rank1.hstrace"});
  CHECK(again.entries()[1] == std::vector<std::string>{"/traces/run5.hstrace"});
  size_t fives = 0;
  for (const auto& e : again.entries()) fives += e[0] == "/traces/run5.hstrace";
  CHECK(fives == 1);
  again.clear();
  CHECK(RecentFiles(file).entries().empty());
  // No file: nothing read, nothing written, no error.
  RecentFiles none{fs::path()};
  none.add({"x.hstrace"});
  CHECK(none.entries().size() == 1);
}
#endif

#if HOOKSCOPE_APP_UI
TEST_CASE("app: a filter typed over a running one replaces it, the rows are the last expression's") {
  Args a;
  a.files = {recovery_trace("none")};  // not headless: filtering runs in the background
  HeadlessUi ui(a);
  App& app = ui.app();
  frames_until([&] { return app.session().model() != nullptr; }, [&] { ui.frame(); });
  REQUIRE(app.session().model() != nullptr);
  for (const char* e : {"k", "kind:hook_f", "kind:hook_fire", "kind:hook_add", "kind:hook_add rank:0"}) {
    app.set_filter(e);
    ui.frame();
  }
  frames_until([&] { return !app.event_rows().pending.valid() && app.event_rows().retired.empty(); },
               [&] { ui.frame(); });
  const EventRows& rows = app.event_rows();
  CHECK(rows.expression == "kind:hook_add rank:0");
  REQUIRE_FALSE(rows.all);
  REQUIRE_FALSE(rows.rows.empty());
  for (auto i : rows.rows) {
    CHECK(app.session().model()->event(i).kind == EventKind::kHookAdded);
    CHECK(app.session().model()->event(i).rank == 0);
  }
}

TEST_CASE("filter: a cancelled selection stops early") {
  const analysis::Model m(analysis::make_synthetic_trace({.events = 300000}));
  FilterParseError err;
  const EventFilter f = EventFilter::parse("kind:hook_fire", &err);
  std::atomic<bool> cancel{true};
  CHECK(f.select(m, 0, m.num_events(), &cancel).empty());
  cancel = false;
  CHECK_FALSE(f.select(m, 0, m.num_events(), &cancel).empty());
}
TEST_CASE("app compare: PgDn in A moves B to the matching story step; File > Export writes the SVG") {
  Args args = args_for({recovery_trace("none")});
  args.compare = {recovery_trace("by-key")};
  args.panel = "compare";
  HeadlessUi ui(args);
  App& app = ui.app();
  Session& s = app.session();
  frames_until([&] { return app.settled(); }, [&] { ui.frame(); });
  REQUIRE(app.settled());
  const CompareGraphs& g = app.compare_state();
  REQUIRE(g.model_b != nullptr);
  const analysis::Model& a = *s.model();
  const analysis::Model& b = *g.model_b;
  ui.press(kHome);
  // PgDn walks A's Reducer lifecycle; wherever it stops, B is at the point of the same name.
  for (int step = 0; step < 12; ++step) {
    ui.press(kPageDown);
    const analysis::SyncedPoint& p = g.point;
    CHECK(g.stats.a == s.current());
    if (p.label == "before the first story point") {
      CHECK(g.stats.b == 0);
      continue;
    }
    const auto it = std::find_if(g.sync->points_a().begin(), g.sync->points_a().end(),
                                 [&](const analysis::StoryPoint& q) { return q.index == p.a; });
    REQUIRE(it != g.sync->points_a().end());
    CHECK(p.a <= s.current());
    if (p.found) CHECK(g.stats.b == analysis::resolve_point(b, it->name).index);
  }
  // After rebuild 1: none has the leaked hooks; by-key has none that policy
  // none lacks, but on the replaced rank 1, which may be further in its own
  // rebuild in B (Note [Parameter copies in a diff]).
  s.go_to(analysis::resolve_point(a, "rebuild:1").index);
  ui.frame();
  CHECK(g.point.label == "after rebuild 1");
  CHECK(g.stats.b == analysis::resolve_point(b, "rebuild:1").index);
  CHECK(g.stats.only_a > 0);
  for (const analysis::FunctionCounts& fc : g.at_point().functions) {
    if (fc.total_b() > fc.total_a()) CHECK(b.functions()[fc.b].rank == 1);
  }
  // An export from the menu, as its dialog queues it.
  const fs::path svg = scratch_dir() / "menu_export.svg";
  app.request_export({ExportJob::kGraphSvg, svg.string(), true});
  // The whole-graph export waits for its layout job (worker threads, both compare graphs).
  CHECK(frames_until([&] { return app.exports_done(); }, [&] { ui.frame(); }));
  std::ifstream in(svg);
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK(text.find("<rect class=\"box\"") != std::string::npos);
  CHECK(text.rfind("</svg>") != std::string::npos);
}

#endif
