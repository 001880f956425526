// The graph scene (render/layout/graph_scene.h) on real traces: slots, folding,
// and the layout of what the scenarios record.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <tuple>
#include <vector>

#include "analysis/model.h"
#include "analysis/state.h"
#include "render/layout/graph_scene.h"
#include "render/layout/layout.h"
#include "render/sample_graphs.h"
#include "scenarios/autograd_demo.h"
#include "scenarios/ddp_scenarios.h"
#include "testing/test_util.h"
#include "trace/recorder.h"
#include "trace/strings.h"

using namespace hookscope;
using namespace hookscope::render;

namespace {

trace::TraceData record(const std::function<void()>& run) { return hookscope::testing::record_trace(run); }

analysis::Model ddp_model(const std::string& name, trace::DestroyPolicy policy) {
  return analysis::Model(record([&] {
    scenarios::DdpScenarioOptions o;
    o.name = name;
    o.policy = policy;
    o.steps = 6;
    scenarios::run_ddp_scenario(o);
  }));
}

float measure(std::string_view s) { return 7.f * static_cast<float>(s.size()); }

bool overlap(const Layout& l, size_t a, size_t b) {
  return std::abs(l.center[a].x - l.center[b].x) < 0.5f * (l.size[a].x + l.size[b].x) &&
         std::abs(l.center[a].y - l.center[b].y) < 0.5f * (l.size[a].y + l.size[b].y);
}

}  // namespace

TEST_CASE("scene: the Functions of every step share slots, two live ones never share a slot") {
  const analysis::Model m = ddp_model("recovery", trace::DestroyPolicy::kNone);
  const GraphScene scene(m);
  // Six steps on two ranks, rebuilt once: far fewer slots than Functions.
  CHECK(scene.nodes().size() * 3 < m.functions().size());
  analysis::Cursor cursor(m);
  size_t checked = 0;
  do {
    std::set<uint32_t> slots;
    for (const auto& f : cursor.state().functions) {
      CHECK(slots.insert(scene.slot_of(f.function)).second);
      // A slot holds Functions of one name and rank.
      const SceneNode& node = scene.nodes()[scene.slot_of(f.function)];
      CHECK(node.name == m.functions()[f.function].name);
      CHECK(node.rank == m.functions()[f.function].rank);
    }
    ++checked;
  } while (cursor.next());
  CHECK(checked == m.num_events());
}

namespace {

// Note [Numbering families]: the slots are those of the rule, worked out
// here with a map: in event order a created Function takes the first free
// instance of its signature, a released one frees it; a slot is a
// (signature, instance) of Functions of one name, label and rank.
void check_slots_follow_the_rule(const analysis::Model& m, const GraphScene& scene) {
  std::vector<std::tuple<analysis::EventIndex, int, analysis::FunctionIndex>> changes;
  for (analysis::FunctionIndex f = 0; f < m.functions().size(); ++f) {
    changes.emplace_back(m.functions()[f].created_at, 0, f);
    if (m.functions()[f].released_at != analysis::kNever) changes.emplace_back(m.functions()[f].released_at, 1, f);
  }
  std::sort(changes.begin(), changes.end());
  std::map<uint64_t, std::set<uint32_t>> taken;  // per signature, its instances in use
  std::vector<uint32_t> instance(m.functions().size(), 0);
  std::set<std::pair<uint64_t, uint32_t>> slots;
  for (const auto& [at, release, f] : changes) {
    const uint64_t sig = scene.nodes()[scene.slot_of(f)].signature;
    std::set<uint32_t>& used = taken[sig];
    if (release) {
      used.erase(instance[f]);
      continue;
    }
    uint32_t k = 0;
    while (used.count(k)) ++k;
    used.insert(k);
    instance[f] = k;
    const SceneNode& node = scene.nodes()[scene.slot_of(f)];
    CHECK(node.instance == k);
    CHECK(std::tie(node.name, node.label, node.rank) ==
          std::tie(m.functions()[f].name, m.functions()[f].label, m.functions()[f].rank));
    slots.insert({sig, k});
  }
  CHECK(slots.size() == scene.nodes().size());
}

}  // namespace

TEST_CASE("scene: families are numbered in order of first appearance, however many there are") {
  CHECK(number_families({}).empty());
  CHECK(number_families({7, 7, 0, 7, 0, 5}) == std::vector<uint32_t>{0, 0, 1, 0, 1, 2});
  // Past the table's first size and several doublings; signatures that
  // share their high bits (the same home in a small table) and zero.
  std::mt19937_64 rng(3);
  for (const size_t distinct : {size_t{1}, size_t{511}, size_t{512}, size_t{3000}, size_t{70000}}) {
    CAPTURE(distinct);
    std::vector<uint64_t> pool(distinct);
    for (size_t k = 0; k < distinct; ++k) pool[k] = k % 3 == 0 ? k : k % 3 == 1 ? rng() : (rng() & 0xffff) << 48;
    std::vector<uint64_t> signatures;
    for (size_t k = 0; k < 3 * distinct; ++k) signatures.push_back(pool[rng() % distinct]);
    std::map<uint64_t, uint32_t> seen;
    std::vector<uint32_t> expected;
    for (uint64_t s : signatures) expected.push_back(seen.try_emplace(s, static_cast<uint32_t>(seen.size())).first->second);
    CHECK(number_families(signatures) == expected);
  }
}

