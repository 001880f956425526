#pragma once
// What the graph view lays out: the analysis model's Functions folded into
// stable slots (Note [Function slots]), groups that fold into one box, and
// the sizes of the boxes. No ImGui: the caller measures text.

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/model.h"
#include "analysis/module_anchors.h"
#include "analysis/state.h"
#include "render/layout/layout.h"
#include "render/layout/story.h"

namespace hookscope::render {

// Note [Function slots]
// ~~~~~~~~~~~~~~~~~~~~~
// A training loop records a fresh forward graph every step, so a trace
// holds hundreds of copies of one graph, one alive at a time. Laying out
// all of them would move the live graph across the screen at every step;
// laying out only the live one would re-layout at every created Function.
// Instead each Function gets a *signature* that is the same for "the same
// Function in another step": a hash of its rank, name and label (an
// AccumulateGrad's label is its parameter's name and shape) and of its next
// Functions' signatures, in edge order. Functions with one signature share
// a *slot*: the first free one when they are created (two live at once,
// e.g. the two branches of x * x, take two). Slots are the layout's nodes
// and the union of the Functions' edges its edges; the layout is computed
// once per model, and stepping through time shows and hides boxes that do
// not move. Signatures grow from the leaves, so an edge goes from a slot of
// a taller subtree to a shorter one: the slot graph is acyclic.
//
// Groups fold several slots into one box: a module (every slot whose
// parameters share the module path "layers.3.attn" of the parameter
// "layers.3.attn.q.weight", with every prefix of the path a group too) or a
// linear chain (3 or more slots each the only successor of the one before).

constexpr uint32_t kNoGroup = UINT32_MAX;
constexpr uint32_t kNoSlot = UINT32_MAX;

struct SceneNode {
  analysis::FunctionIndex first = analysis::kNoIndex;  // the first Function in the slot
  // (signature, instance) names the slot across models: the same trace
  // loaded again, or grown while recording, gives the same pairs.
  uint64_t signature = 0;
  uint32_t instance = 0;  // k-th slot of its signature
  uint16_t rank = 0;
  uint32_t name = 0;       // model string ids
  uint32_t label = 0;
  uint32_t id_digits = 1;  // of the widest raw id among its Functions
  // Note [Module generations]: the highest generation of the copied
  // parameters' leaves in the slot (their "gen N" is reserved room in the
  // box); UINT32_MAX when it holds none.
  uint32_t gen = UINT32_MAX;
  uint32_t module = kNoGroup;  // innermost module group
  uint32_t chain = kNoGroup;
  // Hook kinds ever attached (bit per trace::HookKind, module hooks on their
  // anchors: Note [Module hook anchors]), and the most owners attached at
  // once on one kind: the badge row is reserved this wide, so boxes keep
  // their size over time.
  uint16_t hook_kinds = 0;
  static_assert(trace::kNumHookKinds <= 16, "SceneNode::hook_kinds has a bit per hook kind");
  uint8_t max_owners = 0;
};

struct SceneGroup {
  enum class Kind : uint8_t { kModule, kChain };
  Kind kind = Kind::kModule;
  uint16_t rank = 0;
  std::string name;               // "layers.3.attn", or the chain's first name
  uint32_t parent = kNoGroup;     // the enclosing module group
  std::vector<uint32_t> nodes;    // slots, ascending
};

// The graph to lay out for a choice of folded groups: one unit per group
// folded (outermost wins) and per slot outside every folded group.
struct FoldedGraph {
  LayoutGraph graph;                     // nodes are units
  std::vector<uint32_t> unit_of_node;    // per slot: its unit, or kNoSlot when not kept
  std::vector<uint32_t> group_of_unit;   // per unit: the group, or kNoGroup
  std::vector<uint32_t> node_of_unit;    // per unit: the slot, or kNoSlot for a group
  std::vector<uint32_t> edge_of_scene_edge;  // per slot edge: layout edge, or kNoSlot inside a unit
};

// Box geometry in world units (pixels at zoom 1); the view draws with the
// same numbers. See Note [Box contents] in graph_draw.cpp.
struct BoxMetrics {
  float line_height = 15.f;  // the font's size
  float pad = 6.f;
  float chip_height = 15.f;
  float chip_pad = 4.f;      // text inset of a chip
  float chip_gap = 3.f;
  float kind_gap = 8.f;      // between kinds in the badge row
  float min_width = 90.f;
  float max_badge_width = 360.f;
  // Note [Compact boxes]: one line per box, the title (a leaf's parameter name)
  // then its chips; chip text as large as the title.
  bool compact = false;
};

// The compact view's metrics from the full ones (sizes: Note [Compact boxes]).
inline BoxMetrics compact_metrics(BoxMetrics m) {
  m.compact = true;
  m.pad = 3.f;
  m.chip_height = m.line_height + 2.f;
  m.chip_pad = 3.f;
  m.chip_gap = 2.f;
  m.kind_gap = 4.f;
  m.min_width = 40.f;
  return m;
}

// The layout's gaps for compact boxes (Note [Compact boxes]): a backward
// graph's depth, and two rebuilt ranks side by side, fit 1280x800 at 10 px.
inline LayoutOptions compact_layout_options(LayoutOptions o) {
  o.layer_gap = 16.f;
  o.node_gap = 8.f;
  o.cluster_gap = 16.f;  // the ranks' captions above say where one ends
  o.stack_leaves = true;  // Note [Stacked leaves]
  o.center_pull = 16.f;   // Note [Narrow columns]
  return o;
}

class GraphScene {
 public:
  explicit GraphScene(const analysis::Model& model);

