// What the views say about a run, without a GUI: the palette's contrast
// (WCAG AA, computed from the tables), owner colours by identity, the run
// story (failures, rebuilds, stale fires, severities) and rank columns that
// never overlap.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "analysis/model.h"
#include "render/layout/colors.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/layout/story.h"
#include "scenarios/ddp_scenarios.h"
#include "trace/recorder.h"
#include "trace/strings.h"

using namespace hookscope;
using namespace hookscope::render;
using trace::EventKind;

namespace {

analysis::Model story_model(const std::string& name, trace::DestroyPolicy policy, int recoveries = 1) {
  trace::MemoryRecorder rec;
  rec.start();
  scenarios::DdpScenarioOptions o;
  o.name = name;
  o.policy = policy;
  o.steps = 6;
  o.recoveries = recoveries;
  scenarios::run_ddp_scenario(o);
  rec.finish();
  trace::TraceData data;
  data.events = rec.events();
  data.strings = trace::strings_since(0);
  data.source = "memory";
  return analysis::Model(std::move(data));
}

uint32_t opaque_over(uint32_t color, uint32_t background) {  // alpha-blend, as drawn
  const double a = static_cast<double>(color >> 24) / 255.0;
  auto mix = [&](int shift) {
    const double c = static_cast<double>((color >> shift) & 0xff), b = static_cast<double>((background >> shift) & 0xff);
    return static_cast<uint32_t>(c * a + b * (1.0 - a) + 0.5);
  };
  return rgba(mix(0), mix(8), mix(16));
}

}  // namespace

TEST_CASE("palette: every text colour reads at WCAG AA (>= 4.5:1) on what it is drawn on, in both themes") {
  for (const Palette* p : {&kDarkPalette, &kLightPalette}) {
    CAPTURE(p->light);
    const std::pair<const char*, std::pair<uint32_t, uint32_t>> pairs[] = {
        {"text on background", {p->text, p->background}},
        {"dim text on background", {p->text_dim, p->background}},
        {"text on box", {p->text, p->box}},
        {"dim text on box", {p->text_dim, p->box}},
        {"text on leaf box", {p->text, p->box_leaf}},
        {"label on leaf box", {p->text_label, p->box_leaf}},
        {"label on box", {p->text_label, p->box}},
        {"text on group box", {p->text, p->box_group}},
        {"dim text on group box", {p->text_dim, p->box_group}},
        {"banner text on banner", {p->banner_text, p->banner}},
        {"banner text on rebuilt banner", {p->banner_text, p->recovered}},
        {"alarm text on background", {p->alarm, p->background}},
        {"stale text on background", {p->stale, p->background}},
        {"destroyed text on background", {p->destroyed, p->background}},
        {"warning text on background", {p->warning, p->background}},
        {"alarm '!' on its disc", {ink_on(p->alarm), p->alarm}},
        {"stale-fire tag", {ink_on(p->stale), p->stale}},
        {"removal tag", {ink_on(p->removed), p->removed}},
        // Compare: outlines and "+N only in A" tags on the canvas, counts and
        // differing steps in the panels (ImGui's WindowBg of the theme:
        // StyleColorsDark 0.06 grey, StyleColorsLight 0.94 grey).
        {"only-in-A on background", {p->compare_a, p->background}},
        {"only-in-B on background", {p->compare_b, p->background}},
        {"only-in-A on the panel", {p->compare_a, p->light ? rgba(240, 240, 240) : rgba(15, 15, 15)}},
        {"only-in-B on the panel", {p->compare_b, p->light ? rgba(240, 240, 240) : rgba(15, 15, 15)}},
        {"only-in-A tag", {ink_on(p->compare_a), p->compare_a}},
        {"only-in-B tag", {ink_on(p->compare_b), p->compare_b}},
    };
    for (const auto& [what, colors] : pairs) {
      const std::string pair_name = what;
      CAPTURE(pair_name);
      CHECK(contrast_ratio(opaque_over(colors.first, colors.second), colors.second) >= 4.5);
    }
    // Chip text on every owner colour (chips are filled with it).
    for (int i = 0; i < kNumOwnerColors; ++i) {
      CAPTURE(i);
      CHECK(contrast_ratio(p->chip_text, owner_palette_color(i)) >= 4.5);
    }
  }
  // The canvases really follow the theme.
  CHECK(relative_luminance(kLightPalette.background) > 0.9);
  CHECK(relative_luminance(kDarkPalette.background) < 0.05);
  set_light_palette(true);
  CHECK(palette().background == kLightPalette.background);
  set_light_palette(false);
  CHECK(palette().background == kDarkPalette.background);
}

