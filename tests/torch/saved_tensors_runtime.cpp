// hookscope's own runtime side of tests/torch/test_saved_tensors.py: runs
// each case of a JSON spec under saved-tensor hooks and writes, per case, the
// graph (Nodes depth first from the output, each once), every pack in order
// (Node, field, shape, values), every unpack in backward (Node, field) and
// the leaves' gradients of sum(output).
//
//   saved_tensors_runtime SPEC.json RESULT.json
//
// Spec: {"case": {"leaves": [{"shape": [...], "values": [...], "grad": true}],
//                 "ops": [{"op": "mul", "args": [i, j], ...}]}, ...}
// Values are numbered leaves first, then op outputs; the output is the last.

#include <algorithm>
#include <any>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/engine.h"
#include "autograd/node.h"
#include "autograd/saved_variable.h"
#include "tensor/ops.h"
#include "trace/recorder.h"

using namespace hookscope;
using nlohmann::json;

namespace {

Tensor apply_op(const json& op, const std::vector<Tensor>& in) {
  const std::string name = op["op"];
  auto unary = [&](Tensor (*f)(const Tensor&)) { return f(in.at(0)); };
  auto binary = [&](Tensor (*f)(const Tensor&, const Tensor&)) { return f(in.at(0), in.at(1)); };
  if (name == "mul") return binary(mul);
  if (name == "div") return binary(div);
  if (name == "add") return binary(add);
  if (name == "sub") return binary(sub);
  if (name == "matmul") return binary(matmul);
  if (name == "mse_loss") return binary(mse_loss);
  if (name == "add_bias") return binary(add_bias);
  if (name == "neg") return unary(neg);
  if (name == "relu") return unary(relu);
  if (name == "tanh") return unary(tanh);
  if (name == "sigmoid") return unary(sigmoid);
  if (name == "exp") return unary(exp);
  if (name == "log") return unary(log);
  if (name == "sum") return unary(sum);
  if (name == "mean") return unary(mean);
  if (name == "transpose") return unary(transpose);
  if (name == "log_softmax") return unary(log_softmax);
  if (name == "mul_scalar") return mul_scalar(in.at(0), op["scalar"].get<float>());
  if (name == "reshape") return reshape(in.at(0), op["shape"].get<Shape>());
  if (name == "linear") return linear(in.at(0), in.at(1), in.at(2));
  if (name == "nll_loss") return nll_loss(in.at(0), op["target"].get<std::vector<int64_t>>());
  if (name == "cross_entropy") {
    return cross_entropy(in.at(0), op["target"].get<std::vector<int64_t>>());
  }
  throw std::invalid_argument("unknown op in spec: " + name);
}

// Nodes reachable from `root`, depth first, each once (as the test walks
// PyTorch's next_functions).
std::vector<std::shared_ptr<Node>> walk(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> nodes, stack{root};
  while (!stack.empty()) {
    std::shared_ptr<Node> n = stack.back();
    stack.pop_back();
    if (!n || std::find(nodes.begin(), nodes.end(), n) != nodes.end()) continue;
    nodes.push_back(n);
    const edge_list& edges = n->next_edges();
    for (auto e = edges.rbegin(); e != edges.rend(); ++e) stack.push_back(e->function);
  }
  return nodes;
}

json run_case(const json& spec) {
  std::vector<Tensor> values;
  for (const auto& leaf : spec["leaves"]) {
    values.push_back(Tensor::from_vector(leaf["shape"].get<Shape>(),
                                         leaf["values"].get<std::vector<float>>())
                         .set_requires_grad(leaf["grad"].get<bool>()));
  }
  const std::vector<Tensor> leaves = values;
  std::vector<Tensor> packed;
  trace::MemoryRecorder rec;  // the pack events name the Node and the slot
  rec.start();
  {
    SavedTensorsHooks hooks(
        [&](const Tensor& t) -> std::any {
          packed.push_back(t);
          return t;
        },
        [](const std::any& p) { return std::any_cast<Tensor>(p); });
    for (const auto& op : spec["ops"]) {
      std::vector<Tensor> in;
      for (size_t i : op["args"]) in.push_back(values.at(i));
      values.push_back(apply_op(op, in));
    }
  }
  rec.finish();
  const Tensor& out = values.back();
  const auto nodes = walk(out.grad_fn());
  auto index_of = [&](uint64_t id) -> size_t {
    for (size_t i = 0; i < nodes.size(); ++i) {
      if (nodes[i]->id() == id) return i;
    }
    throw std::logic_error("a pack event names a Node outside the output's graph");
  };
  json graph = json::array();
  for (const auto& n : nodes) {
    json next = json::array();
    for (const Edge& e : n->next_edges()) {
      if (e.function) {
        next.push_back(index_of(e.function->id()));
      } else {
        next.push_back(nullptr);
      }
    }
    graph.push_back({{"name", n->name()}, {"next", next}});
  }
  json packs = json::array();
  size_t k = 0;
  for (const auto& e : rec.events()) {
    if (e.kind != trace::EventKind::kSavedTensorPacked) continue;
    const size_t ni = index_of(e.node);
    const auto* fn = dynamic_cast<const FunctionNode*>(nodes[ni].get());
    const Tensor& t = packed.at(k++);
    packs.push_back({{"node", ni},
                     {"field", fn->saved_name(e.arg)},
                     {"shape", t.shape()},
                     {"values", t.to_vector()}});
  }
  if (k != packed.size()) throw std::logic_error("packs without a pack event");
  Tensor loss = out.dim() == 0 ? out : sum(out);
  trace::MemoryRecorder backward_rec;  // unpacks, in the order the Functions ran
  backward_rec.start();
  loss.backward();
  backward_rec.finish();
  json unpacks = json::array();
  for (const auto& e : backward_rec.events()) {
    if (e.kind != trace::EventKind::kSavedTensorUnpacked) continue;
    const size_t ni = index_of(e.node);
    unpacks.push_back({ni, dynamic_cast<const FunctionNode&>(*nodes[ni]).saved_name(e.arg)});
  }
  json grads = json::array();
  for (const Tensor& l : leaves) {
    if (l.grad().defined()) {
      grads.push_back(l.grad().to_vector());
    } else {
      grads.push_back(nullptr);
    }
  }
  return {{"graph", graph}, {"packs", packs}, {"unpacks", unpacks}, {"grads", grads}};
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: saved_tensors_runtime SPEC.json RESULT.json\n";
    return 2;
  }
  try {
    json spec = json::parse(std::ifstream(argv[1]));
    json result;
    for (const auto& [name, c] : spec.items()) result[name] = run_case(c);
    std::ofstream(argv[2]) << result.dump();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "saved_tensors_runtime: " << e.what() << "\n";
    return 1;
  }
}
