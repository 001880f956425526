// Slots, groups and box sizes (Note [Function slots]).

#include "render/layout/graph_scene.h"

#include "render/layout/colors.h"

#include <algorithm>
#include <functional>
#include <cctype>
#include <map>
#include <numeric>
#include <unordered_map>

namespace hookscope::render {

using analysis::FunctionIndex;
using analysis::kNoIndex;

namespace {

uint64_t mix(uint64_t h, uint64_t v) {  // FNV-1a over the 8 bytes of v
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t hash_text(std::string_view s) {
  uint64_t h = 14695981039346656037ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ull;
  }
  return h;
}

uint32_t digits(uint64_t v) {
  uint32_t d = 1;
  while (v >= 10) {
    v /= 10;
    ++d;
  }
  return d;
}

std::string make_owner_tag(const std::string& label, trace::OwnerKind kind) {
  std::vector<std::string> words;
  std::string word;
  for (char c : label + " ") {
    if (std::isalnum(static_cast<unsigned char>(c))) {
      word += c;
    } else if (!word.empty()) {
      words.push_back(word);
      word.clear();
    }
  }
  if (words.empty()) return kind == trace::OwnerKind::kReducer ? "R" : "?";
  const std::string& last = words.back();
  if (words.size() > 1 && std::all_of(last.begin(), last.end(), ::isdigit)) {
    return std::string(1, static_cast<char>(std::toupper(words[0][0]))) + last;
  }
  if (words.size() > 1) return std::string{words[0][0], words[1][0]};
  return words[0].substr(0, 2);
}

}  // namespace

std::string_view hook_kind_tag(trace::HookKind kind) {
  switch (kind) {
    case trace::HookKind::kTensorPre: return "tensor-pre";
    case trace::HookKind::kRetainGrad: return "retain-grad";
    case trace::HookKind::kPre: return "pre";
    case trace::HookKind::kPost: return "post";
    case trace::HookKind::kPostAccumulate: return "post-acc";
    case trace::HookKind::kModuleForwardPre: return "fwd-pre";
    case trace::HookKind::kModuleForward: return "fwd";
    case trace::HookKind::kModuleBackwardPre: return "bwd-pre";
    case trace::HookKind::kModuleBackward: return "bwd";
    case trace::HookKind::kModuleLegacyBackward: return "bwd-legacy";
    case trace::HookKind::kCommHook: return "comm";
  }
  return "?";
}

// Note [Untagged post hooks]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A compact box (Note [Compact boxes]) writes no "post" before its post
// hooks' chips: post hooks are the Function hooks of PyTorch
// (`Node::register_hook`, DDP's Reducer hooks on AccumulateGrad), most boxes
// carry them and nothing else, and the word made every such box ~45 units
// wider: two ranks of recovery-none after the rebuilds did not fit 1280x800
// at 10 px text. Every other kind keeps its tag, so an untagged chip is a post
// hook; the chip's tooltip names its kind, and full boxes still write "post".
std::string_view box_kind_tag(const BoxMetrics& m, trace::HookKind kind) {
  if (m.compact && kind == trace::HookKind::kPost) return {};
  return hook_kind_tag(kind);
}

GraphScene::GraphScene(const analysis::Model& model)
    : model_(&model), generations_(model), module_anchors_(analysis::module_hook_anchors(model)) {
  assign_slots();
  collect_hooks();
  find_modules();
  find_chains();
  owner_tags_.reserve(model.owners().size());
  for (const auto& o : model.owners()) {
    owner_tags_.push_back(o.label ? make_owner_tag(model.str(o.label), o.kind)
                                  : "#" + std::to_string(o.id));
    owner_colors_.push_back(owner_color_of(o.label ? model.str(o.label) : std::string(), o.id));
  }
}

uint32_t owner_color(const analysis::Model& model, analysis::OwnerIndex owner) {
  if (owner >= model.owners().size()) return 0xff808080u;
  const auto& o = model.owners()[owner];
  return owner_color_of(o.label ? model.str(o.label) : std::string(), o.id);
}

void GraphScene::assign_slots() {
  const auto& functions = model_->functions();
  const auto& model_edges = model_->edges();
  const size_t n = functions.size();
  // Signatures, children first (an iterative post-order DFS; an edge back
  // into the stack, which an autograd graph never has, counts as 0).
  std::vector<uint64_t> sig(n, 0);
  std::vector<uint8_t> state(n, 0);
  std::vector<std::pair<FunctionIndex, uint32_t>> stack;
  for (FunctionIndex root = 0; root < n; ++root) {
    if (state[root]) continue;
    stack.push_back({root, functions[root].edges_begin});
    state[root] = 1;
    while (!stack.empty()) {
      auto& [f, next] = stack.back();
      if (next < functions[f].edges_end) {
        const FunctionIndex to = model_edges[next++].to;
        if (to < n && state[to] == 0) {
          state[to] = 1;
          stack.push_back({to, functions[to].edges_begin});
        }
        continue;
      }
      const auto& info = functions[f];
      uint64_t h = mix(mix(14695981039346656037ull, info.rank), info.source);
      h = mix(mix(h, hash_text(model_->str(info.name))), hash_text(model_->str(info.label)));
      for (uint32_t e = info.edges_begin; e < info.edges_end; ++e) {
        const FunctionIndex to = model_edges[e].to;
        h = mix(h, to < n && state[to] == 2 ? sig[to] : 0);
      }
      sig[f] = h;
      state[f] = 2;
      stack.pop_back();
    }
  }
  // Slots: in event order, a created Function takes the first free slot of
  // its signature; a released one frees it.
  struct Change {
    analysis::EventIndex at;
    uint8_t release;
    FunctionIndex f;
  };
  std::vector<Change> changes;
  changes.reserve(2 * n);
  for (FunctionIndex f = 0; f < n; ++f) {
    changes.push_back({functions[f].created_at, 0, f});
    if (functions[f].released_at != analysis::kNever) {
      changes.push_back({functions[f].released_at, 1, f});
    }
  }
  std::sort(changes.begin(), changes.end(), [](const Change& a, const Change& b) {
    return std::tie(a.at, a.release, a.f) < std::tie(b.at, b.release, b.f);
  });
  // Per family (signature): its slots by instance, and the free instances
  // as a min-heap, so taking the first free slot and freeing one cost
  // log(family) rather than a scan: a million live Functions of one
  // signature (identical, edgeless) took minutes to open with a scan.
  struct Family {
    std::vector<uint32_t> slots;
    std::vector<uint32_t> free;  // min-heap of instance numbers
  };
  const std::vector<uint32_t> family_of = number_families(sig);
  const uint32_t num_families = n ? *std::max_element(family_of.begin(), family_of.end()) + 1 : 0;
  std::vector<Family> families(num_families);
  std::vector<uint32_t> raw_slot(n, kNoSlot), instance_of(n, 0);
  std::vector<FunctionIndex> first;
  std::vector<uint32_t> instance;
  for (const Change& c : changes) {
    Family& family = families[family_of[c.f]];
    if (c.release) {
      family.free.push_back(instance_of[c.f]);
      std::push_heap(family.free.begin(), family.free.end(), std::greater<>());
      continue;
    }
    uint32_t k;
    if (!family.free.empty()) {
      std::pop_heap(family.free.begin(), family.free.end(), std::greater<>());
      k = family.free.back();
      family.free.pop_back();
    } else {
      k = static_cast<uint32_t>(family.slots.size());
      family.slots.push_back(static_cast<uint32_t>(first.size()));
      first.push_back(c.f);
      instance.push_back(k);
    }
    instance_of[c.f] = k;
    raw_slot[c.f] = family.slots[k];
  }
  // Slots ordered by rank, then by first creation: the layout keeps
  // components in this order, so ranks read left to right.
  std::vector<uint32_t> order(first.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) {
    return functions[first[a]].rank < functions[first[b]].rank;
  });
  std::vector<uint32_t> renumber(first.size());
  nodes_.resize(first.size());
  for (uint32_t i = 0; i < order.size(); ++i) {
    renumber[order[i]] = i;
    const auto& info = functions[first[order[i]]];
    nodes_[i].first = first[order[i]];
    nodes_[i].signature = sig[first[order[i]]];
    nodes_[i].instance = instance[order[i]];
    nodes_[i].rank = info.rank;
    nodes_[i].name = info.name;
    nodes_[i].label = info.label;
  }
  slot_of_.resize(n);
  for (FunctionIndex f = 0; f < n; ++f) {
    slot_of_[f] = renumber[raw_slot[f]];
    auto& node = nodes_[slot_of_[f]];
    node.id_digits = std::max(node.id_digits, digits(functions[f].id));
    if (generations_.copied(f)) {
      node.gen = node.gen == UINT32_MAX ? generations_.of_function(f) : std::max(node.gen, generations_.of_function(f));
    }
  }
  edges_.clear();
  for (const auto& e : model_edges) {
    if (e.from < n && e.to < n) edges_.push_back({slot_of_[e.from], slot_of_[e.to]});
  }
  std::sort(edges_.begin(), edges_.end());
  edges_.erase(std::unique(edges_.begin(), edges_.end()), edges_.end());
  edge_of_.resize(model_edges.size(), kNoSlot);
  for (size_t i = 0; i < model_edges.size(); ++i) {
    const auto& e = model_edges[i];
    if (e.from >= n || e.to >= n) continue;
    const std::pair<uint32_t, uint32_t> key{slot_of_[e.from], slot_of_[e.to]};
    edge_of_[i] = static_cast<uint32_t>(std::lower_bound(edges_.begin(), edges_.end(), key) -
                                        edges_.begin());
  }
}

