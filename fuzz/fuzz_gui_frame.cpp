// libFuzzer target for what the GUI draws (a trace it cannot open or draw must never crash it): the whole App, as a
// user opens a trace, with an ImGui context whose font atlas is built but
// no renderer (NewFrame/Render draw into ImDrawLists nobody uploads). Each
// input is opened as a trace and compared with itself, every panel and view
// is shown (graph, Function, Reducers, timeline, Events, Diagnostics,
// Compare, Lanes, Readiness, Why did this fire?), and frames are drawn at the
// first event, the first hook fire, the middle and the last, with the
// Function of each event selected. Whatever the trace says, no frame may
// crash, abort (ImGui's "Too many vertices" assert included: Note [Drawable
// text]) or allocate without bound (an uncaught std::bad_alloc aborts too).
//
// An input is a trace file (it starts with the file magic; checksums are
// skipped: Note [Fuzzing skips checksums]) or, so that
// mutations reach the analysis and the views directly, raw 48-byte event
// records (Note [Event record]) written to a trace file by the project's
// writer, as fuzz_trace_model.cpp reads them. scripts/fuzz.sh builds it.

#include <imgui.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "app.h"
#include "app_assets.h"
#include "trace/file_format.h"
#include "trace/fuzzing.h"
#include "trace/strings.h"
#include "trace/writer.h"

namespace tr = hookscope::trace;
namespace an = hookscope::analysis;
namespace app = hookscope::app;

namespace {

std::filesystem::path g_dir;
ImFontAtlas* g_fonts = nullptr;

// Raw event records, as fuzz_trace_model.cpp's raw_events, written as a file.
bool write_raw_events(const uint8_t* data, size_t size, const std::string& path) {
  static const char* const kStrings[] = {"", "MulBackward0", "Reducer \xff\x1b[2J", "probe",
                                         "layer.weight [64]", "AccumulateGrad", "DistributedDataParallel", "x"};
  const size_t strings = size ? 1 + data[0] % 8 : 1;
  std::vector<uint32_t> ids(strings, 0);
  for (size_t s = 1; s < strings; ++s) ids[s] = tr::intern(kStrings[s]);
  const size_t n = size ? std::min<size_t>((size - 1) / sizeof(tr::Event), 4096) : 0;
  if (n == 0) return false;
  tr::TraceHeader header;
  header.scenario = "fuzz";
  header.world_size = 1 + (data[0] >> 6);
  tr::TraceFileWriter writer(path, header);
  auto chunk = std::make_unique<tr::Chunk>();
  for (size_t i = 0; i < n; ++i) {
    tr::Event e;
    std::memcpy(&e, data + 1 + i * sizeof(tr::Event), sizeof e);
    e.kind = static_cast<tr::EventKind>(1 + static_cast<uint8_t>(e.kind) % 63);
    if (tr::event_arg_is_string(e.kind)) e.arg = ids[e.arg % strings];
    chunk->events[chunk->count++] = e;
    if (chunk->count == tr::kChunkEvents) {
      writer.on_chunk(std::move(chunk));
      chunk = std::make_unique<tr::Chunk>();
    }
  }
  if (chunk->count) writer.on_chunk(std::move(chunk));
  writer.close();
  return true;
}

bool write_input(const uint8_t* data, size_t size, const std::string& path) {
  if (size >= 8 && std::memcmp(data, "\x89HSTRACE", 8) == 0) {
    std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<long>(size));
    return true;
  }
  return write_raw_events(data, size, path);
}

class Frames {
 public:
  explicit Frames(const std::string& path) {
    ctx_ = ImGui::CreateContext(g_fonts);
    ImGuiIO& io = ImGui::GetIO();
    io.DisplaySize = ImVec2(1600, 1000);
    io.DeltaTime = 1.f / 60.f;
    io.IniFilename = nullptr;
    io.BackendFlags |= ImGuiBackendFlags_RendererHasVtxOffset;  // as the OpenGL3 backend says
    app::Args args;
    args.files = {path};
    args.compare = {path};  // the Compare panel: the trace against itself
    args.frames = 1000;     // headless: a frame waits for what it shows
    app_ = std::make_unique<app::App>(args);
    app_->show_every_panel();
  }
  ~Frames() {
    app_.reset();
    ImGui::DestroyContext(ctx_);
  }
  app::App& app() { return *app_; }
  void frame() {
    ImGui::NewFrame();
    app_->frame();
    ImGui::Render();
  }
  // Until loads, findings, layouts and the compare diffs are in (bounded).
  void settle() {
    for (int i = 0; i < 12 && !app_->settled(); ++i) frame();
    frame();
  }

 private:
  ImGuiContext* ctx_ = nullptr;
  std::unique_ptr<app::App> app_;
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  tr::skip_checksums_for_fuzzing();  // Note [Fuzzing skips checksums]
  g_dir = std::filesystem::temp_directory_path() / ("fuzz_gui_frame_" + std::to_string(::getpid()));
  std::filesystem::create_directories(g_dir);
  ::setenv("XDG_CONFIG_HOME", g_dir.c_str(), 1);  // no imgui.ini, no recent files of the user's
  // One atlas for every input: the UI font as the App loads it (app.cpp).
  g_fonts = new ImFontAtlas();
  if (const std::string font = app::ui_font().string(); !font.empty()) {
    g_fonts->AddFontFromFileTTF(font.c_str(), 15.f, nullptr, app::ui_glyph_ranges());
  } else {
    g_fonts->AddFontDefault();
  }
  unsigned char* pixels = nullptr;
  int w = 0, h = 0;
  g_fonts->GetTexDataAsRGBA32(&pixels, &w, &h);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = (g_dir / "input.hstrace").string();
  if (!write_input(data, size, path)) return 0;
  Frames f(path);
  f.settle();
  const an::Model* m = f.app().session().model();
  if (!m || m->num_events() == 0) return 0;
  const size_t n = m->num_events();
  size_t first_fire = 0;
  for (size_t i = 0; i < n && i < 4096; ++i) {
    if (m->event(i).kind == tr::EventKind::kHookFired) {
      first_fire = i;
      break;
    }
  }
  for (size_t at : {first_fire, n / 2, n - 1}) {
    f.app().session().go_to(at);
    f.app().session().select_function(f.app().session().function_of_event(at));
    f.settle();
  }
  return 0;
}
