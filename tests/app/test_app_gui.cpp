// The desktop app for real, in a window under Xvfb (Mesa llvmpipe): a
// recovery trace screenshotted before the failure, after the Reducer's
// destruction and after the rebuild; alarms drawn for leaked hooks; a
// corrupt file does not crash it. Skips, saying why, without xvfb-run.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>
#include <stb_image.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "analysis/model.h"
#include "testing/test_util.h"
#include "testing/gui_harness.h"
#include "trace/reader.h"

using namespace hookscope;
using trace::EventKind;
namespace fs = std::filesystem;

namespace {

fs::path gui_dir() {
  static const fs::path dir = testing::gui_scratch_dir("hookscope_gui");
  return dir;
}

using testing::have_xvfb;

testing::CommandResult gui(const std::string& args) { return testing::run_gui(args); }

std::string record(const std::string& policy) {
  return testing::record_once(gui_dir(), "recovery_" + policy, "recovery --steps 6 --policy " + policy);
}

struct Image : testing::Pixels {
  size_t distinct_colours() const {
    std::set<uint32_t> s;
    for (size_t i = 0; i + 3 < rgba.size(); i += 4 * 7) {
      s.insert(uint32_t(rgba[i]) << 16 | uint32_t(rgba[i + 1]) << 8 | rgba[i + 2]);
    }
    return s.size();
  }
  // Pixels close to the graph's alarm red (render/layout/colors.h kAlarm, 240,64,64).
  size_t alarm_pixels() const {
    size_t n = 0;
    for (size_t i = 0; i + 3 < rgba.size(); i += 4) {
      n += std::abs(rgba[i] - 240) < 20 && std::abs(rgba[i + 1] - 64) < 25 && std::abs(rgba[i + 2] - 64) < 25;
    }
    return n;
  }
};

Image load_png(const std::string& path) {
  Image img;
  testing::load_png(path, img);
  return img;
}

size_t differing_pixels(const Image& a, const Image& b) {
  REQUIRE(a.rgba.size() == b.rgba.size());
  size_t n = 0;
  for (size_t i = 0; i < a.rgba.size(); i += 4) {
    n += a.rgba[i] != b.rgba[i] || a.rgba[i + 1] != b.rgba[i + 1] || a.rgba[i + 2] != b.rgba[i + 2];
  }
  return n;
}

Image screenshot(const std::string& trace, size_t at, const std::string& name, std::string* said = nullptr) {
  const std::string png = (gui_dir() / name).string();
  const auto r = gui(trace + " --at " + std::to_string(at) + " --screenshot " + png);
  REQUIRE_MESSAGE(r.exit == 0, r.out);
  CHECK(r.out.find("wrote " + png) != std::string::npos);
  if (said) *said = r.out;
  return load_png(png);
}

// First event of `kind` at or after `from` (satisfying `ok`).
size_t first_of(const analysis::Model& m, EventKind kind, size_t from) {
  for (size_t i : m.events_of_kind(kind)) {
    if (i >= from) return i;
  }
  FAIL("no " << trace::to_string(kind) << " after event " << from);
  return 0;
}

}  // namespace