// A box's badge row is reserved for the most owners attached at once on one
// kind (a run of one owner is a chip), not for every owner ever seen: a
// Reducer whose hooks are removed before the next one adds its own (policy
// by-key) leaves room for one chip, not two, and compact boxes stay narrow.
void GraphScene::collect_hooks() {
  struct Use {
    uint32_t slot;
    uint8_t kind;
    analysis::OwnerIndex owner;
    analysis::EventIndex from, to;
    bool operator<(const Use& o) const {
      return std::tie(slot, kind, owner, from) < std::tie(o.slot, o.kind, o.owner, o.from);
    }
  };
  std::vector<Use> uses;
  const auto& hooks = model_->hooks();
  for (const auto& seg : model_->segments()) {
    if (seg.function >= slot_of_.size()) continue;
    const auto& h = hooks[seg.hook];
    uses.push_back({slot_of_[seg.function], static_cast<uint8_t>(h.kind), h.owner, seg.from, seg.to});
  }
  // Module hooks sit on no Function: their chips go on their anchors, and
  // the boxes there reserve room for them as for any hook (as if attached
  // for the whole trace: anchors have no time).
  for (const analysis::ModuleHookAnchor& a : module_anchors_) {
    if (a.function >= slot_of_.size()) continue;
    const auto& h = hooks[a.hook];
    uses.push_back({slot_of_[a.function], static_cast<uint8_t>(h.kind), h.owner, 0, analysis::kNever});
  }
  std::sort(uses.begin(), uses.end());
  std::vector<std::pair<analysis::EventIndex, int>> points;  // (time, +1 an owner starts / -1 it ends)
  for (size_t i = 0; i < uses.size();) {
    size_t j = i;
    while (j < uses.size() && uses[j].slot == uses[i].slot && uses[j].kind == uses[i].kind) ++j;
    // Per owner, its overlapping spans merged; then the most owners at once.
    points.clear();
    for (size_t k = i; k < j;) {
      analysis::EventIndex from = uses[k].from, to = uses[k].to;
      size_t e = k + 1;
      for (; e < j && uses[e].owner == uses[k].owner && uses[e].from <= to; ++e) to = std::max(to, uses[e].to);
      points.push_back({from, 1});
      points.push_back({to, -1});
      k = e;
    }
    std::sort(points.begin(), points.end());  // at one time, an end (-1) before a start
    int now = 0, most = 0;
    for (const auto& p : points) most = std::max(most, now += p.second);
    SceneNode& node = nodes_[uses[i].slot];
    node.hook_kinds |= static_cast<uint16_t>(1u << uses[i].kind);
    node.max_owners = static_cast<uint8_t>(std::max(static_cast<int>(node.max_owners), std::min(most, 255)));
    i = j;
  }
}

