// The differentiable ops declared in tensor/ops.h: kernels from tensor/ plus
// the backward Function each records (Note [Layers] in tensor/tensor.h; as
// PyTorch's VariableType over ATen).
#include "tensor/ops.h"

#include <stdexcept>
#include <string>

#include "autograd/node.h"
#include "tensor/kernels.h"

namespace hookscope {
namespace {

[[noreturn]] void shape_error(const char* op, const std::string& what) {
  throw std::invalid_argument(std::string(op) + ": " + what);
}

void check_defined(const char* op, const Tensor& t) {
  if (!t.defined()) shape_error(op, "got an undefined tensor");
}

Device common_device(const char* op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  if (a.device() != b.device() || a.device_index() != b.device_index()) {
    shape_error(op, "expected all tensors on the same device, got " + a.device_str() + " and " +
                        b.device_str() + " (move one with .to(), or build both on one device)");
  }
  return a.device();
}

void check_same_shape(const char* op, const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape()) {
    shape_error(op, "shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                        " do not match (elementwise ops need equal shapes; use add_bias "
                        "to add a row vector)");
  }
}

void check_2d(const char* op, const Tensor& t, const char* name) {
  if (t.dim() != 2) {
    shape_error(op, std::string(name) + " must be 2-D, got shape " + shape_str(t.shape()));
  }
}

Tensor like(const Tensor& t) { return Tensor::empty(t.shape(), t.device()); }
Kernels& k(const Tensor& t) { return kernels_for(t.device()); }

// Note [What each op saves]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// Each op saves what PyTorch 2.6's generated Node saves (tools/autograd/
// derivatives.yaml through gen_variable_type.py), because saved-tensor hooks
// show it to the user: the same fields, under the same guard, packed in the
// same order. 2.x packs the saved inputs sorted by field name, then (after
// the kernel ran) the saved outputs sorted by name: MulBackward0 packs
// other_ before self_. A field used by one input's formula only is saved only
// when that input needs a gradient (should_compute_output(i): the input
// required grad); it stays an undefined slot, nothing is packed for it.
// PyTorch 1.13 packed in its struct order instead (self_ before other_).
// The table is docs/semantics.md section "P"; tests/core/autograd/test_saved_order.cpp and
// tests/torch/test_saved_tensors.py hold it against the runtime and PyTorch.
using SavedField = FunctionNode::SavedField;

// Records `backward` as the grad_fn of `out` if any input requires grad, and
// saves `saved` for it (Note [Saved tensor hooks]): the formula gets them back
// as its second argument, in this order (an unsaved field undefined).
void record(const char* name, FunctionNode::Backward backward, const variable_list& inputs,
            Tensor& out, std::initializer_list<SavedField> saved = {}) {
  if (!GradMode::is_enabled()) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  if (set_history(node, inputs, {&out}) && saved.size() > 0) node->save_for_backward(saved);
}

// The tensor when `needed` (a should_compute_output guard), else undefined.
Tensor if_needed(bool needed, const Tensor& t) { return needed ? t.detach() : Tensor(); }

Tensor binary_op(const char* name, BinaryOp op, const Tensor& a, const Tensor& b) {
  common_device(name, a, b);
  check_same_shape(name, a, b);
  Tensor out = like(a);
  k(a).binary(op, a, b, out);
  return out;
}

Tensor unary_op(UnaryOp op, const Tensor& a) {
  Tensor out = like(a);
  k(a).unary(op, a, out);
  return out;
}

Tensor scaled(const Tensor& g, float alpha) {
  Tensor out = like(g);
  k(g).scale(g, alpha, out);
  return out;
}

Tensor bin(BinaryOp op, const Tensor& a, const Tensor& b) {
  Tensor out = like(a);
  k(a).binary(op, a, b, out);
  return out;
}

// Unary ops whose gradient needs the saved input or output.
Tensor unary_with_grad(const char* name, const char* bw_name, UnaryOp op, UnaryGradOp gop,
                       bool save_output, const Tensor& a) {
  check_defined(name, a);
  Tensor out = unary_op(op, a);
  Tensor saved = save_output ? out.detach() : a.detach();
  record(bw_name,
         [gop](const variable_list& g, const variable_list& s) -> variable_list {
           Tensor gi = like(g[0]);
           k(g[0]).unary_grad(gop, g[0], s[0], gi);
           return {gi};
         },
         {a}, out, {{save_output ? "result" : "self", saved}});
  return out;
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op("add", BinaryOp::kAdd, a, b);
  record("AddBackward0", [](const variable_list& g, const variable_list&) -> variable_list { return {g[0], g[0]}; },
         {a, b}, out);
  return out;
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op("sub", BinaryOp::kSub, a, b);
  record("SubBackward0",
         [](const variable_list& g, const variable_list&) -> variable_list { return {g[0], scaled(g[0], -1.f)}; },
         {a, b}, out);
  return out;
}

// MulBackward0 {other_, self_}: self's gradient needs other, other's needs
// self (Note [What each op saves]).
Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op("mul", BinaryOp::kMul, a, b);
  record("MulBackward0",
         [](const variable_list& g, const variable_list& s) -> variable_list {
           const Tensor &other = s[0], &self = s[1];
           Tensor ga, gb;
           if (other.defined()) ga = bin(BinaryOp::kMul, g[0], other);
           if (self.defined()) gb = bin(BinaryOp::kMul, g[0], self);
           return {ga, gb};
         },
         {a, b}, out,
         {{"other", if_needed(a.requires_grad(), b)}, {"self", if_needed(b.requires_grad(), a)}});
  return out;
}

// DivBackward0 {other_, self_}: both gradients need other; only other's
// needs self. (PyTorch saves self rather than the result: an in-place op on
// the result must not break backward.)
Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op("div", BinaryOp::kDiv, a, b);
  record("DivBackward0",
         [need_a = a.requires_grad()](const variable_list& g,
                                      const variable_list& s) -> variable_list {
           const Tensor &other = s[0], &self = s[1];
           Tensor g_over = bin(BinaryOp::kDiv, g[0], other);  // g / b
           Tensor gb;
           if (self.defined()) {  // -g * a / b^2
             gb = scaled(bin(BinaryOp::kDiv, bin(BinaryOp::kMul, g_over, self), other), -1.f);
           }
           return {need_a ? g_over : Tensor(), gb};
         },
         {a, b}, out, {{"other", b.detach()}, {"self", if_needed(b.requires_grad(), a)}});
  return out;
}

