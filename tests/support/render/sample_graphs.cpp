#include "render/sample_graphs.h"

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <random>

#include "analysis/synthetic.h"

namespace hookscope::render {

int SampleGraph::add(std::string name, std::string label) {
  const size_t chars = std::max(name.size() + 5, label.size());
  sizes.push_back({7.f * static_cast<float>(chars) + 16.f, label.empty() ? 36.f : 52.f});
  names.push_back(std::move(name));
  labels.push_back(std::move(label));
  return graph.num_nodes++;
}

namespace {

// out = addmm(b, in, W^T) of module `name`: returns the AddmmBackward0.
int linear(SampleGraph& g, int in, const std::string& name) {
  const int addmm = g.add("AddmmBackward0");
  const int t = g.add("TBackward0");
  g.edge(addmm, g.add("AccumulateGrad", name + ".bias [256]"));
  if (in >= 0) g.edge(addmm, in);
  g.edge(addmm, t);
  g.edge(t, g.add("AccumulateGrad", name + ".weight [256, 256]"));
  return addmm;
}

// Built from the loss down, as the engine sees it: `head` is what the
// stack's output feeds, and block i returns the node its input feeds.
template <class Block>
SampleGraph stack(int functions, Block block) {
  SampleGraph g;
  const int loss = g.add("NllLossBackward0");
  const int softmax = g.add("LogSoftmaxBackward0");
  g.edge(loss, softmax);
  int head = softmax;
  for (int i = 0; g.graph.num_nodes < functions; ++i) head = block(g, head, std::to_string(i));
  return g;
}

}  // namespace

SampleGraph make_mlp_graph(int functions) {
  return stack(functions, [](SampleGraph& g, int head, const std::string& i) {
    const int relu = g.add("ReluBackward0");
    g.edge(head, relu);
    const int lin = linear(g, -1, "layers." + i);
    g.edge(relu, lin);
    return lin;
  });
}

SampleGraph make_residual_graph(int functions) {
  return stack(functions, [](SampleGraph& g, int head, const std::string& i) {
    // y = x + lin2(relu(lin1(x))); the head feeds the add, the add's inputs
    // are the branch and the skip; both end at x's Function (the next block).
    const int add = g.add("AddBackward0");
    g.edge(head, add);
    const int lin2 = linear(g, -1, "blocks." + i + ".lin2");
    g.edge(add, lin2);
    const int relu = g.add("ReluBackward0");
    const int lin1 = linear(g, -1, "blocks." + i + ".lin1");
    // lin2 -> relu -> lin1: the edge into the AddmmBackward0 input slot.
    g.edge(lin2, relu);
    g.edge(relu, lin1);
    const int x = g.add("ReluBackward0");  // the block input's grad_fn
    g.edge(lin1, x);
    g.edge(add, x);
    return x;
  });
}

SampleGraph make_transformer_graph(int functions) {
  return stack(functions, [](SampleGraph& g, int head, const std::string& i) {
    const std::string block = "blocks." + i;
    auto layer_norm = [&](int in, const std::string& name) {
      const int ln = g.add("NativeLayerNormBackward0");
      g.edge(ln, g.add("AccumulateGrad", name + ".weight [256]"));
      g.edge(ln, g.add("AccumulateGrad", name + ".bias [256]"));
      if (in >= 0) g.edge(ln, in);
      return ln;
    };
    // MLP half: out = h + fc2(gelu(fc1(ln2(h))))
    const int add2 = g.add("AddBackward0");
    g.edge(head, add2);
    const int fc2 = linear(g, -1, block + ".mlp.fc2");
    g.edge(add2, fc2);
    const int gelu = g.add("GeluBackward0");
    g.edge(fc2, gelu);
    const int fc1 = linear(g, -1, block + ".mlp.fc1");
    g.edge(gelu, fc1);
    const int ln2 = layer_norm(-1, block + ".ln2");
    g.edge(fc1, ln2);
    // Attention half: h = x + proj(softmax(q k^T / sqrt(d)) v), q, k, v from ln1(x)
    const int add1 = g.add("AddBackward0");
    g.edge(add2, add1);
    g.edge(ln2, add1);
    const int proj = linear(g, -1, block + ".attn.proj");
    g.edge(add1, proj);
    const int merge = g.add("ViewBackward0");
    g.edge(proj, merge);
    const int av = g.add("BmmBackward0");
    g.edge(merge, av);
    const int soft = g.add("SoftmaxBackward0");
    g.edge(av, soft);
    const int scale = g.add("DivBackward0");
    g.edge(soft, scale);
    const int qk = g.add("BmmBackward0");
    g.edge(scale, qk);
    const int ln1 = layer_norm(-1, block + ".ln1");
    auto project = [&](int consumer, bool transpose, const char* name) {
      const int view = g.add("ViewBackward0");
      if (transpose) {
        const int tr = g.add("TransposeBackward0");
        g.edge(consumer, tr);
        g.edge(tr, view);
      } else {
        g.edge(consumer, view);
      }
      const int lin = linear(g, ln1, block + ".attn." + name);
      g.edge(view, lin);
    };
    project(qk, false, "q");
    project(qk, true, "k");  // k^T
    project(av, false, "v");
    const int x = g.add("AddBackward0");  // the block input's grad_fn
    g.edge(ln1, x);
    g.edge(add1, x);
    return x;
  });
}

SampleGraph make_random_dag(int nodes, double edges_per_node, uint64_t seed) {
  std::mt19937_64 gen(seed);
  SampleGraph ordered;
  for (int v = 0; v < nodes; ++v) ordered.add("Node" + std::to_string(v));
  std::uniform_real_distribution<double> unit(0.0, 1.0);
  for (int v = 0; v + 1 < nodes; ++v) {
    // Mostly short edges (as in autograd graphs), sometimes a long one.
    const int count = static_cast<int>(edges_per_node + unit(gen));
    for (int k = 0; k < count; ++k) {
      const int span = unit(gen) < 0.8 ? 1 + static_cast<int>(gen() % 6)
                                       : 1 + static_cast<int>(gen() % (nodes - v - 1));
      ordered.edge(v, std::min(nodes - 1, v + span));
    }
  }
  std::vector<int> perm(static_cast<size_t>(nodes));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), gen);
  SampleGraph g;
  g.graph.num_nodes = nodes;
  g.names.resize(static_cast<size_t>(nodes));
  g.sizes.resize(static_cast<size_t>(nodes));
  g.labels.resize(static_cast<size_t>(nodes));
  for (int v = 0; v < nodes; ++v) {
    g.names[perm[v]] = ordered.names[v];
    g.sizes[perm[v]] = ordered.sizes[v];
  }
  for (auto [a, b] : ordered.graph.edges) g.edge(perm[a], perm[b]);
  return g;
}