FoldedGraph GraphScene::fold(const std::vector<uint8_t>& folded, const std::vector<uint8_t>* keep) const {
  auto is_folded = [&](uint32_t g) { return g < folded.size() && folded[g]; };
  FoldedGraph out;
  const size_t n = nodes_.size();
  out.unit_of_node.assign(n, kNoSlot);
  std::vector<uint32_t> unit_of_group(groups_.size(), kNoSlot);
  for (uint32_t v = 0; v < n; ++v) {
    if (keep && v < keep->size() && !(*keep)[v]) continue;
    uint32_t group = kNoGroup;  // the outermost folded module, else a folded chain
    for (uint32_t g = nodes_[v].module; g != kNoGroup; g = groups_[g].parent) {
      if (is_folded(g)) group = g;
    }
    if (group == kNoGroup && nodes_[v].chain != kNoGroup && is_folded(nodes_[v].chain)) {
      group = nodes_[v].chain;
    }
    uint32_t unit;
    if (group == kNoGroup) {
      unit = static_cast<uint32_t>(out.group_of_unit.size());
      out.group_of_unit.push_back(kNoGroup);
      out.node_of_unit.push_back(v);
    } else if (unit_of_group[group] == kNoSlot) {
      unit = unit_of_group[group] = static_cast<uint32_t>(out.group_of_unit.size());
      out.group_of_unit.push_back(group);
      out.node_of_unit.push_back(kNoSlot);
    } else {
      unit = unit_of_group[group];
    }
    out.unit_of_node[v] = unit;
  }
  out.graph.num_nodes = static_cast<int>(out.group_of_unit.size());
  // Ranks lay out as disjoint columns (LayoutGraph::cluster).
  out.graph.cluster.resize(out.group_of_unit.size());
  for (size_t u = 0; u < out.group_of_unit.size(); ++u) {
    const uint32_t g = out.group_of_unit[u];
    out.graph.cluster[u] = g == kNoGroup ? nodes_[out.node_of_unit[u]].rank : groups_[g].rank;
  }
  std::vector<std::pair<int, int>> edges;
  for (auto [a, b] : edges_) {
    if (out.unit_of_node[a] == kNoSlot || out.unit_of_node[b] == kNoSlot) continue;
    const int ua = static_cast<int>(out.unit_of_node[a]), ub = static_cast<int>(out.unit_of_node[b]);
    if (ua != ub) edges.push_back({ua, ub});
  }
  std::sort(edges.begin(), edges.end());
  edges.erase(std::unique(edges.begin(), edges.end()), edges.end());
  out.graph.edges = edges;
  out.edge_of_scene_edge.assign(edges_.size(), kNoSlot);
  for (size_t e = 0; e < edges_.size(); ++e) {
    if (out.unit_of_node[edges_[e].first] == kNoSlot || out.unit_of_node[edges_[e].second] == kNoSlot) continue;
    const std::pair<int, int> key{static_cast<int>(out.unit_of_node[edges_[e].first]),
                                  static_cast<int>(out.unit_of_node[edges_[e].second])};
    if (key.first == key.second) continue;
    out.edge_of_scene_edge[e] =
        static_cast<uint32_t>(std::lower_bound(edges.begin(), edges.end(), key) - edges.begin());
  }
  return out;
}