// `t * 2.0` in PyTorch is mul.Tensor with the number wrapped in a 0-dim CPU
// tensor (a double there, a float here): MulBackward0 with an edge that
// needs no gradient, and the wrapped number saved as other_ - but not
// packed (Note [Saved tensor hooks]).
Tensor mul_scalar(const Tensor& a, float s) {
  check_defined("mul_scalar", a);
  Tensor out = scaled(a, s);
  if (!GradMode::is_enabled() || !a.requires_grad()) return out;
  Tensor wrapped = Tensor::scalar(s);
  record("MulBackward0",
         [](const variable_list& g, const variable_list& saved) -> variable_list {
           return {scaled(g[0], saved[0].item()), Tensor()};
         },
         {a, wrapped}, out, {{"other", wrapped, /*wrapped_number=*/true}, {"self", Tensor()}});
  return out;
}

Tensor neg(const Tensor& a) {
  check_defined("neg", a);
  Tensor out = unary_op(UnaryOp::kNeg, a);
  record("NegBackward0",
         [](const variable_list& g, const variable_list&) -> variable_list { return {scaled(g[0], -1.f)}; }, {a},
         out);
  return out;
}

Tensor relu(const Tensor& a) {
  // threshold_backward(grad, result, 0): the result is > 0 where the input was.
  return unary_with_grad("relu", "ReluBackward0", UnaryOp::kRelu, UnaryGradOp::kRelu, true, a);
}
Tensor tanh(const Tensor& a) {
  return unary_with_grad("tanh", "TanhBackward0", UnaryOp::kTanh, UnaryGradOp::kTanh, true, a);
}
Tensor sigmoid(const Tensor& a) {
  return unary_with_grad("sigmoid", "SigmoidBackward0", UnaryOp::kSigmoid,
                         UnaryGradOp::kSigmoid, true, a);
}
Tensor exp(const Tensor& a) {
  return unary_with_grad("exp", "ExpBackward0", UnaryOp::kExp, UnaryGradOp::kExp, true, a);
}
Tensor log(const Tensor& a) {
  return unary_with_grad("log", "LogBackward0", UnaryOp::kLog, UnaryGradOp::kLog, false, a);
}

