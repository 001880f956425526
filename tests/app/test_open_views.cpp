// Note [One layout at open] for the app's other graph views: the Compare
// panel's two graphs and the whole-graph export each lay out once, the
// layout of the event they show first, on a graph too big for full boxes.
#if HOOKSCOPE_APP_UI
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "analysis/synthetic.h"
#include "app.h"
#include "testing/headless_app.h"
#include "render/sample_graphs.h"
#include "testing/test_util.h"
#include "testing/write_trace.h"

using namespace hookscope;

namespace {

std::filesystem::path scratch_dir() { return testing::scratch_config_dir("hookscope_app_open_views"); }

class HeadlessUi : public testing::HeadlessApp {
 public:
  explicit HeadlessUi(app::Args args) : HeadlessApp((scratch_dir(), std::move(args))) {}
};

std::string sample(const std::string& name) { return std::string(HOOKSCOPE_SAMPLES_DIR) + "/" + name + ".hstrace"; }

constexpr int kBigFunctions = 24000;

// A transformer-like graph built in one go, every Function live at its
// end, more of them than a view with no frame yet (its canvas taken as four
// 4K screens) can show in readable full boxes: a view that knows that event
// opens compact. A Reducer constructed last makes the end a story point, so
// the Compare panel's B follows A there.
const std::string& big_trace() {
  static const std::string path = [] {
    const render::SampleGraph g = render::make_transformer_graph(kBigFunctions);
    analysis::TraceBuilder b;
    std::vector<uint64_t> id(static_cast<size_t>(g.graph.num_nodes));
    for (size_t v = 0; v < id.size(); ++v) {
      id[v] = g.names[v] == "AccumulateGrad" ? b.accumulator(g.labels[v]) : b.function(g.names[v]);
    }
    for (auto [from, to] : g.graph.edges) b.edge(id[static_cast<size_t>(from)], id[static_cast<size_t>(to)]);
    b.reducer_constructed(b.owner(trace::OwnerKind::kReducer, "Reducer 1"), 1, 1);
    const std::string p = (scratch_dir() / "big.hstrace").string();
    testing::write_trace_file(b.take(), p, "big");
    return p;
  }();
  return path;
}

// Frames until `view` has landed what it laid out and asks for nothing more.
template <class Frame>
void settle(const render::GraphView& view, Frame frame) {
  CHECK(testing::frames_until([&] { return view.layout_ready() && !view.layout_pending(); }, frame, 120));
  for (int i = 0; i < 3; ++i) frame();
}

}  // namespace

TEST_CASE("app compare: each side, opened on a graph too big for full boxes, lays out once, compact, at its event") {
  app::Args args = testing::headless_args({big_trace()});
  args.compare = {big_trace()};
  args.panel = "compare";
  HeadlessUi ui(args);
  app::App& a = ui.app();
  REQUIRE(testing::frames_until([&] { return a.compare_state().view_b != nullptr; }, [&] { ui.frame(); }, 120));
  const app::CompareGraphs& g = a.compare_state();
  const size_t end = a.session().model()->num_events() - 1;
  REQUIRE(a.session().current() == end);  // A opens at its end, B follows to its own
  CHECK(g.point.label == "after constructed 1");
  CHECK(g.cursor_b->index() == end);
  for (const render::GraphView* v : {g.view_a.get(), g.view_b.get()}) {
    settle(*v, [&] { ui.frame(); });
    CHECK(v->compact());
    CHECK(v->layouts_started() == 1);
    CHECK(v->stats().layout_units == v->stats().live_units);
    CHECK(v->stats().live_units > 0);
  }
}

TEST_CASE("app export: the whole graph of a compact view lays out once, the live set at the current event") {
  for (const bool big : {true, false}) {  // compact by the fit; by the user's choice
    CAPTURE(big);
    HeadlessUi ui(testing::headless_args({big ? big_trace() : sample("autograd-demo")}));
    app::App& a = ui.app();
    REQUIRE(a.session().model() != nullptr);
    if (!big) a.graph().set_compact(true);
    REQUIRE(testing::frames_until([&] { return a.settled() && a.graph().layout_ready() && !a.graph().layout_pending(); },
                                  [&] { ui.frame(); }, 120));
    REQUIRE(a.graph().compact());
    a.request_export({app::ExportJob::kGraphPng, (scratch_dir() / "whole.png").string(), true});
    REQUIRE(testing::frames_until([&] { return a.export_view() != nullptr; }, [&] { ui.frame(); }, 120));
    // The export's view goes once its PNG is written: read it between frames
    // while it is there, never through a reference kept across a frame.
    bool landed = false, compact = false;
    size_t layouts = 0, layout_units = 0, live_units = 0;
    auto look = [&] {
      const render::GraphView* v = a.export_view();
      if (v == nullptr) return true;  // written and gone
      if (v->layout_ready() && !v->layout_pending() && v->stats().live_units > 0) {
        landed = true;
        compact = v->compact();
        layouts = v->layouts_started();
        layout_units = v->stats().layout_units;
        live_units = v->stats().live_units;
      }
      return false;
    };
    // Written and gone: an export that never settles (a 16-px-wide graph
    // asked for a 64-px frame again every frame) kept its view forever.
    CHECK(testing::frames_until(look, [&] { ui.frame(); }, 60));
    REQUIRE(landed);
    CHECK(compact);
    CHECK(layouts == 1);
    CHECK(layout_units == live_units);
  }
}

#endif  // HOOKSCOPE_APP_UI