TEST_CASE("gui: screenshots before the failure, after the Reducer's destruction and after the rebuild differ" *
          doctest::test_suite("gui")) {
  std::string why;
  if (!have_xvfb(&why)) {
    MESSAGE("skipping: " << why);
    return;
  }
  const std::string trace = record("none");
  const analysis::Model m(trace::read_trace(trace));
  const size_t failure = first_of(m, EventKind::kFailure, 0);
  const size_t destroyed = first_of(m, EventKind::kReducerDestroyed, failure);
  const size_t rebuilt = first_of(m, EventKind::kReducerConstructed, destroyed);
  const size_t before = failure - 1;
  // After the rebuild: once the new Reducer's first backward has fired its hooks.
  const size_t after_rebuild = first_of(m, EventKind::kBucketsFinalized, rebuilt);

  std::string said_before, said_destroyed, said_rebuilt;
  const Image a = screenshot(trace, before, "before.png", &said_before);
  const Image b = screenshot(trace, destroyed + 1, "destroyed.png", &said_destroyed);
  const Image c = screenshot(trace, after_rebuild, "rebuilt.png", &said_rebuilt);
  CHECK(a.w == 1280);
  CHECK(a.h == 800);
  // Not blank: a drawn UI has many colours (text, boxes, chips, the timeline).
  for (const Image* img : {&a, &b, &c}) CHECK(img->distinct_colours() > 50);
  // They differ, and not only in the status bar: at least 1% of the window.
  const size_t min_diff = static_cast<size_t>(a.w) * a.h / 100;
  CHECK(differing_pixels(a, b) > min_diff);
  CHECK(differing_pixels(b, c) > min_diff);
  CHECK(differing_pixels(a, c) > min_diff);
  // Before the failure nothing is an alarm; once a Reducer is destroyed with
  // policy none its hooks are left behind and drawn as alarms (red).
  CHECK(said_before.find(" 0 as alarms") != std::string::npos);
  CHECK(said_destroyed.find(" 0 as alarms") == std::string::npos);
  CHECK(said_rebuilt.find(" 0 as alarms") == std::string::npos);
  CHECK(b.alarm_pixels() > a.alarm_pixels() + 200);
}

TEST_CASE("gui: with policy by-key nothing is left behind, so no alarms after the rebuild" *
          doctest::test_suite("gui")) {
  std::string why;
  if (!have_xvfb(&why)) {
    MESSAGE("skipping: " << why);
    return;
  }
  const std::string trace = record("by-key");
  const analysis::Model m(trace::read_trace(trace));
  std::string said;
  const Image img = screenshot(trace, m.num_events() - 1, "by_key_end.png", &said);
  CHECK(said.find(" 0 as alarms") != std::string::npos);
  CHECK(said.find(" 0 errors") != std::string::npos);
  CHECK(img.distinct_colours() > 50);
  const std::string none = record("none");
  const analysis::Model mn(trace::read_trace(none));
  std::string said_none;
  screenshot(none, mn.num_events() - 1, "none_end.png", &said_none);
  CHECK(said_none.find(" 0 as alarms") == std::string::npos);
}

TEST_CASE("gui: a corrupt or missing trace does not crash the app" * doctest::test_suite("gui")) {
  std::string why;
  if (!have_xvfb(&why)) {
    MESSAGE("skipping: " << why);
    return;
  }
  const std::string good = record("by-key");
  // Damage the middle of a real trace, and a file that is no trace at all.
  const fs::path damaged = gui_dir() / "damaged.hstrace";
  {
    std::ifstream in(good, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    for (size_t i = bytes.size() / 2; i < bytes.size() / 2 + 64 && i < bytes.size(); ++i) bytes[i] ^= 0x5a;
    std::ofstream(damaged, std::ios::binary) << bytes;
  }
  const fs::path junk = gui_dir() / "junk.hstrace";
  std::ofstream(junk, std::ios::binary) << "HSTR but not really a trace file at all";
  const auto r1 = gui(damaged.string() + " --frames 10");
  // what was recovered opens (exit 0); when the damage left no event, nothing
  // could be opened: a headless run exits 2 (a script must not read success)
  const bool nothing = r1.out.find("no events could be recovered") != std::string::npos;
  CHECK_MESSAGE(r1.exit == (nothing ? 2 : 0), r1.out);
  // The reader's message, with the byte offset; what was recovered (if any) is shown.
  CHECK(r1.out.find("truncated at byte") != std::string::npos);
  const std::string png = (gui_dir() / "junk.png").string();
  // Headless, nobody reads a dialog: exit 2 and no picture of nothing.
  const auto r2 = gui(junk.string() + " --screenshot " + png);
  CHECK_MESSAGE(r2.exit == 2, r2.out);
  CHECK(r2.out.find("could not open") != std::string::npos);
  CHECK(r2.out.find("junk.hstrace") != std::string::npos);
  CHECK_FALSE(fs::exists(png));
  // A missing file is a usage error, said before any window opens.
  const auto r3 = gui((gui_dir() / "nope.hstrace").string() + " --frames 2");
  CHECK(r3.exit == 2);
  CHECK(r3.out.find("nope.hstrace") != std::string::npos);
}
#endif