trace::TraceData make_sample_trace(const SampleGraph& g) {
  analysis::TraceBuilder b;
  const uint32_t r1 = b.owner(trace::OwnerKind::kReducer, "Reducer 1");
  const uint32_t r2 = b.owner(trace::OwnerKind::kReducer, "Reducer 2");
  const uint32_t probe = b.owner(trace::OwnerKind::kUser, "probe");
  std::vector<uint64_t> id(static_cast<size_t>(g.graph.num_nodes));
  std::vector<uint64_t> leaves;
  int others = 0;
  for (int v = 0; v < g.graph.num_nodes; ++v) {
    if (g.names[v] == "AccumulateGrad") {
      id[v] = b.accumulator(g.labels[v]);
      leaves.push_back(id[v]);
    } else {
      id[v] = b.function(g.names[v]);
      if (others++ % 10 == 0) b.add_hook(id[v], trace::HookKind::kPre, probe);
    }
  }
  for (auto [from, to] : g.graph.edges) b.edge(id[from], id[to]);
  uint64_t first_key = 0;
  for (uint64_t leaf : leaves) b.add_hook(leaf, trace::HookKind::kPost, r1);
  for (uint64_t leaf : leaves) {
    const uint64_t key = b.add_hook(leaf, trace::HookKind::kPost, r2);
    if (!first_key) first_key = key;
  }
  b.destroy_owner(r1);
  if (!leaves.empty()) b.fire(leaves[0], first_key, trace::HookKind::kPost, r2);
  return b.take();
}

std::string to_dot(const SampleGraph& g) {
  std::string out = "digraph G {\n  node [shape=box, fixedsize=true];\n";
  char buf[160];
  for (int v = 0; v < g.graph.num_nodes; ++v) {
    std::snprintf(buf, sizeof buf, "  n%d [label=\"%s\", width=%.3f, height=%.3f];\n", v,
                  g.names[v].c_str(), g.sizes[v].x / 72.0, g.sizes[v].y / 72.0);
    out += buf;
  }
  for (auto [a, b] : g.graph.edges) {
    std::snprintf(buf, sizeof buf, "  n%d -> n%d;\n", a, b);
    out += buf;
  }
  out += "}\n";
  return out;
}

}  // namespace hookscope::render
