// The compact view's scene (Note [Compact boxes]: live Functions only) and
// its packing into the canvas's shape (Note [Packed ranks]), headless on the
// recovery scenario.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/layout/graph_pack.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"

using namespace hookscope;
using namespace hookscope::render;

namespace {

analysis::Model recovery_model() {
  return analysis::Model(hookscope::testing::record_trace([] {
    scenarios::DdpScenarioOptions o;
    o.name = "recovery";
    o.policy = trace::DestroyPolicy::kNone;
    o.recoveries = 2;
    scenarios::run_ddp_scenario(o);
  }));
}

float measure(std::string_view s) { return 7.f * static_cast<float>(s.size()); }

struct Packed {
  FoldedGraph folded;
  Layout before, after;
  bool moved = false;
};

// The compact layout of the slots live at `at`, packed for a 16:10 canvas
// (grouped by module generation as the graph view packs it).
Packed compact_at(const GraphScene& scene, const analysis::Model& m, size_t at) {
  analysis::Cursor cursor(m);
  cursor.seek(at);
  std::vector<uint8_t> keep(scene.nodes().size(), 0);
  for (const auto& f : cursor.state().functions) keep[scene.slot_of(f.function)] = 1;
  Packed p;
  p.folded = scene.fold({}, &keep);
  LayoutInput input;
  input.graph = p.folded.graph;
  input.sizes = scene.box_sizes(p.folded, measure, compact_metrics({}));
  p.before = compute_layout(input, compact_layout_options({}));
  p.after = p.before;
  PackOptions o;
  o.generation = unit_generations(scene, p.folded, static_cast<analysis::EventIndex>(at));
  p.moved = pack_layout(p.after, p.folded.graph, o);
  return p;
}

bool overlap(const Layout& l, size_t a, size_t b) {
  return std::abs(l.center[a].x - l.center[b].x) < 0.5f * (l.size[a].x + l.size[b].x) &&
         std::abs(l.center[a].y - l.center[b].y) < 0.5f * (l.size[a].y + l.size[b].y);
}

float fit_scale(const Layout& l, float aspect) {
  return std::min(aspect / (l.max.x - l.min.x), 1.f / (l.max.y - l.min.y));
}

}  // namespace

TEST_CASE("compact scene: only the kept (live) slots become units, and only their edges") {
  const analysis::Model m = recovery_model();
  const GraphScene scene(m);
  analysis::Cursor cursor(m);
  cursor.seek(m.num_events() / 3);
  std::vector<uint8_t> keep(scene.nodes().size(), 0);
  size_t live = 0;
  for (const auto& f : cursor.state().functions) live += !keep[scene.slot_of(f.function)]++;
  REQUIRE(live > 0);
  REQUIRE(live < scene.nodes().size());  // released Functions' slots exist and are dropped
  const FoldedGraph fg = scene.fold({}, &keep);
  CHECK(fg.group_of_unit.size() == live);
  for (uint32_t v = 0; v < scene.nodes().size(); ++v) CHECK((fg.unit_of_node[v] != kNoSlot) == (keep[v] != 0));
  for (auto [a, b] : fg.graph.edges) {
    CHECK(keep[fg.node_of_unit[a]]);
    CHECK(keep[fg.node_of_unit[b]]);
  }
  // Without `keep`, every slot.
  CHECK(scene.fold({}).group_of_unit.size() == scene.nodes().size());
}

TEST_CASE("packed ranks: the recovery's leaked parameters fill the canvas's shape, nothing overlaps, ranks stay apart") {
  const analysis::Model m = recovery_model();
  const GraphScene scene(m);
  const Packed p = compact_at(scene, m, m.num_events() - 1);
  const Layout& l = p.after;
  const size_t n = l.center.size();
  REQUIRE(n >= 12);  // the old and new copies of the parameters, with their leaked hooks
  CHECK(p.moved);
  // Far closer to the canvas's shape: a larger fit zoom.
  CHECK(fit_scale(p.after, 1.6f) > 1.05f * fit_scale(p.before, 1.6f));
  for (size_t a = 0; a < n; ++a) {
    for (size_t b = a + 1; b < n; ++b) CHECK_FALSE(overlap(l, a, b));
  }
  // Rank columns disjoint.
  std::vector<std::pair<float, float>> cols(2, {INFINITY, -INFINITY});
  for (size_t u = 0; u < n; ++u) {
    auto& c = cols.at(static_cast<size_t>(p.folded.graph.cluster[u]));
    c = {std::min(c.first, l.center[u].x - l.size[u].x * 0.5f), std::max(c.second, l.center[u].x + l.size[u].x * 0.5f)};
  }
  CHECK(cols[0].second < cols[1].first);
  // Bands: disjoint, sorted, each box inside its own, nodes by x (culling and hit tests rely on it).
  REQUIRE(l.layer_begin.size() == static_cast<size_t>(l.num_layers) + 1);
  for (int k = 0; k + 1 < l.num_layers; ++k) CHECK(l.layer_top[k] + l.layer_height[k] <= l.layer_top[k + 1]);
  for (int k = 0; k < l.num_layers; ++k) {
    for (uint32_t i = l.layer_begin[k]; i < l.layer_begin[k + 1]; ++i) {
      const int u = l.layer_nodes[i];
      CHECK(l.layer[u] == k);
      CHECK(l.center[u].y - l.size[u].y * 0.5f >= l.layer_top[k] - 0.01f);
      CHECK(l.center[u].y + l.size[u].y * 0.5f <= l.layer_top[k] + l.layer_height[k] + 0.01f);
      if (i > l.layer_begin[k]) CHECK(l.center[l.layer_nodes[i - 1]].x <= l.center[u].x);
    }
  }
  CHECK(l.layer_begin.back() == n);
}