std::string GraphScene::slot_gen_label(uint32_t slot) const {
  return slot < nodes_.size() && nodes_[slot].gen != UINT32_MAX ? "gen " + std::to_string(nodes_[slot].gen)
                                                                 : std::string();
}

std::string GraphScene::unit_title(const FoldedGraph& folded, uint32_t unit) const {
  const uint32_t g = folded.group_of_unit[unit];
  if (g == kNoGroup) return model_->str(nodes_[folded.node_of_unit[unit]].name);
  const SceneGroup& group = groups_[g];
  return group.kind == SceneGroup::Kind::kModule ? "[+] " + group.name
                                                  : "[+] " + group.name + " ...";
}

std::string GraphScene::unit_label(const FoldedGraph& folded, uint32_t unit, analysis::FunctionIndex function,
                                   analysis::EventIndex at) const {
  const uint32_t g = folded.group_of_unit[unit];
  if (g == kNoGroup) {
    const uint32_t slot = folded.node_of_unit[unit];
    const std::string gen = function < model_->functions().size() ? gen_label(function, at)
                            : at == analysis::kNever                 ? slot_gen_label(slot)
                                                                     : std::string();
    return gen.empty() ? model_->str(nodes_[slot].label) : model_->str(nodes_[slot].label) + " \xc2\xb7 " + gen;
  }
  const SceneGroup& group = groups_[g];
  return std::to_string(group.nodes.size()) +
         (group.kind == SceneGroup::Kind::kModule ? " Functions (module)" : " Functions (chain)");
}

