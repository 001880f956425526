// hookscope's own runtime side of tests/torch/test_module_api.py: the same
// cases, by name, logging what every hook saw in the same JSON shapes.
//
//   module_api_runtime RESULT.json CASE...
//
// Result: {case: {"log": [...], "warnings": [...]}}. A value is logged as a
// flat list of floats (a Tensor), null (None), a string (anything else, as
// Python's str()), or a list of those (a tuple).

#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "autograd/multi_grad_hook.h"
#include "nn/nn.h"
#include "tensor/ops.h"

using namespace hookscope;
using nlohmann::json;
using nn::Args;
using nn::Grads;
using nn::Kwargs;
using nn::Module;

namespace {

json g(const Tensor& t) {
  if (!t.defined()) return nullptr;
  json out = json::array();
  for (float v : t.to_vector()) out.push_back(std::round(static_cast<double>(v) * 1e6) / 1e6);
  return out;
}
json g(const nn::Value& v) {
  if (const Tensor* t = nn::as_tensor(v)) return g(*t);
  if (std::holds_alternative<std::monostate>(v)) return nullptr;
  if (auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (auto* s = std::get_if<std::string>(&v)) return *s;
  throw std::invalid_argument("no log form for this value");
}
json g(const Grads& gs) {
  json out = json::array();
  for (const Tensor& t : gs) out.push_back(g(t));
  return out;
}
json g(const Args& args) {
  json out = json::array();
  for (const auto& v : args) out.push_back(g(v));
  return out;
}
// A call's result: Python's single value or tuple; an empty result is None.
json result(const Args& out) {
  if (out.empty()) return nullptr;
  return out.size() == 1 ? g(out[0]) : g(out);
}

Tensor vec(float a, float b, bool grad) {
  Tensor t = Tensor::from_vector({2}, {a, b});
  if (grad) t.set_requires_grad(true);
  return t;
}
const Tensor& at(const Args& a, size_t i) { return std::get<Tensor>(a.at(i)); }

// forward(x, y, k, scale=1.0) = (x * y * (k * scale), y * 2, "s")
class Triple : public Module {
 public:
  Args forward_args(const Args& args, const Kwargs& kwargs) override {
    float k = static_cast<float>(std::get<int64_t>(args.at(2)));
    for (const auto& [name, v] : kwargs) {
      if (name == "scale") k *= static_cast<float>(std::get<double>(v));
    }
    return {mul_scalar(mul(at(args, 0), at(args, 1)), k), mul_scalar(at(args, 1), 2.f),
            std::string("s")};
  }
  std::string name() const override { return "Triple"; }
};
class Scale : public Module {
 public:
  Tensor forward(const Tensor& x) override { return mul_scalar(x, 2.f); }
  std::string name() const override { return "Scale"; }
};
class Throws : public Module {
 public:
  Tensor forward(const Tensor&) override { throw std::runtime_error("forward failed"); }
  std::string name() const override { return "Throws"; }
};

using Log = json;
Module::GradsBackwardHookFn log_bw(Log& log, std::string label) {
  return [&log, label](Module&, const Grads& gi, const Grads& go) -> std::optional<Grads> {
    log.push_back({label, g(gi), g(go)});
    return std::nullopt;
  };
}

void tuple_args(Log& log) {
  Triple m;
  m.register_full_backward_hook(log_bw(log, "bw"));
  Tensor x = vec(1, 2, true), y = vec(3, 4, false);
  Args out = m.call({x, y, int64_t{3}});
  json rg = json::array();
  for (const auto& v : out) rg.push_back(nn::as_tensor(v) && nn::as_tensor(v)->requires_grad());
  log.push_back({"out", result(out), rg});
  sum(at(out, 0)).backward();
  log.push_back({"x.grad", g(x.grad())});
}

void tuple_replace(Log& log) {
  Triple m;
  m.register_full_backward_hook(Module::GradsBackwardHookFn(
      [](Module&, const Grads& gi, const Grads&) -> std::optional<Grads> {
        return Grads{mul_scalar(gi[0], 10.f), gi[1], Tensor()};
      }));
  Tensor x = vec(1, 2, true);
  sum(at(m.call({x, vec(1, 1, false), int64_t{1}}), 0)).backward();
  log.push_back({"x.grad", g(x.grad())});
  Triple bad;
  bad.register_full_backward_hook(Module::GradsBackwardHookFn(
      [](Module&, const Grads& gi, const Grads&) -> std::optional<Grads> { return Grads{gi[0]}; }));
  Args out = bad.call({vec(1, 2, true), vec(1, 1, false), int64_t{1}});
  try {
    sum(at(out, 0)).backward();
  } catch (const std::runtime_error& e) {
    log.push_back({"error", e.what()});
  }
}

void no_input_grad(Log& log) {
  Triple m;
  m.register_full_backward_hook(log_bw(log, "bw"));
  Tensor y = vec(3, 4, true);
  Args out = m.call({vec(1, 2, false), y, int64_t{2}});
  add(sum(at(out, 0)), sum(at(out, 1))).backward();
  log.push_back({"y.grad", g(y.grad())});
}

void backward_pre(Log& log) {
  Triple m;
  m.register_full_backward_pre_hook(
      Module::GradsBackwardPreHookFn([&log](Module&, const Grads& go) -> std::optional<Grads> {
        log.push_back({"bw pre", g(go)});
        return Grads{mul_scalar(go[0], 3.f), Tensor(), Tensor()};
      }));
  m.register_full_backward_hook(log_bw(log, "bw"));
  Tensor x = vec(1, 2, true);
  sum(at(m.call({x, vec(5, 6, false), int64_t{1}}), 0)).backward();
  log.push_back({"x.grad", g(x.grad())});
}

void kwargs_prepend(Log& log) {
  Triple m;
  m.register_forward_pre_hook(Module::ArgsForwardPreHookFn([&log](Module&, const Args& args) {
    log.push_back({"pre", g(args)});
    return std::nullopt;
  }));
  m.register_forward_pre_hook(
      Module::KwargsForwardPreHookFn(
          [&log](Module&, const Args& args,
                 const Kwargs& kwargs) -> std::optional<std::pair<Args, Kwargs>> {
            json names = json::array();
            for (const auto& kv : kwargs) names.push_back(kv.first);
            log.push_back({"pre kwargs", g(args), names});
            return std::make_pair(args, Kwargs{{"scale", 10.0}});
          }),
      {.prepend = true});
  m.register_forward_hook(Module::KwargsForwardHookFn(
      [&log](Module&, const Args& args, const Kwargs& kwargs, const Args& out) -> std::optional<Args> {
        json kw = json::array();
        for (const auto& [k, v] : kwargs) kw.push_back({k, std::get<double>(v)});
        log.push_back({"fwd kwargs", g(args), kw, result(out)});
        return Args{out[0]};
      }));
  m.register_forward_hook(Module::ArgsForwardHookFn([&log](Module&, const Args&, const Args& out) {
                            log.push_back({"fwd prepended", result(out)});
                            return std::nullopt;
                          }),
                          {.prepend = true});
  Args out = m.call({vec(1, 2, false), vec(1, 1, false), int64_t{1}}, {{"scale", 2.0}});
  log.push_back({"out", result(out)});
}

void always_call(Log& log) {
  Throws m;
  m.register_forward_hook(Module::ArgsForwardHookFn([&log](Module&, const Args&, const Args&) {
    log.push_back({"plain"});
    return std::nullopt;
  }));
  m.register_forward_hook(Module::KwargsForwardHookFn([&log](Module&, const Args& args, const Kwargs&,
                                                             const Args& out) {
                            log.push_back({"always", g(args), result(out)});
                            return std::nullopt;
                          }),
                          {.always_call = true});
  m.register_forward_hook(Module::ArgsForwardHookFn(
                              [&log](Module&, const Args&, const Args&) -> std::optional<Args> {
                                log.push_back({"always raising"});
                                throw std::runtime_error("hook failed too");
                              }),
                          {.always_call = true});
  try {
    m(vec(1, 2, false));
  } catch (const std::runtime_error& e) {
    log.push_back({"error", e.what()});
  }
}

void global(Log& log, bool with_pre) {
  auto model = std::make_shared<nn::Sequential>();
  model->push_back(std::make_shared<Scale>());
  model->push_back(std::make_shared<Scale>());
  Module& layer = (*model)[0];
  layer.register_forward_pre_hook([&log](Module&, const Tensor&) { log.push_back({"pre"}); return Tensor(); });
  layer.register_forward_hook([&log](Module&, const Tensor&, const Tensor&) { log.push_back({"fwd"}); return Tensor(); });
  if (with_pre) {
    layer.register_full_backward_pre_hook([&log](Module&, const Tensor&) { log.push_back({"bw pre"}); return Tensor(); });
  }
  layer.register_full_backward_hook(log_bw(log, "bw"));
  std::vector<HookKey> handles = {
      nn::register_module_forward_pre_hook([&log](Module& m, const Args&) {
        log.push_back({"global pre", m.path()});
        return std::nullopt;
      }),
      nn::register_module_forward_hook(Module::ArgsForwardHookFn([&log](Module& m, const Args&, const Args& out) {
        log.push_back({"global fwd", m.path(), result(out)});
        return std::nullopt;
      })),
      nn::register_module_full_backward_hook([&log](Module& m, const Grads& gi, const Grads& go) {
        log.push_back({"global bw", m.path(), g(gi), g(go)});
        return std::nullopt;
      })};
  if (with_pre) {
    handles.push_back(nn::register_module_full_backward_pre_hook([&log](Module& m, const Grads& go) {
      log.push_back({"global bw pre", m.path(), g(go)});
      return std::nullopt;
    }));
  }
  Tensor x = vec(1, -1, true);
  sum((*model)(x)).backward();
  log.push_back({"x.grad", g(x.grad())});
  for (HookKey k : handles) nn::remove_module_hook(k);
  sum((*model)(x)).backward();
  log.push_back({"after removal", g(x.grad())});
}

void legacy(Log& log) {
  nn::Linear lin(2, 2, 0);
  lin.weight = Tensor::from_vector({2, 2}, {0.5f, -1.f, 2.f, 0.25f}).set_requires_grad(true);
  lin.bias = Tensor::from_vector({2}, {0.1f, -0.2f}).set_requires_grad(true);
  lin.register_backward_hook(log_bw(log, "legacy"));
  try {
    lin.register_full_backward_hook(log_bw(log, "never"));
  } catch (const std::runtime_error& e) {
    log.push_back({"error", e.what()});
  }
  Tensor x = Tensor::from_vector({3, 2}, {1, 2, 3, 4, 5, 6}).set_requires_grad(true);
  sum(lin(x)).backward();
  log.push_back({"x.grad", g(x.grad()), "weight.grad", g(lin.weight.grad())});
}

void legacy_replace(Log& log) {
  Scale m;
  m.register_backward_hook([](Module&, const Grads& gi, const Grads&) -> std::optional<Grads> {
    Grads r = gi;
    r[0] = mul_scalar(gi[0], 5.f);
    return r;
  });
  Tensor x = vec(1, 2, true);
  sum(m(x)).backward();
  log.push_back({"x.grad", g(x.grad())});
  Triple t;
  t.register_backward_hook(log_bw(log, "legacy"));
  Args out = t.call({vec(1, 2, true), vec(3, 4, false), int64_t{2}});
  sum(at(out, 0)).backward();
}

void multi_all(Log& log) {
  Tensor a = vec(1, 2, true), b = vec(3, 4, true);
  Tensor c = mul(a, b), d = mul(a, b);
  auto h = autograd::register_multi_grad_hook(
      {a, b, c, d}, [&log](const variable_list& grads) { log.push_back({"all", g(Grads(grads))}); });
  sum(c).backward(Tensor(), true);
  sum(c).backward(Tensor(), true, {a});
  add(sum(c), mul_scalar(sum(d), 2.f)).backward(Tensor(), true);
  h.remove();
  sum(c).backward();
  log.push_back({"done"});
}

void multi_any(Log& log) {
  Tensor a = vec(1, 2, true), b = vec(3, 4, true);
  Tensor c = mul(a, b);
  autograd::register_multi_grad_hook(
      {a, b}, [&log](const Tensor& grad) { log.push_back({"any", g(grad)}); },
      autograd::MultiGradMode::kAny);
  autograd::register_multi_grad_hook(
      {a, b, c}, [&log](const Tensor& grad) { log.push_back({"any with c", g(grad)}); },
      autograd::MultiGradMode::kAny);
  sum(c).backward(Tensor(), true);
  sum(mul_scalar(c, 2.f)).backward();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "usage: module_api_runtime RESULT.json CASE...\n";
    return 2;
  }
  const std::map<std::string, std::function<void(Log&)>> cases = {
      {"tuple_args", tuple_args},       {"tuple_replace", tuple_replace},
      {"no_input_grad", no_input_grad}, {"backward_pre", backward_pre},
      {"kwargs_prepend", kwargs_prepend}, {"always_call", always_call},
      {"global", [](Log& l) { global(l, true); }},
      {"global_no_pre", [](Log& l) { global(l, false); }},
      {"legacy", legacy},
      {"legacy_replace", legacy_replace}, {"multi_all", multi_all},
      {"multi_any", multi_any}};
  json all = json::object();
  for (int i = 2; i < argc; ++i) {
    auto it = cases.find(argv[i]);
    if (it == cases.end()) {
      std::cerr << "module_api_runtime: unknown case " << argv[i] << "\n";
      return 2;
    }
    json log = json::array(), warnings = json::array();
    nn::WarningHandler previous =
        nn::set_warning_handler([&warnings](const std::string& m) { warnings.push_back(m); });
    try {
      it->second(log);
    } catch (const std::exception& e) {
      std::cerr << "module_api_runtime: case " << argv[i] << ": " << e.what() << "\n";
      return 1;
    }
    nn::set_warning_handler(previous);
    all[argv[i]] = {{"log", log}, {"warnings", warnings}};
  }
  std::ofstream(argv[1]) << all.dump();
  return 0;
}