namespace {
// d(self @ mat2): self's gradient g @ mat2^T, mat2's self^T @ g; each only
// when its factor was saved (the other input required grad).
variable_list mm_backward(const variable_list& g, const variable_list& s) {
  const Tensor &mat2 = s[0], &self = s[1];
  Tensor g_self, g_mat2;
  if (mat2.defined()) {
    g_self = Tensor::empty({g[0].size(0), mat2.size(0)}, g[0].device());
    k(g[0]).matmul(g[0], false, mat2, true, g_self);
  }
  if (self.defined()) {
    g_mat2 = Tensor::empty({self.size(1), g[0].size(1)}, g[0].device());
    k(g[0]).matmul(self, true, g[0], false, g_mat2);
  }
  return {g_self, g_mat2};
}
}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  common_device("matmul", a, b);
  check_2d("matmul", a, "first operand");
  check_2d("matmul", b, "second operand");
  if (a.size(1) != b.size(0)) {
    shape_error("matmul", "shapes " + shape_str(a.shape()) + " and " + shape_str(b.shape()) +
                              " cannot be multiplied (" + std::to_string(a.size(1)) +
                              " != " + std::to_string(b.size(0)) + ")");
  }
  Tensor out = Tensor::empty({a.size(0), b.size(1)}, a.device());
  k(a).matmul(a, false, b, false, out);
  // Note [Gradients nobody asked for]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // As PyTorch's formulas guard each input with should_compute_output(i)
  // (its next edge is valid: the input required grad when the op ran), a
  // product's backward skips the product for an input that needs no
  // gradient and returns an undefined tensor there, which the engine drops.
  // An MLP's first layer takes data: its grad_input is a third of the
  // step's FLOPs. The same guards decide what is saved (Note [What each op
  // saves]): MmBackward0 {mat2_, self_}, each kept only for the other's
  // gradient.
  record("MmBackward0", mm_backward, {a, b}, out,
         {{"mat2", if_needed(a.requires_grad(), b)}, {"self", if_needed(b.requires_grad(), a)}});
  return out;
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  common_device("linear", x, weight);
  common_device("linear", x, bias);
  check_2d("linear", x, "input");
  check_2d("linear", weight, "weight");
  if (x.size(1) != weight.size(1) || bias.dim() != 1 || bias.size(0) != weight.size(0)) {
    shape_error("linear", "input " + shape_str(x.shape()) + ", weight " +
                              shape_str(weight.shape()) + " and bias " + shape_str(bias.shape()) +
                              " do not fit (expected [n, in], [out, in], [out])");
  }
  // F.linear on a 2-D input is addmm(bias, x, weight.t()): a TBackward0 for
  // the transposed weight, and AddmmBackward0 with PyTorch's edge order
  // (bias, x, weight^T) and fields {mat1_, mat2_} (Note [What each op saves]).
  const bool recording =
      GradMode::is_enabled() && (x.requires_grad() || weight.requires_grad() || bias.requires_grad());
  Tensor out = Tensor::empty({x.size(0), weight.size(0)}, x.device());
  if (!recording) {
    k(x).matmul(x, false, weight, true, out);
    k(x).add_bias(out, bias, out);
    return out;
  }
  Tensor wt = transpose(weight);
  k(x).matmul(x, false, wt, false, out);
  k(x).add_bias(out, bias, out);
  const int64_t out_features = weight.size(0);
  record("AddmmBackward0",  // Note [Gradients nobody asked for]
         [out_features, need_bias = bias.requires_grad()](const variable_list& g,
                                                          const variable_list& s) -> variable_list {
           Tensor g_bias;
           if (need_bias) {
             g_bias = Tensor::empty({out_features}, g[0].device());
             k(g[0]).sum_rows(g[0], g_bias);
           }
           // mat1 = x, mat2 = weight^T: the mm formulas with mat2 first.
           variable_list mm = mm_backward(g, {s[1], s[0]});
           return {g_bias, mm[0], mm[1]};
         },
         {bias, x, wt}, out,
         {{"mat1", if_needed(wt.requires_grad(), x)}, {"mat2", if_needed(x.requires_grad(), wt)}});
  return out;
}