TEST_CASE("packed ranks: a component moves whole, its edges with it") {
  const analysis::Model m = recovery_model();
  const GraphScene scene(m);
  // Mid-backward on the first step: interior Functions with edges, and leaves.
  size_t at = 0;
  for (size_t i = 0; i < m.num_events() && !at; ++i) at = m.event(i).kind == trace::EventKind::kHookFired ? i : 0;
  REQUIRE(at > 0);
  const Packed p = compact_at(scene, m, at);
  REQUIRE_FALSE(p.folded.graph.edges.empty());
  for (size_t e = 0; e < p.folded.graph.edges.size(); ++e) {
    const auto [a, b] = p.folded.graph.edges[e];
    const Vec2 da{p.after.center[a].x - p.before.center[a].x, p.after.center[a].y - p.before.center[a].y};
    const Vec2 db{p.after.center[b].x - p.before.center[b].x, p.after.center[b].y - p.before.center[b].y};
    // One offset for all, up to float rounding at coordinates of a few
    // hundred (a shift of ~0 came out as 1.5e-5 on one box and 0 on another).
    const auto same = [](float d) { return doctest::Approx(d).epsilon(1e-4).scale(1000.0); };
    CHECK(da.x == same(db.x));
    CHECK(da.y == same(db.y));
    for (uint32_t i = p.after.route_begin[e]; i < p.after.route_begin[e + 1]; ++i) {
      CHECK(p.after.route[i].x - p.before.route[i].x == same(da.x));
      CHECK(p.after.route[i].y - p.before.route[i].y == same(da.y));
    }
  }
}

TEST_CASE("module generations: a replaced rank's parameter copies are told apart, a survivor's are not") {
  const analysis::Model m = recovery_model();
  const Generations gens(m);
  REQUIRE(gens.any());
  size_t copied_r0 = 0, copied_r1 = 0;
  analysis::EventIndex first_new = analysis::kNever;  // the first leaf of a later generation on rank 1
  for (analysis::FunctionIndex f = 0; f < m.functions().size(); ++f) {
    const auto& info = m.functions()[f];
    if (!info.is_leaf_accumulator()) {
      CHECK_FALSE(gens.copied(f));
      continue;
    }
    (info.rank == 0 ? copied_r0 : copied_r1) += gens.copied(f);
    if (info.rank == 1 && gens.of_function(f) > 0) first_new = std::min(first_new, info.created_at);
  }
  CHECK(copied_r0 == 0);   // rank 0 survived: one module all along
  CHECK(copied_r1 >= 18);  // rank 1: six parameters in three generations
  for (analysis::FunctionIndex f = 0; f < m.functions().size(); ++f) {
    if (!gens.copied(f)) continue;
    CHECK(gens.label_from(f) == first_new);
    CHECK(gens.function_label(f, first_new - 1).empty());
    CHECK(gens.function_label(f, first_new) == "gen " + std::to_string(gens.of_function(f)));
  }
  // Owners: a rank's k-th Reducer is the DDP of generation k; it says so
  // only on the rank that holds copies (rank 1), from its first new copy on.
  for (uint16_t rank : {0, 1}) {
    std::vector<std::pair<analysis::EventIndex, analysis::OwnerIndex>> reducers;
    for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
      if (m.owners()[o].kind == trace::OwnerKind::kReducer && m.owners()[o].rank == rank) {
        reducers.push_back({m.owners()[o].created_at, o});
      }
    }
    std::sort(reducers.begin(), reducers.end());
    REQUIRE(reducers.size() == 3);
    for (size_t k = 0; k < reducers.size(); ++k) {
      const analysis::OwnerIndex o = reducers[k].second;
      CHECK(gens.owner_label(o) == (rank == 1 ? "gen " + std::to_string(k) : std::string()));
      CHECK(gens.owner_label(o, first_new - 1).empty());
    }
  }
  // Copies live at once take their own slots (old copies hold leaked hooks),
  // each with room for its label.
  const GraphScene scene(m);
  size_t labelled = 0;
  for (uint32_t v = 0; v < scene.nodes().size(); ++v) labelled += !scene.slot_gen_label(v).empty();
  CHECK(labelled >= 18);
}

