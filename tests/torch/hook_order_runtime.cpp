// hookscope's own runtime side of tests/torch/test_hook_order.py: builds the
// graph a JSON spec describes, with its hooks, runs one backward while
// recording to a .hstrace file, and writes what fired (in order) and which
// trace key each hook label got.
//
//   hook_order_runtime SPEC.json TRACE.hstrace RESULT.json
//
// Spec: {"leaves": [[v0, v1, v2], ...], "ops": [{"op": "tanh", "in": [i]}, ...],
//        "hooks": [{"label": "...", "kind": "tensor_pre|retain_grad|pre|post",
//                   "value": index}]}
// Values are numbered leaves first, then op outputs; the loss is sum() of
// the last value. Node hooks on a leaf's value go on its AccumulateGrad.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/node.h"
#include "tensor/ops.h"
#include "tensor/tensor.h"
#include "trace/writer.h"

using namespace hookscope;
using nlohmann::json;

namespace {

Tensor apply_op(const std::string& op, const std::vector<Tensor>& in) {
  if (op == "tanh") return tanh(in.at(0));
  if (op == "sigmoid") return sigmoid(in.at(0));
  if (op == "exp") return exp(in.at(0));
  if (op == "neg") return neg(in.at(0));
  if (op == "add") return add(in.at(0), in.at(1));
  if (op == "mul") return mul(in.at(0), in.at(1));
  throw std::invalid_argument("unknown op in spec: " + op);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: hook_order_runtime SPEC.json TRACE.hstrace RESULT.json\n";
    return 2;
  }
  try {
    json spec = json::parse(std::ifstream(argv[1]));
    trace::TraceHeader header;
    header.scenario = "hook order (tests/torch)";
    trace::FileRecorder recorder(argv[2], header);
    recorder.start();

    std::vector<Tensor> values;
    for (const auto& leaf : spec["leaves"]) {
      std::vector<float> v = leaf.get<std::vector<float>>();
      const int64_t n = static_cast<int64_t>(v.size());
      values.push_back(Tensor::from_vector({n}, std::move(v)).set_requires_grad(true));
    }
    const size_t num_leaves = values.size();
    for (const auto& op : spec["ops"]) {
      std::vector<Tensor> in;
      for (int i : op["in"]) in.push_back(values.at(static_cast<size_t>(i)));
      values.push_back(apply_op(op["op"].get<std::string>(), in));
    }
    Tensor loss = sum(values.back());

    std::vector<std::string> log;
    std::map<std::string, uint64_t> keys;
    for (const auto& h : spec["hooks"]) {
      const std::string label = h["label"];
      const std::string kind = h["kind"];
      const auto index = h["value"].get<size_t>();
      Tensor& t = values.at(index);
      std::shared_ptr<Node> fn = index < num_leaves ? t.grad_accumulator() : t.grad_fn();
      HookKey key{};
      if (kind == "tensor_pre") {
        key = t.register_hook([&log, label](const Tensor&) {
          log.push_back(label);
          return Tensor();
        });
      } else if (kind == "retain_grad") {
        t.retain_grad();
        continue;
      } else if (kind == "pre") {
        key = fn->add_pre_hook([&log, label](variable_list&) { log.push_back(label); });
      } else if (kind == "post") {
        key = fn->add_post_hook(
            [&log, label](variable_list&, const variable_list&) { log.push_back(label); });
      } else {
        throw std::invalid_argument("unknown hook kind in spec: " + kind);
      }
      keys[label] = key.value;
    }
    loss.backward();
    recorder.finish();
    json result = {{"log", log}, {"keys", keys}};
    std::ofstream(argv[3]) << result.dump();
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "hook_order_runtime: " << e.what() << "\n";
    return 1;
  }
}