Tensor add_bias(const Tensor& x, const Tensor& bias) {
  common_device("add_bias", x, bias);
  check_2d("add_bias", x, "input");
  if (bias.dim() != 1 || bias.size(0) != x.size(1)) {
    shape_error("add_bias", "bias of shape " + shape_str(bias.shape()) +
                                " does not fit input of shape " + shape_str(x.shape()) +
                                " (expected [" + std::to_string(x.size(1)) + "])");
  }
  Tensor out = like(x);
  k(x).add_bias(x, bias, out);
  const int64_t cols = x.size(1);
  record("AddBackward0",  // x + bias in PyTorch: add, broadcast
         [cols](const variable_list& g, const variable_list&) -> variable_list {
           Tensor gb = Tensor::empty({cols}, g[0].device());
           k(g[0]).sum_rows(g[0], gb);
           return {g[0], gb};
         },
         {x, bias}, out);
  return out;
}

namespace {
Tensor reduce_all(const char* bw_name, const Tensor& a, bool mean) {
  check_defined(bw_name, a);
  Tensor out = Tensor::empty({}, a.device());
  k(a).sum_all(a, out);
  const float n = static_cast<float>(a.numel());
  if (mean) out = scaled(out, n > 0 ? 1.f / n : 0.f);
  Shape shape = a.shape();
  Device dev = a.device();
  const float alpha = mean ? (n > 0 ? 1.f / n : 0.f) : 1.f;
  record(bw_name,
         [shape, dev, alpha](const variable_list& g, const variable_list&) -> variable_list {
           Tensor gi = Tensor::empty(shape, dev);
           k(g[0]).broadcast_scalar(g[0], alpha, gi);
           return {gi};
         },
         {a}, out);
  return out;
}
}  // namespace

Tensor sum(const Tensor& a) { return reduce_all("SumBackward0", a, false); }
Tensor mean(const Tensor& a) { return reduce_all("MeanBackward0", a, true); }

Tensor reshape(const Tensor& a, Shape shape) {
  check_defined("reshape", a);
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) shape_error("reshape", "only one dimension can be -1 in " + shape_str(shape));
      infer = static_cast<int>(i);
    } else {
      if (shape[i] < 0) shape_error("reshape", "invalid shape " + shape_str(shape));
      known *= shape[i];
    }
  }
  if (infer >= 0 && known > 0) shape[static_cast<size_t>(infer)] = a.numel() / known;
  if (numel_of(shape) != a.numel()) {
    shape_error("reshape", "shape " + shape_str(shape) + " is invalid for input of shape " +
                               shape_str(a.shape()));
  }
  Tensor out = a.detach();
  out.impl()->shape = shape;
  Shape in_shape = a.shape();
  record("ViewBackward0",
         [in_shape](const variable_list& g, const variable_list&) -> variable_list {
           Tensor gi = g[0].detach();
           gi.impl()->shape = in_shape;
           return {gi};
         },
         {a}, out);
  return out;
}

Tensor transpose(const Tensor& a) {
  check_defined("transpose", a);
  check_2d("transpose", a, "input");
  Tensor out = Tensor::empty({a.size(1), a.size(0)}, a.device());
  k(a).transpose2d(a, out);
  record("TBackward0",
         [](const variable_list& g, const variable_list&) -> variable_list {
           Tensor gi = Tensor::empty({g[0].size(1), g[0].size(0)}, g[0].device());
           k(g[0]).transpose2d(g[0], gi);
           return {gi};
         },
         {a}, out);
  return out;
}