TEST_CASE("packed ranks: a rebuilt rank's boxes stand in blocks by generation, older above newer") {
  const analysis::Model m = recovery_model();
  const GraphScene scene(m);
  const Generations& gens = scene.generations();
  REQUIRE(gens.any());
  const Packed p = compact_at(scene, m, m.num_events() - 1);
  REQUIRE(p.moved);
  const Layout& l = p.after;
  const std::vector<uint32_t> gen = unit_generations(scene, p.folded, static_cast<analysis::EventIndex>(m.num_events() - 1));
  REQUIRE(gen.size() == l.center.size());
  // The units' generations are their live Functions' (rank 1: 0, 1 and 2; rank 0: 0).
  analysis::Cursor cursor(m);
  cursor.seek(m.num_events() - 1);
  std::vector<uint32_t> seen_r1;
  for (const auto& f : cursor.state().functions) {
    const uint32_t u = p.folded.unit_of_node[scene.slot_of(f.function)];
    REQUIRE(u != kNoSlot);
    CHECK(gen[u] == gens.of_function(f.function));
    if (m.functions()[f.function].rank == 1 && std::find(seen_r1.begin(), seen_r1.end(), gen[u]) == seen_r1.end()) {
      seen_r1.push_back(gen[u]);
    }
  }
  CHECK(seen_r1.size() == 3);
  // Per rank, every box of an older generation lies wholly above every box of
  // a newer one, or wholly left of every one (generations as shelves or as blocks).
  size_t pairs = 0, above = 0, left = 0;
  for (size_t a = 0; a < l.center.size(); ++a) {
    for (size_t b = 0; b < l.center.size(); ++b) {
      if (p.folded.graph.cluster[a] != p.folded.graph.cluster[b] || gen[a] >= gen[b]) continue;
      ++pairs;
      above += l.center[a].y + l.size[a].y * 0.5f <= l.center[b].y - l.size[b].y * 0.5f;
      left += l.center[a].x + l.size[a].x * 0.5f <= l.center[b].x - l.size[b].x * 0.5f;
    }
  }
  CHECK(pairs >= 6 * 6 * 3);  // rank 1: six parameters in three generations, each pair of generations
  CHECK_MESSAGE((above == pairs || left == pairs), pairs, " pairs, ", above, " above, ", left, " left");
  // Each generation's block lists the parameters in one order (as rank 0's).
  for (uint32_t g = 0; g < 3; ++g) {
    std::vector<std::pair<Vec2, std::string>> boxes;
    for (const auto& f : cursor.state().functions) {
      if (m.functions()[f.function].rank != 1 || gens.of_function(f.function) != g) continue;
      const uint32_t u = p.folded.unit_of_node[scene.slot_of(f.function)];
      boxes.push_back({l.center[u], m.str(m.functions()[f.function].label)});
    }
    std::sort(boxes.begin(), boxes.end(), [](const auto& x, const auto& y) {
      return std::make_pair(x.first.y, x.first.x) < std::make_pair(y.first.y, y.first.x);
    });
    REQUIRE(boxes.size() == 6);
    CHECK(boxes.front().second.rfind("0.weight", 0) == 0);
    CHECK(boxes.back().second.rfind("4.bias", 0) == 0);
  }
}

// A rank whose graph is too tall to fit at readable text (a transformer's
// backward mid-way: one long chain and loose pieces) is fitted by width
// (Note [Fit shows every rank]): with max_width the pieces go on shelves
// under the chain instead of a row beside it that fits the canvas's shape.
TEST_CASE("packed ranks: with max_width a tall chain's loose pieces stack below it, the whole that narrow") {
  LayoutInput in;
  constexpr int kChain = 40, kPieces = 8;
  in.graph.num_nodes = kChain + 2 * kPieces;
  for (int v = 0; v + 1 < kChain; ++v) in.graph.edges.push_back({v, v + 1});
  for (int p = 0; p < kPieces; ++p) in.graph.edges.push_back({kChain + 2 * p, kChain + 2 * p + 1});
  in.graph.cluster.assign(static_cast<size_t>(in.graph.num_nodes), 0);
  in.sizes.assign(static_cast<size_t>(in.graph.num_nodes), Vec2{150.f, 23.f});
  const Layout laid = compute_layout(in, compact_layout_options({}));
  Layout wide = laid, narrow = laid;
  PackOptions o;
  o.aspect = 2.5f;  // a 1280x800 window's graph panel
  pack_layout(wide, in.graph, o);
  o.max_width = 500.f;
  CHECK(pack_layout(narrow, in.graph, o));
  INFO("laid out " << laid.max.x - laid.min.x << " wide, packed " << wide.max.x - wide.min.x << ", with max_width "
                   << narrow.max.x - narrow.min.x);
  CHECK(wide.max.x - wide.min.x > 500.f);  // the canvas's shape alone: a row
  CHECK(narrow.max.x - narrow.min.x <= 500.f);
  // Nothing overlaps.
  for (size_t a = 0; a < narrow.center.size(); ++a) {
    for (size_t b = a + 1; b < narrow.center.size(); ++b) {
      CHECK((std::abs(narrow.center[a].x - narrow.center[b].x) >= 0.5f * (narrow.size[a].x + narrow.size[b].x) ||
             std::abs(narrow.center[a].y - narrow.center[b].y) >= 0.5f * (narrow.size[a].y + narrow.size[b].y)));
    }
  }
}
