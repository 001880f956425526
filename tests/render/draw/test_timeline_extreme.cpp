// The timeline zoomed to its limits (headless, with an ImGui context): every
// DDP scenario's trace, a trace on wall-clock nanoseconds and the crafted
// extreme-time trace. Each frame must finish with a bounded draw list (the
// axis once looped forever once |t| dwarfed the tick step).
#include <doctest/doctest.h>

#ifdef HOOKSCOPE_RENDER_DRAW
#include <imgui.h>

#include "analysis/model.h"
#include "testing/crafted_traces.h"
#include "render/draw/timeline_view.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/headless_imgui.h"
#include "testing/test_util.h"
#include "trace/reader.h"

using namespace hookscope;

namespace {

// Wheel `frames` notches in one direction at the canvas middle; returns the
// largest vertex count of a frame.
int zoom(testing::HeadlessImGui& imgui, render::TimelineView& view, float wheel, int frames) {
  int most = 0;
  for (int k = 0; k < frames; ++k) {
    ImGui::GetIO().MousePos = {600.f, 150.f};  // this ImGui reads io fields at NewFrame
    ImGui::GetIO().MouseWheel = wheel;
    most = std::max(most, imgui.frame([&] { view.draw(0); }));
  }
  return most;
}

}  // namespace

TEST_CASE("timeline: zooming every scenario's and the extreme-time traces to the limits draws bounded frames") {
  std::vector<std::pair<std::string, analysis::Model>> models;
  for (const char* name : {"recovery", "shared-module", "unused-parameter", "marked-twice"}) {
    scenarios::DdpScenarioOptions o;
    o.name = name;
    o.steps = 4;
    trace::TraceData t = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
    models.emplace_back(name, analysis::Model(std::move(t)));
  }
  {  // the same run as if recorded on wall-clock nanoseconds (~2026)
    scenarios::DdpScenarioOptions o;
    trace::TraceData t = testing::record_trace([&] { scenarios::run_ddp_scenario(o); });
    for (auto& e : t.events) e.t_ns += 1'780'000'000'000'000'000ull;
    models.emplace_back("wall clock", analysis::Model(std::move(t)));
  }
  for (const auto& c : testing::crafted::catalogue(10)) {
    if (c.name != "extreme_times") continue;
    models.emplace_back(c.name, analysis::Model(trace::read_trace_buffer(c.bytes.data(), c.bytes.size())));
  }
  testing::HeadlessImGui imgui(1000.f, 300.f);
  for (auto& entry : models) {
    const auto& name = entry.first;  // not a binding: clang 14 cannot CAPTURE one
    auto& model = entry.second;
    CAPTURE(name);
    render::TimelineView view;
    view.set_model(&model);
    imgui.frame([&] { view.draw(0); });
    CHECK(zoom(imgui, view, 1.f, 250) < 60000);    // all the way in
    CHECK(zoom(imgui, view, -1.f, 400) < 60000);   // all the way out
    CHECK(zoom(imgui, view, 1.f, 120) < 60000);    // and back
  }
}
#endif  // HOOKSCOPE_RENDER_DRAW
