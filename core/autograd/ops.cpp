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

// Records `backward` as the grad_fn of `out` if any input requires grad, and
// saves `saved` for it (Note [Saved tensor hooks]): the formula gets them back
// as its second argument, in this order.
void record(const char* name, FunctionNode::Backward backward, const variable_list& inputs,
            Tensor& out, const variable_list& saved = {}) {
  if (!GradMode::is_enabled()) return;
  bool any = false;
  for (const Tensor& t : inputs) any = any || t.requires_grad();
  if (!any) return;
  auto node = std::make_shared<FunctionNode>(name, std::move(backward));
  if (set_history(node, inputs, {&out})) node->save_for_backward(saved);
}

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
         {a}, out, {saved});
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

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op("mul", BinaryOp::kMul, a, b);
  record("MulBackward0",
         [](const variable_list& g, const variable_list& s) -> variable_list {
           return {bin(BinaryOp::kMul, g[0], s[1]), bin(BinaryOp::kMul, g[0], s[0])};
         },
         {a, b}, out, {a.detach(), b.detach()});
  return out;
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor out = binary_op("div", BinaryOp::kDiv, a, b);
  record("DivBackward0",
         [](const variable_list& g, const variable_list& s) -> variable_list {
           Tensor ga = bin(BinaryOp::kDiv, g[0], s[0]);             // g / b
           Tensor gb = scaled(bin(BinaryOp::kMul, ga, s[1]), -1.f);  // -g * (a/b) / b
           return {ga, gb};
         },
         {a, b}, out, {b.detach(), out.detach()});
  return out;
}

Tensor mul_scalar(const Tensor& a, float s) {
  check_defined("mul_scalar", a);
  Tensor out = scaled(a, s);
  record("MulBackward1", [s](const variable_list& g, const variable_list&) -> variable_list { return {scaled(g[0], s)}; },
         {a}, out);
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
  return unary_with_grad("relu", "ReluBackward0", UnaryOp::kRelu, UnaryGradOp::kRelu, false, a);
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
  // step's FLOPs.
  record("MmBackward0",
         [need_a = a.requires_grad(), need_b = b.requires_grad()](
             const variable_list& g, const variable_list& s) -> variable_list {
           const Tensor &sa = s[0], &sb = s[1];
           Tensor ga, gb;
           if (need_a) {
             ga = like(sa);
             k(g[0]).matmul(g[0], false, sb, true, ga);  // g @ b^T
           }
           if (need_b) {
             gb = like(sb);
             k(g[0]).matmul(sa, true, g[0], false, gb);  // a^T @ g
           }
           return {ga, gb};
         },
         {a, b}, out, {a.detach(), b.detach()});
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
  Tensor mm = Tensor::empty({x.size(0), weight.size(0)}, x.device());
  k(x).matmul(x, false, weight, true, mm);
  Tensor out = like(mm);
  k(x).add_bias(mm, bias, out);
  const int64_t out_features = weight.size(0);
  record("AddmmBackward0",  // Note [Gradients nobody asked for]
         [out_features, need_x = x.requires_grad(), need_w = weight.requires_grad(),
          need_b = bias.requires_grad()](const variable_list& g,
                                         const variable_list& s) -> variable_list {
           const Tensor &sx = s[0], &sw = s[1];
           Tensor gx, gw, gb;
           if (need_x) {
             gx = like(sx);
             k(g[0]).matmul(g[0], false, sw, false, gx);  // g @ W
           }
           if (need_w) {
             gw = like(sw);
             k(g[0]).matmul(g[0], true, sx, false, gw);  // g^T @ x
           }
           if (need_b) {
             gb = Tensor::empty({out_features}, g[0].device());
             k(g[0]).sum_rows(g[0], gb);
           }
           return {gx, gw, gb};
         },
         {x, weight, bias}, out, {x.detach(), weight.detach()});
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
  record("AddBiasBackward0",
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
  record("MseLossBackward0",
         [n](const variable_list& g, const variable_list& s) -> variable_list {
           const Tensor& diff = s[0];
           Tensor coeff = Tensor::empty(diff.shape(), diff.device());
           k(diff).broadcast_scalar(g[0], 2.f / n, coeff);
           Tensor gi = bin(BinaryOp::kMul, coeff, diff);
           return {gi, scaled(gi, -1.f)};
         },
         {input, target}, out, {diff});
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
         {logits}, out, {out.detach()});
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
  Shape shape = log_probs.shape();
  Device dev = log_probs.device();
  record("NllLossBackward0",
         [shape, dev, target](const variable_list& g, const variable_list&) -> variable_list {
           Tensor gi = Tensor::empty(shape, dev);
           k(g[0]).nll_loss_grad(g[0], target, gi);
           return {gi};
         },
         {log_probs}, out);
  return out;
}

Tensor cross_entropy(const Tensor& logits, const std::vector<int64_t>& target) {
  return nll_loss(log_softmax(logits), target);
}

}  // namespace hookscope
