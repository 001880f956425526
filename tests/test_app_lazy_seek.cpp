// Note [Lazy seeks in the GUI]: above a (here lowered) size threshold a far
// seek moves the current event at once and the full State follows from a
// worker thread; until then the Session says pending and the panels say
// "computing the state at #N...", never the old event's content. Then the
// State is state_at's.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <imgui.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "analysis/model.h"
#include "app.h"
#include "panel_common.h"
#include "session.h"
#include "test_util.h"

using namespace hookscope;
using namespace hookscope::app;
namespace fs = std::filesystem;

namespace {

// Lowers the threshold for one test, restores it after.
struct LazyThreshold {
  LazyThreshold(size_t functions, size_t step_events) { Session::set_lazy_threshold(functions, step_events); }
  ~LazyThreshold() { Session::set_lazy_threshold(kLazyStateFunctions, kLazyStepEvents); }
};

std::shared_ptr<const analysis::Model> recovery_model() {
  static const auto m =
      std::make_shared<const analysis::Model>(testing::record_recovery_trace(), analysis::ModelOptions{256, 8.0});
  return m;
}

fs::path scratch_dir() {
  static const fs::path dir = [] {
    fs::path d = fs::temp_directory_path() / ("hookscope_lazy_seek_" + std::to_string(::getpid()));
    fs::create_directories(d);
    ::setenv("XDG_CONFIG_HOME", d.c_str(), 1);  // imgui.ini and recent files go here
    return d;
  }();
  return dir;
}

}  // namespace

TEST_CASE("session: below the threshold a seek is synchronous, as before") {
  Session s;
  s.set_model(recovery_model(), false, 0);
  REQUIRE(recovery_model()->functions().size() <= Session::lazy_threshold());
  CHECK_FALSE(s.lazy());
  s.go_last();
  REQUIRE(s.full_state() != nullptr);
  CHECK(s.full_state()->index == s.current());
  CHECK(&s.state() == s.full_state());
}

TEST_CASE("session: above the threshold a far seek is pending until polled, then state_at's; near moves step") {
  LazyThreshold lower(0, 8);
  const auto model = recovery_model();
  const size_t last = model->num_events() - 1;
  REQUIRE(last > 100);
  Session s;
  s.set_model(model, false, 0);
  REQUIRE(s.lazy());
  REQUIRE(s.full_state() != nullptr);  // opening builds the state, as before

  s.go_to(last);
  CHECK(s.current() == last);
  CHECK(s.state_pending());
  CHECK(s.full_state() == nullptr);  // never event 0's state
  CHECK(s.state().index == last);
  CHECK(s.state().functions.empty());
  CHECK(s.view().index() == last);
  s.wait_state();
  REQUIRE(s.full_state() != nullptr);
  CHECK(*s.full_state() == model->state_at(last));

  // Near: stepped on the calling thread, never pending.
  s.step(-3);
  CHECK_FALSE(s.state_pending());
  CHECK(*s.full_state() == model->state_at(last - 3));

  // A second far seek before the first is built: the latest wins, and a
  // poll hands over nothing but the current event's state.
  std::mt19937 rng(7);
  for (int round = 0; round < 20; ++round) {
    const size_t a = rng() % model->num_events(), b = rng() % model->num_events();
    s.go_to(a);
    s.go_to(b);
    CHECK(s.current() == b);
    for (int i = 0; i < 3; ++i) {
      s.poll();
      if (const analysis::State* st = s.full_state()) CHECK(st->index == b);
    }
    s.wait_state();
    REQUIRE(s.full_state() != nullptr);
    CHECK(*s.full_state() == model->state_at(b));
    CHECK(s.view().index() == b);
  }
  // Back where the cursor is while pending: no longer pending.
  const size_t here = s.current();
  s.go_to(here > 100 ? here - 100 : here + 100);
  CHECK(s.state_pending());
  s.go_to(here);
  CHECK_FALSE(s.state_pending());
  CHECK(*s.full_state() == model->state_at(here));
}

namespace {

// The App in an ImGui context with no window; frame() returns how many
// panels said "computing the state at #N..." in it (pending_notes()).
class HeadlessApp {
 public:
  explicit HeadlessApp(const std::string& trace) {
    scratch_dir();
    ctx_ = ImGui::CreateContext();
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.f / 60.f;
    io.KeyMap[ImGuiKey_Home] = kHome;
    io.KeyMap[ImGuiKey_End] = kEnd;
    Args args;
    args.files = {trace};
    args.frames = 1000;  // headless: loads finish before the first frame draws
    app_ = std::make_unique<App>(args);
    app_->setup_style(1.f);
    unsigned char* pixels = nullptr;
    int w = 0, h = 0;
    io.Fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
    frame();
  }
  ~HeadlessApp() {
    app_.reset();
    ImGui::DestroyContext(ctx_);
  }
  App& app() { return *app_; }
  static constexpr int kHome = 268, kEnd = 269;  // GLFW's key codes
  // The frame a key goes down in (the App moves after its poll, so the
  // panels drawn in it see the move), then the frame it goes up in.
  size_t press(int key) {
    ImGui::GetIO().KeysDown[key] = true;
    const size_t down = frame();
    ImGui::GetIO().KeysDown[key] = false;
    frame();
    return down;
  }
  size_t frame() {
    const size_t before = pending_notes().drawn;
    ImGui::NewFrame();
    app_->frame();
    ImGui::Render();
    return pending_notes().drawn - before;
  }

 private:
  ImGuiContext* ctx_ = nullptr;
  std::unique_ptr<App> app_;
};

}  // namespace

TEST_CASE("app: above the threshold the Graph panel says the state is computing, then draws the new event's") {
  LazyThreshold lower(0, 8);
  const fs::path trace = scratch_dir() / "recovery_none.hstrace";
  const auto rec = testing::run_command(std::string(HOOKSCOPE_CLI_PATH) + " record recovery --steps 5 --policy none -o " +
                                        trace.string());
  REQUIRE_MESSAGE(rec.exit == 0, rec.out);
  HeadlessApp ui(trace.string());
  Session& s = ui.app().session();
  REQUIRE(s.model() != nullptr);
  REQUIRE(s.lazy());
  const size_t last = s.num_events() - 1;
  REQUIRE(s.current() == last);  // opens at the end
  CHECK(ui.frame() == 0);

  // A far seek: the panels drawn in the frame it happens in say pending
  // (the Graph panel at least), for the new event.
  CHECK(ui.press(HeadlessApp::kHome) >= 1);
  CHECK(s.current() == 0);
  CHECK(pending_notes().last_at == 0);
  if (s.state_pending()) CHECK(s.full_state() == nullptr);
  REQUIRE(testing::frames_until([&] { return !s.state_pending(); }, [&] { ui.frame(); }));
  CHECK(*s.full_state() == s.model()->state_at(0));
  CHECK(ui.frame() == 0);

  CHECK(ui.press(HeadlessApp::kEnd) >= 1);
  CHECK(pending_notes().last_at == last);
  REQUIRE(testing::frames_until([&] { return !s.state_pending(); }, [&] { ui.frame(); }));
  REQUIRE(s.full_state() != nullptr);
  CHECK(*s.full_state() == s.model()->state_at(last));
  CHECK(ui.frame() == 0);
}
#endif
