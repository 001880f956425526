#pragma once
// Autograd-shaped graphs made by hand, for the layout's tests and
// benchmarks: the backward graphs a deep MLP, a residual network and a
// stack of transformer blocks record, and random DAGs. Edges go as autograd's
// next_edges do: from a Function to the Functions of its inputs, ending in
// the parameters' AccumulateGrad.

#include <cstdint>
#include <string>
#include <vector>

#include "render/layout/layout.h"
#include "trace/trace_data.h"

namespace hookscope::render {

struct SampleGraph {
  LayoutGraph graph;
  std::vector<std::string> names;   // per node: "AddmmBackward0", ...
  std::vector<std::string> labels;  // per node: an AccumulateGrad's parameter and shape
  std::vector<Vec2> sizes;          // per node: from the text, ~7 px a character

  int add(std::string name, std::string label = {});
  void edge(int from, int to) { graph.edges.emplace_back(from, to); }
};

// Each stops at the first whole block reaching `functions` nodes.
SampleGraph make_mlp_graph(int functions);
SampleGraph make_residual_graph(int functions);
SampleGraph make_transformer_graph(int functions);
// `nodes` nodes, about `edges_per_node` edges out of each, always from a
// lower to a higher index, then the node order shuffled.
SampleGraph make_random_dag(int nodes, double edges_per_node, uint64_t seed);

// A trace in which `graph`'s Functions are created with their edges and
// stay alive: each AccumulateGrad (its parameter named as in `labels`) has
// a post hook of "Reducer 1" (then destroyed: every one an alarm) and
// of "Reducer 2"; every 10th other Function has a pre hook of "probe". The
// last event is a fire of Reducer 2's first hook. For the views' tests and
// benchmarks.
trace::TraceData make_sample_trace(const SampleGraph& graph);

// The graph in Graphviz's DOT language, boxes sized as in `sizes` (72 px an inch).
std::string to_dot(const SampleGraph& graph);

}  // namespace hookscope::render