TEST_CASE("scene: slots follow the first-free-instance rule, with few signatures and with thousands") {
  const analysis::Model steps = ddp_model("recovery", trace::DestroyPolicy::kNone);  // every step again
  const GraphScene few(steps);
  check_slots_follow_the_rule(steps, few);
  std::set<uint64_t> signatures;
  for (const SceneNode& n : few.nodes()) signatures.insert(n.signature);
  CHECK(signatures.size() < few.nodes().size());  // some signature has several instances
  const analysis::Model big(make_sample_trace(make_transformer_graph(6000)));
  const GraphScene many(big);
  check_slots_follow_the_rule(big, many);
  signatures.clear();
  for (const SceneNode& n : many.nodes()) signatures.insert(n.signature);
  CHECK(signatures.size() > 4096);  // the numbering's table grew several times
}

TEST_CASE("scene: the scenarios' graphs lay out with no overlap and every edge going down") {
  std::vector<analysis::Model> models;
  models.push_back(ddp_model("recovery", trace::DestroyPolicy::kNone));
  models.push_back(ddp_model("shared-module", trace::DestroyPolicy::kByKey));
  models.push_back(analysis::Model(record([] { scenarios::run_autograd_demo({3, 0}); })));
  for (const analysis::Model& m : models) {
    const GraphScene scene(m);
    const FoldedGraph fg = scene.fold({});
    LayoutInput in;
    in.graph = fg.graph;
    in.sizes = scene.box_sizes(fg, measure);
    const Layout l = compute_layout(in);
    REQUIRE(l.center.size() == scene.nodes().size());
    for (size_t a = 0; a < l.center.size(); ++a) {
      for (size_t b = a + 1; b < l.center.size(); ++b) CHECK(!overlap(l, a, b));
    }
    for (auto [a, b] : fg.graph.edges) CHECK(l.layer[a] < l.layer[b]);
    // Every model edge maps to a routed layout edge.
    for (size_t e = 0; e < m.edges().size(); ++e) {
      const uint32_t le = fg.edge_of_scene_edge[scene.edge_of(static_cast<uint32_t>(e))];
      REQUIRE(le != kNoSlot);
      CHECK(l.route_begin[le + 1] - l.route_begin[le] >= 4);
    }
    // The same input lays out the same way.
    const Layout again = compute_layout(in);
    CHECK(std::equal(l.center.begin(), l.center.end(), again.center.begin(),
                     [](Vec2 p, Vec2 q) { return p.x == q.x && p.y == q.y; }));
  }
}

TEST_CASE("scene: ranks are separate components, modules group a parameter with its readers") {
  const analysis::Model m = ddp_model("recovery", trace::DestroyPolicy::kByKey);
  const GraphScene scene(m);
  for (auto [a, b] : scene.edges()) CHECK(scene.nodes()[a].rank == scene.nodes()[b].rank);
  // Module "2" of rank 0 holds 2.weight's and 2.bias's AccumulateGrad and the
  // AddmmBackward0 that reads them.
  const auto it = std::find_if(scene.groups().begin(), scene.groups().end(), [](const SceneGroup& g) {
    return g.kind == SceneGroup::Kind::kModule && g.rank == 0 && g.name == "2";
  });
  REQUIRE(it != scene.groups().end());
  std::multiset<std::string> names;
  for (uint32_t v : it->nodes) names.insert(m.str(scene.nodes()[v].name));
  CHECK(names.count("AccumulateGrad") >= 2);
  CHECK(names.count("AddmmBackward0") == 1);
  for (analysis::OwnerIndex o = 0; o < m.owners().size(); ++o) {
    const std::string name = m.owner_name(o);
    if (name.rfind("Reducer ", 0) == 0) CHECK(scene.owner_tag(o) == "R" + name.substr(8));
  }
}

TEST_CASE("scene: folding a group makes one unit of it - edges inside it vanish") {
  const analysis::Model m = ddp_model("recovery", trace::DestroyPolicy::kByKey);
  const GraphScene scene(m);
  REQUIRE(!scene.groups().empty());
  for (uint32_t g = 0; g < scene.groups().size(); ++g) {
    std::vector<uint8_t> folded(scene.groups().size(), 0);
    folded[g] = 1;
    const FoldedGraph fg = scene.fold(folded);
    const auto& members = scene.groups()[g].nodes;
    CHECK(fg.graph.num_nodes == static_cast<int>(scene.nodes().size() - members.size() + 1));
    const uint32_t unit = fg.unit_of_node[members[0]];
    CHECK(fg.group_of_unit[unit] == g);
    for (uint32_t v : members) CHECK(fg.unit_of_node[v] == unit);
    for (auto [a, b] : fg.graph.edges) CHECK(a != b);
    CHECK(scene.unit_label(fg, unit).find(std::to_string(members.size()) + " Functions") == 0);
  }
}