  const analysis::Model& model() const { return *model_; }
  const std::vector<SceneNode>& nodes() const { return nodes_; }
  const std::vector<std::pair<uint32_t, uint32_t>>& edges() const { return edges_; }
  const std::vector<SceneGroup>& groups() const { return groups_; }
  uint32_t slot_of(analysis::FunctionIndex function) const { return slot_of_[function]; }
  // Per model edge, the slot edge it belongs to.
  uint32_t edge_of(uint32_t model_edge) const { return edge_of_[model_edge]; }
  // "R1" for "Reducer 1", "gc" for "grad clipper": the text on an owner's
  // badges; "?" for kNoIndex, a hook whose owner the trace never names.
  const std::string& owner_tag(analysis::OwnerIndex owner) const {
    static const std::string unknown = "?";
    return owner < owner_tags_.size() ? owner_tags_[owner] : unknown;
  }
  // Note [Owner colours]: one colour per owner identity, across ranks and traces.
  uint32_t owner_color(analysis::OwnerIndex owner) const {
    return owner < owner_colors_.size() ? owner_colors_[owner] : 0xff808080u;
  }

  // folded: per group. `keep` (per slot, may be null): only the slots it
  // marks become units (Note [Compact boxes]: the live ones); the others get
  // unit kNoSlot, and their edges none. A slot past keep's end is kept.
  const Generations& generations() const { return generations_; }
  // Where module hooks show (Note [Module hook anchors]): sorted by Function.
  const std::vector<analysis::ModuleHookAnchor>& module_anchors() const { return module_anchors_; }
  // Calls fn(hook) for each hook of `attached` (a State's module_hooks)
  // anchored on `function`: the module hooks its box shows.
  template <typename Fn>
  void for_module_hooks_on(analysis::FunctionIndex function, const std::vector<analysis::HookAt>& attached,
                           Fn&& fn) const {
    auto it = std::lower_bound(module_anchors_.begin(), module_anchors_.end(), function,
                               [](const analysis::ModuleHookAnchor& a, analysis::FunctionIndex f) { return a.function < f; });
    for (; it != module_anchors_.end() && it->function == function; ++it) {
      for (const analysis::HookAt& h : attached) {
        if (h.hook == it->hook) fn(h);
      }
    }
  }
  // "gen 1" on a copied parameter's leaf `function` at event `at` (Note
  // [Module generations]), else "".
  std::string gen_label(analysis::FunctionIndex function, analysis::EventIndex at) const {
    return generations_.function_label(function, at);
  }
  // The widest "gen N" the slot ever shows (box sizes), else "".
  std::string slot_gen_label(uint32_t slot) const;

  FoldedGraph fold(const std::vector<uint8_t>& folded, const std::vector<uint8_t>* keep = nullptr) const;

  // Text the box of `unit` shows: title (name), label (parameter and shape,
  // or what a group holds).
  // `function` (the unit's live Function) at event `at` adds a copied
  // parameter's "gen N"; without them (box sizes) the slot's widest one.
  std::string unit_title(const FoldedGraph& folded, uint32_t unit) const;
  std::string unit_label(const FoldedGraph& folded, uint32_t unit, analysis::FunctionIndex function = analysis::kNoIndex,
                         analysis::EventIndex at = analysis::kNever) const;
  // The one line of a compact box: a leaf's parameter (name, no shape), else the title.
  std::string unit_compact_title(const FoldedGraph& folded, uint32_t unit,
                                 analysis::FunctionIndex function = analysis::kNoIndex,
                                 analysis::EventIndex at = analysis::kNever) const;

  using MeasureText = std::function<float(std::string_view)>;
  // Box sizes for the layout, text measured by `measure` at metrics.line_height.
  std::vector<Vec2> box_sizes(const FoldedGraph& folded, const MeasureText& measure,
                              const BoxMetrics& metrics = {}) const;

 private:
  void assign_slots();
  void collect_hooks();
  void find_modules();
  void find_chains();

  const analysis::Model* model_;
  std::vector<SceneNode> nodes_;
  std::vector<std::pair<uint32_t, uint32_t>> edges_;  // unique, sorted
  std::vector<SceneGroup> groups_;
  std::vector<uint32_t> slot_of_;
  std::vector<uint32_t> edge_of_;
  std::vector<std::string> owner_tags_;
  std::vector<uint32_t> owner_colors_;
  Generations generations_;
  std::vector<analysis::ModuleHookAnchor> module_anchors_;
};

// Note [Owner colours], for panels without a scene.
uint32_t owner_color(const analysis::Model& model, analysis::OwnerIndex owner);

// Note [Numbering families] (graph_families.cpp): per entry of `signatures`
// the number of its value, 0, 1, ... in order of first appearance.
std::vector<uint32_t> number_families(const std::vector<uint64_t>& signatures);

// The short name of a hook kind on a badge: "post", "pre", "tensor-pre", ...
std::string_view hook_kind_tag(trace::HookKind kind);

// Note [Untagged post hooks]: the tag a box's badge row writes before a
// kind's chips; "" for post hooks in compact boxes.
std::string_view box_kind_tag(const BoxMetrics& m, trace::HookKind kind);

}  // namespace hookscope::render