TEST_CASE("owner colours: one per identity, the first Reducers far apart, red kept for alarms") {
  CHECK(owner_color_of("Reducer 1", 7) == owner_color_of("Reducer 1", 99));  // ranks / traces differ in ids
  CHECK(owner_color_of("Reducer 1", 1) != owner_color_of("Reducer 3", 3));
  auto distance = [](uint32_t a, uint32_t b) {
    int d = 0;
    for (int s : {0, 8, 16}) d += std::abs(static_cast<int>((a >> s) & 0xff) - static_cast<int>((b >> s) & 0xff));
    return d;
  };
  for (int i = 1; i <= 4; ++i) {
    for (int j = i + 1; j <= 4; ++j) {
      CAPTURE(i);
      CAPTURE(j);
      CHECK(distance(owner_color_of("Reducer " + std::to_string(i), 0), owner_color_of("Reducer " + std::to_string(j), 0)) >= 120);
    }
  }
  for (int i = 0; i < kNumOwnerColors; ++i) CHECK(distance(owner_palette_color(i), kDarkPalette.alarm) >= 120);
  // The first ten are also away from the stale-fire and removal colours.
  for (int i = 0; i < 10; ++i) {
    CHECK(distance(owner_palette_color(i), kDarkPalette.stale) >= 100);
    CHECK(distance(owner_palette_color(i), kDarkPalette.removed) >= 100);
  }
  // In a model: every rank's "Reducer 2" has the same colour.
  const analysis::Model m = story_model("recovery", trace::DestroyPolicy::kNone);
  std::map<std::string, uint32_t> seen;
  int reducers = 0;
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
    const std::string name = m.owner_name(o);
    if (name.rfind("Reducer", 0) != 0) continue;
    ++reducers;
    auto [it, fresh] = seen.try_emplace(name, owner_color(m, o));
    CHECK(it->second == owner_color(m, o));
  }
  CHECK(reducers >= 4);  // two ranks, two Reducers each
}

TEST_CASE("run story: the failed rank, its rebuild, stale fires and severities of a policy-none recovery") {
  const analysis::Model m = story_model("recovery", trace::DestroyPolicy::kNone);
  const RunStory story(m);
  const auto& failures = m.events_of_kind(EventKind::kFailure);
  REQUIRE(!failures.empty());
  const uint16_t failed = static_cast<uint16_t>(m.event(failures[0]).actor);
  CHECK(story.rank_status(failed, failures[0] - 1) == nullptr);
  const RankIncident* at = story.rank_status(failed, failures[0]);
  REQUIRE(at != nullptr);
  CHECK(at->kind == IncidentKind::kFailed);
  CHECK(at->at == failures[0]);
  CHECK(at->text.find("rank " + std::to_string(failed) + " failed") == 0);
  // Rebuilt at the rank's next Reducer, and that says what it recovered from.
  const RankIncident* end = story.rank_status(failed, m.num_events() - 1);
  REQUIRE(end != nullptr);
  CHECK(end->kind == IncidentKind::kRebuilt);
  REQUIRE(story.failure_before(*end) != nullptr);
  CHECK(m.event(end->at).kind == EventKind::kReducerConstructed);
  // Stale fires: policy none leaves hooks that fire after their Reducer died.
  size_t stale = 0, first_stale = SIZE_MAX;
  for (size_t i = 0; i < m.num_events(); ++i) {
    if (!is_stale_fire(m, i)) continue;
    ++stale;
    first_stale = std::min(first_stale, i);
    CHECK(event_severity(m, i) == Severity::kStaleFire);
    const trace::Event e = m.event(i);
    const auto& hook = m.hooks()[m.find_hook(m.source(i), e.key)];
    CHECK(m.owners()[hook.owner].destroyed_at < i);
  }
  CHECK(stale > 0);
  CHECK(first_stale > failures[0]);
  CHECK(event_severity(m, failures[0]) == Severity::kFailure);
  CHECK(event_severity(m, m.events_of_kind(EventKind::kReducerDestroyed)[0]) == Severity::kDestruction);
  // With by-key nothing fires stale.
  const analysis::Model clean = story_model("recovery", trace::DestroyPolicy::kByKey);
  for (size_t i = 0; i < clean.num_events(); ++i) CHECK_FALSE(is_stale_fire(clean, i));
}

TEST_CASE("layout: ranks are disjoint columns, also with a rank's unused parameter alone in its corner") {
  for (const char* scenario : {"unused-parameter", "recovery", "shared-module"}) {
    CAPTURE(scenario);
    const analysis::Model m = story_model(scenario, trace::DestroyPolicy::kByKey);
    const GraphScene scene(m);
    const FoldedGraph fg = scene.fold(std::vector<uint8_t>(scene.groups().size(), 0));
    LayoutInput in;
    in.graph = fg.graph;
    in.sizes = scene.box_sizes(fg, [](std::string_view s) { return 7.f * static_cast<float>(s.size()); });
    const Layout l = compute_layout(in);
    std::map<int, std::pair<float, float>> column;  // rank -> x range
    for (size_t u = 0; u < l.center.size(); ++u) {
      auto [it, fresh] = column.try_emplace(fg.graph.cluster[u], std::pair(INFINITY, -INFINITY));
      it->second.first = std::min(it->second.first, l.center[u].x - l.size[u].x * 0.5f);
      it->second.second = std::max(it->second.second, l.center[u].x + l.size[u].x * 0.5f);
    }
    REQUIRE(column.size() >= 2);
    for (auto a = column.begin(), b = std::next(column.begin()); b != column.end(); ++a, ++b) {
      CAPTURE(a->first);
      CHECK(a->second.second < b->second.first);  // rank N's right edge before rank N+1's left
    }
  }
}