Tensor mse_loss(const Tensor& input, const Tensor& target) {
  common_device("mse_loss", input, target);
  check_same_shape("mse_loss", input, target);
  Tensor diff = bin(BinaryOp::kSub, input, target);
  Tensor sq = bin(BinaryOp::kMul, diff, diff);
  Tensor out = Tensor::empty({}, input.device());
  k(sq).sum_all(sq, out);
  const float n = static_cast<float>(input.numel());
  out = scaled(out, 1.f / n);
  // MseLossBackward0 {self_, target_}: both formulas read both, no guard.
  record("MseLossBackward0",
         [n, need_target = target.requires_grad()](const variable_list& g,
                                                   const variable_list& s) -> variable_list {
           Tensor diff = bin(BinaryOp::kSub, s[0], s[1]);
           Tensor coeff = Tensor::empty(diff.shape(), diff.device());
           k(diff).broadcast_scalar(g[0], 2.f / n, coeff);
           Tensor gi = bin(BinaryOp::kMul, coeff, diff);
           return {gi, need_target ? scaled(gi, -1.f) : Tensor()};
         },
         {input, target}, out, {{"self", input.detach()}, {"target", target.detach()}});
  return out;
}

Tensor log_softmax(const Tensor& logits) {
  check_defined("log_softmax", logits);
  check_2d("log_softmax", logits, "input");
  Tensor out = like(logits);
  k(logits).log_softmax(logits, out);
  record("LogSoftmaxBackward0",
         [](const variable_list& g, const variable_list& s) -> variable_list {
           Tensor gi = like(g[0]);
           k(g[0]).log_softmax_grad(g[0], s[0], gi);
           return {gi};
         },
         {logits}, out, {{"result", out.detach()}});
  return out;
}

Tensor nll_loss(const Tensor& log_probs, const std::vector<int64_t>& target) {
  check_defined("nll_loss", log_probs);
  check_2d("nll_loss", log_probs, "input");
  if (static_cast<int64_t>(target.size()) != log_probs.size(0)) {
    shape_error("nll_loss", "input of shape " + shape_str(log_probs.shape()) + " has " +
                                std::to_string(log_probs.size(0)) + " rows but " +
                                std::to_string(target.size()) + " targets were given");
  }
  for (size_t i = 0; i < target.size(); ++i) {
    if (target[i] < 0 || target[i] >= log_probs.size(1)) {
      shape_error("nll_loss", "target " + std::to_string(target[i]) + " at index " +
                                  std::to_string(i) + " is out of bounds for " +
                                  std::to_string(log_probs.size(1)) + " classes");
    }
  }
  Tensor out = Tensor::empty({}, log_probs.device());
  k(log_probs).nll_loss(log_probs, target, out);
  if (!GradMode::is_enabled() || !log_probs.requires_grad()) return out;
  // NllLossBackward0 {self_, target_, weight_ (none here), total_weight_}:
  // the target is saved as a tensor (int64 in PyTorch, float32 here: the
  // runtime has one dtype) and the formula reads the unpacked one.
  std::vector<float> classes(target.begin(), target.end());
  const int64_t rows = log_probs.size(0);
  Tensor saved_target =
      Tensor::from_vector({rows}, std::move(classes)).to(log_probs.device());
  Tensor total_weight = Tensor::full({}, static_cast<float>(rows), log_probs.device());
  record("NllLossBackward0",
         [](const variable_list& g, const variable_list& s) -> variable_list {
           const Tensor &self = s[0], &target = s[1], &total_weight = s[3];
           std::vector<int64_t> classes;
           for (float c : target.to_vector()) classes.push_back(static_cast<int64_t>(c));
           // The kernel divides by the rows; the mean is over total_weight
           // (on the device: no sync for its value).
           const float rows = static_cast<float>(self.size(0));
           Tensor grad = scaled(bin(BinaryOp::kDiv, g[0], total_weight), rows);
           Tensor gi = Tensor::empty(self.shape(), self.device());
           k(grad).nll_loss_grad(grad, classes, gi);
           return {gi};
         },
         {log_probs}, out,
         {{"self", log_probs.detach()}, {"target", saved_target}, {"weight", Tensor()},
          {"total_weight", total_weight}});
  return out;
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& target) {
  return nll_loss(log_softmax(logits), target);
}

}  // namespace hookscope
