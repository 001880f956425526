// Groups that fold (Note [Function slots]): modules from parameter names,
// and linear chains.

#include <algorithm>
#include <map>
#include <string>
#include <string_view>

#include "render/layout/graph_scene.h"

namespace hookscope::render {

namespace {

// The module path of a parameter label "layers.3.attn.q.weight [64, 64]":
// "layers.3.attn.q"; "" for a parameter outside any module.
std::string module_of_label(std::string_view label) {
  const size_t space = label.find(" [");
  std::string_view name = label.substr(0, space);
  const size_t dot = name.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(name.substr(0, dot));
}

// Longest common dotted prefix; "" when none.
std::string common_module(const std::string& a, const std::string& b) {
  if (a == b) return a;
  size_t keep = 0;
  for (size_t i = 0; i <= std::min(a.size(), b.size()); ++i) {
    const bool end_a = i == a.size() || a[i] == '.', end_b = i == b.size() || b[i] == '.';
    if (end_a && end_b) keep = i;
    if (i == a.size() || i == b.size() || a[i] != b[i]) break;
  }
  return a.substr(0, keep);
}

}  // namespace

// Modules: an AccumulateGrad's from its parameter's name; a Function on
// one parameter (TBackward0 of a weight) takes its parameter's module; a
// Function reading parameters directly takes their common module. Then a few rounds in which a slot without a module takes the
// common module of its neighbours that have one, so the attention core
// between q, k, v and the projection joins "attn". Same rank only: the
// signature already keeps ranks apart.
void GraphScene::find_modules() {
  const size_t n = nodes_.size();
  std::vector<std::vector<uint32_t>> down(n), up(n);
  for (auto [a, b] : edges_) {
    down[a].push_back(b);
    up[b].push_back(a);
  }
  std::vector<std::string> module(n);
  std::vector<uint8_t> has(n, 0), param_side(n, 0);
  auto join = [&](uint32_t v, const std::string& m) {
    module[v] = has[v] ? common_module(module[v], m) : m;
    has[v] = 1;
  };
  // Children first: slots in reverse topological order (Kahn on `down`).
  std::vector<uint32_t> indegree(n, 0), topo;
  for (auto [a, b] : edges_) ++indegree[b];
  for (uint32_t v = 0; v < n; ++v) {
    if (!indegree[v]) topo.push_back(v);
  }
  for (size_t i = 0; i < topo.size(); ++i) {
    for (uint32_t w : down[topo[i]]) {
      if (--indegree[w] == 0) topo.push_back(w);
    }
  }
  for (size_t i = topo.size(); i-- > 0;) {
    const uint32_t v = topo[i];
    const auto& info = model_->functions()[nodes_[v].first];
    if (down[v].empty()) {
      if (info.is_leaf_accumulator() && nodes_[v].label) {
        join(v, module_of_label(model_->str(nodes_[v].label)));
        param_side[v] = 1;
      }
      continue;
    }
    // TBackward0 / ViewBackward0 of one weight: a single child on the parameter side.
    param_side[v] = down[v].size() == 1 && param_side[down[v][0]];
    for (uint32_t w : down[v]) {
      if (param_side[w] && has[w]) join(v, module[w]);
    }
  }
  for (int round = 0; round < 6; ++round) {
    std::vector<std::pair<uint32_t, std::string>> adopt;
    for (uint32_t v = 0; v < n; ++v) {
      if (has[v]) continue;
      std::string m;
      bool any = false;
      for (const auto* list : {&up[v], &down[v]}) {
        for (uint32_t w : *list) {
          if (!has[w] || module[w].empty()) continue;
          m = any ? common_module(m, module[w]) : module[w];
          any = true;
        }
      }
      if (any && !m.empty()) adopt.push_back({v, m});
    }
    if (adopt.empty()) break;
    for (auto& [v, m] : adopt) join(v, m);
  }
  // A group per (rank, module path prefix) holding at least two slots.
  std::map<std::pair<uint16_t, std::string>, std::vector<uint32_t>> members;
  for (uint32_t v = 0; v < n; ++v) {
    if (!has[v] || module[v].empty()) continue;
    const std::string& m = module[v];
    for (size_t i = 0; i <= m.size(); ++i) {
      if (i == m.size() || m[i] == '.') members[{nodes_[v].rank, m.substr(0, i)}].push_back(v);
    }
  }
  std::map<std::pair<uint16_t, std::string>, uint32_t> index;
  for (auto& [key, slots] : members) {
    if (slots.size() < 2) continue;
    index[key] = static_cast<uint32_t>(groups_.size());
    SceneGroup g;
    g.kind = SceneGroup::Kind::kModule;
    g.rank = key.first;
    g.name = key.second;
    g.nodes = slots;
    groups_.push_back(std::move(g));
  }
  for (auto& [key, id] : index) {  // parents: the longest proper prefix that is a group
    std::string path = key.second;
    for (size_t dot = path.rfind('.'); dot != std::string::npos; dot = path.rfind('.')) {
      path.resize(dot);
      auto it = index.find({key.first, path});
      if (it != index.end()) {
        groups_[id].parent = it->second;
        break;
      }
    }
  }
  for (uint32_t v = 0; v < n; ++v) {  // innermost: the longest prefix that is a group
    if (!has[v] || module[v].empty()) continue;
    std::string path = module[v];
    while (true) {
      auto it = index.find({nodes_[v].rank, path});
      if (it != index.end()) {
        nodes_[v].module = it->second;
        break;
      }
      const size_t dot = path.rfind('.');
      if (dot == std::string::npos) break;
      path.resize(dot);
    }
  }
}

void GraphScene::find_chains() {
  const size_t n = nodes_.size();
  std::vector<uint32_t> indegree(n, 0), outdegree(n, 0), next(n, kNoSlot);
  for (auto [a, b] : edges_) {
    ++outdegree[a];
    ++indegree[b];
    next[a] = b;
  }
  auto linked = [&](uint32_t v) {  // v -> next[v] is a chain link
    return outdegree[v] == 1 && indegree[next[v]] == 1;
  };
  std::vector<uint32_t> prev(n, kNoSlot);
  for (uint32_t v = 0; v < n; ++v) {
    if (outdegree[v] == 1 && linked(v)) prev[next[v]] = v;
  }
  for (uint32_t v = 0; v < n; ++v) {
    if (prev[v] != kNoSlot || outdegree[v] != 1 || !linked(v)) continue;
    SceneGroup g;
    g.kind = SceneGroup::Kind::kChain;
    g.rank = nodes_[v].rank;
    for (uint32_t w = v;; w = next[w]) {
      g.nodes.push_back(w);
      if (outdegree[w] != 1 || !linked(w)) break;
    }
    if (g.nodes.size() < 3) continue;
    g.name = model_->str(nodes_[v].name);
    const auto id = static_cast<uint32_t>(groups_.size());
    for (uint32_t w : g.nodes) nodes_[w].chain = id;
    std::sort(g.nodes.begin(), g.nodes.end());
    groups_.push_back(std::move(g));
  }
}

}  // namespace hookscope::render