std::string GraphScene::unit_compact_title(const FoldedGraph& folded, uint32_t unit, analysis::FunctionIndex function,
                                           analysis::EventIndex at) const {
  const uint32_t g = folded.group_of_unit[unit];
  if (g != kNoGroup) return unit_title(folded, unit);
  const SceneNode& node = nodes_[folded.node_of_unit[unit]];
  const bool leaf = model_->functions()[node.first].is_leaf_accumulator();
  if (!leaf || !node.label) return model_->str(node.name);
  // The parameter's name without its shape ("0.weight [32, 16]": "0.weight"; the tooltip has it).
  std::string title = model_->str(node.label);
  if (const size_t shape = title.find(" ["); shape != std::string::npos && shape > 0) title.resize(shape);
  const std::string gen = function < model_->functions().size() ? gen_label(function, at)
                          : at == analysis::kNever                 ? slot_gen_label(folded.node_of_unit[unit])
                                                                   : std::string();
  return gen.empty() ? title : title + " " + gen;
}

std::vector<Vec2> GraphScene::box_sizes(const FoldedGraph& folded, const MeasureText& measure,
                                        const BoxMetrics& m) const {
  const float digit = measure("0"), id_gap = measure("  #");
  const float chip = measure("R12") + 2.f * m.chip_pad;
  // A folded group's chips count its members' hooks: "R1×12".
  const float group_chip = measure("R12\xc3\x97" "99") + 2.f * m.chip_pad;
  // Widths repeat ("AddmmBackward0" thousands of times): measure each text once.
  std::unordered_map<std::string, float> cache;
  auto width = [&](const std::string& s) {
    auto [it, fresh] = cache.try_emplace(s, 0.f);
    if (fresh) it->second = measure(s);
    return it->second;
  };
  const size_t units = folded.group_of_unit.size();
  std::vector<Vec2> sizes(units);
  std::vector<uint16_t> kinds(units, 0);
  std::vector<uint8_t> owners(units, 0);
  std::vector<uint32_t> id_digits(units, 0);
  for (uint32_t v = 0; v < nodes_.size(); ++v) {
    const uint32_t u = folded.unit_of_node[v];
    if (u == kNoSlot) continue;  // not kept
    kinds[u] |= nodes_[v].hook_kinds;
    // A group's members may each have other owners (a rank's successive
    // Reducers): their sum bounds the group's chips.
    owners[u] = folded.group_of_unit[u] == kNoGroup
                    ? nodes_[v].max_owners
                    : static_cast<uint8_t>(std::min(255, owners[u] + nodes_[v].max_owners));
    id_digits[u] = std::max(id_digits[u], nodes_[v].id_digits);
  }
  const float compact_chip = m.compact ? 1.f / 0.85f : 1.f;  // chip text as large as the title
  for (uint32_t u = 0; u < units; ++u) {
    const bool group = folded.group_of_unit[u] != kNoGroup;
    if (m.compact) {  // Note [Compact boxes]
      float w = width(unit_compact_title(folded, u));
      for (int k = 0; k < trace::kNumHookKinds; ++k) {
        if (!(kinds[u] >> k & 1)) continue;
        const std::string_view tag = box_kind_tag(m, static_cast<trace::HookKind>(k));
        w += m.kind_gap + (tag.empty() ? 0.f : (width(std::string(tag)) + m.chip_gap) * compact_chip) +
             static_cast<float>(std::min<int>(owners[u], 3)) * ((group ? group_chip : chip) * compact_chip + m.chip_gap);
      }
      sizes[u] = {std::max(w, m.min_width) + 2.f * m.pad, std::max(m.line_height, m.chip_height) + 2.f * m.pad};
      continue;
    }
    float w = width(unit_title(folded, u)) + (group ? 0.f : id_gap + digit * static_cast<float>(id_digits[u]));
    // Full boxes reserve no room for "gen N" (the view adds it where it fits):
    // a copy appearing in a growing trace does not widen the old one's box.
    const std::string label = unit_label(folded, u, analysis::kNoIndex, 0);
    if (!label.empty()) w = std::max(w, width(label));
    float badges = 0.f;
    for (int k = 0; k < trace::kNumHookKinds; ++k) {
      if (!(kinds[u] >> k & 1)) continue;
      if (badges > 0.f) badges += m.kind_gap;
      badges += width(std::string(hook_kind_tag(static_cast<trace::HookKind>(k)))) + m.chip_gap +
                static_cast<float>(std::min<int>(owners[u], 4)) * ((group ? group_chip : chip) + m.chip_gap);
    }
    w = std::max({w, std::min(badges, m.max_badge_width), m.min_width});
    float h = m.line_height * (label.empty() ? 1.f : 2.f);
    if (kinds[u]) h += m.chip_height + m.pad * 0.5f;
    sizes[u] = {w + 2.f * m.pad, h + 2.f * m.pad};
  }
  return sizes;
}

}  // namespace hookscope::render
