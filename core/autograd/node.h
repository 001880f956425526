#pragma once
// Node (a Function in PyTorch's older naming): one step of the backward graph.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autograd/hooks.h"
#include "autograd/saved_variable.h"
#include "autograd/variable.h"
#include "tensor/tensor.h"

namespace hookscope {

struct Edge {
  std::shared_ptr<Node> function;
  uint32_t input_nr = 0;
  bool is_valid() const { return function != nullptr; }
};
using edge_list = std::vector<Edge>;

// Hook signatures on a Node (see Note [Hook firing order]).
//  tensor pre hook: the gradient for one input of this Node; may replace it.
using TensorPreHookFn = TensorHookFn;
//  pre hook: all incoming gradients (grad_outputs of the forward op); may edit them.
// (HookFn: a move-only std::function that knows whether its callable needs a
// destructor, Note [Hook callables].)
using FunctionPreHookFn = HookFn<void(variable_list& grad_outputs)>;
//  post hook: the gradients this Node produced and the ones it received.
using FunctionPostHookFn =
    HookFn<void(variable_list& grad_inputs, const variable_list& grad_outputs)>;
// A Function's pre and post hooks: the first two live inside the Node
// (Note [Hook list storage]).
using PreHookList = HookList<FunctionPreHookFn, 2>;
using PostHookList = HookList<FunctionPostHookFn, 2>;

// Note [Hook firing order]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// When the engine runs a Node it fires, in this order (PyTorch 2.x
// engine.cpp call_function; NOTE [Hooks ordering] in function.h): tensor pre
// hooks (for a leaf's AccumulateGrad, the leaf's register_hook hooks), then
// retain_grad hooks, then pre hooks, then the Node itself (for
// AccumulateGrad: accumulate, then post-accumulate hooks), then post hooks.
// Hooks of one kind run in registration order. Tensor pre hooks (and
// retain_grad hooks) run whenever the engine reaches the Node, even when it
// will not execute (autograd::grad); pre and post hooks only when it
// executes. Every call emits kHookFired just before it (Note [Hook fire
// events]); hooks run with undefined gradients too (Note [Undefined
// gradients]). See also Note [Removing hooks while they fire] and
// docs/semantics.md.

namespace autograd {
class GraphTask;
}

class Node : public std::enable_shared_from_this<Node> {
 public:
  explicit Node(edge_list next_edges = {});
  virtual ~Node();
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  // Runs the backward computation: gradients w.r.t. this Node's forward
  // outputs in, gradients w.r.t. its forward inputs (one per next edge) out.
  virtual variable_list apply(variable_list&& grad_outputs) = 0;
  virtual std::string name() const = 0;
  // Frees saved tensors (backward without retain_graph).
  virtual void release_variables() {}

  uint64_t id() const { return id_; }
  uint64_t sequence_nr() const { return sequence_nr_; }
  const edge_list& next_edges() const { return next_edges_; }
  const Edge& next_edge(size_t i) const { return next_edges_.at(i); }
  uint32_t num_outputs() const { return static_cast<uint32_t>(next_edges_.size()); }
  uint32_t num_inputs() const { return num_inputs_; }

  // ---- hooks (Note [Hook keys]) ----
  HookKey add_tensor_pre_hook(TensorPreHookFn fn, uint32_t input_nr = 0,
                              OwnerId owner = user_owner());
  HookKey add_pre_hook(FunctionPreHookFn fn, OwnerId owner = user_owner());
  HookKey add_post_hook(FunctionPostHookFn fn, OwnerId owner = user_owner());
  HookKey add_retain_grad_hook(TensorPreHookFn fn, uint32_t input_nr, OwnerId owner);
  // kDefaultHookOwner as remover: the user (user_owner()).
  bool del_tensor_pre_hook(HookKey key, OwnerId remover = kDefaultHookOwner);
  bool del_pre_hook(HookKey key, OwnerId remover = kDefaultHookOwner);
  bool del_post_hook(HookKey key, OwnerId remover = kDefaultHookOwner);
  bool del_retain_grad_hook(HookKey key, OwnerId remover);

  // The legacy by-type sweep (PR #21591's rejected "solution 1"): removes
  // every post hook whose owner has kind `kind`, whoever that owner is.
  // Returns how many were removed; each removal is recorded with `remover`.
  size_t del_post_hooks_of_kind(OwnerKind kind, OwnerId remover);

  size_t num_tensor_pre_hooks() const { return tensor_pre_hooks().size(); }
  size_t num_pre_hooks() const { return pre_hooks_.size(); }
  size_t num_post_hooks() const { return post_hooks_.size(); }
  std::vector<const PostHookList::Entry*> post_hook_entries() const {
    return post_hooks_.live_entries();
  }

  // ---- used by the engine ----
  void call_tensor_pre_hooks(variable_list& grads);
  void call_pre_hooks(variable_list& grads);
  void call_post_hooks(variable_list& grad_inputs, const variable_list& grad_outputs);

  // Emits creation, name and edge events; called once the Node is wired.
  void record_created(uint8_t flags = 0, uint64_t previous_accumulator = 0);
  // Adds one next edge (op construction).
  void add_next_edge(Edge edge) { next_edges_.push_back(std::move(edge)); }
  void set_num_inputs(uint32_t n) { num_inputs_ = n; }

 protected:
  virtual HookList<TensorPreHookFn>& tensor_pre_hooks() { return tensor_pre_hooks_; }
  virtual const HookList<TensorPreHookFn>& tensor_pre_hooks() const {
    return tensor_pre_hooks_;
  }
  // Emits kHookRemoved for hooks still attached when the Node dies.
  void record_release_of_hooks();

  uint64_t id_;
  uint64_t sequence_nr_;
  // Note [Graph task slots] (engine.cpp): the task that reached this Node last.
  uint64_t task_stamp_ = 0;
  uint32_t task_slot_ = 0;
  friend class autograd::GraphTask;
  uint32_t num_inputs_ = 1;
  edge_list next_edges_;
  HookList<TensorPreHookFn> tensor_pre_hooks_;
  HookList<TensorPreHookFn> retains_grad_hooks_;
  PreHookList pre_hooks_;
  PostHookList post_hooks_;
};

// Ids and sequence numbers are drawn from process-wide counters and never reused.
uint64_t next_node_id();
uint64_t next_sequence_nr();

// A backward Node built from a closure. The tensors the op saves for backward
// are SavedVariables (Note [Saved tensor hooks]); the closure gets them
// unpacked, in the order given to save_for_backward. release_variables()
// frees them; running the Node again then throws (as PyTorch, only a Node
// that saved something refuses a second backward).
// Note [Undefined gradients]: when every incoming gradient is undefined the
// formula is not evaluated and every output gradient is undefined, as
// PyTorch's generated Functions do (`any_grad_defined ? formula : Tensor()`).
class FunctionNode : public Node {
 public:
  using Backward =
      std::function<variable_list(const variable_list& grad_outputs, const variable_list& saved)>;
  // A formula that saves nothing.
  using SimpleBackward = std::function<variable_list(const variable_list& grad_outputs)>;
  FunctionNode(const char* name, Backward backward);
  FunctionNode(const char* name, SimpleBackward backward);
  variable_list apply(variable_list&& grad_outputs) override;
  std::string name() const override { return name_; }
  void release_variables() override;
  // One field of what the op saves (Note [What each op saves], ops.cpp).
  struct SavedField {
    const char* name;             // PyTorch's field, without the underscore
    Tensor tensor;                // undefined: not saved (its guard was false)
    bool wrapped_number = false;  // never packed (Note [Saved tensor hooks])
  };
  // Saves tensors for backward (after the Node is wired and recorded, so
  // pack events name a known Function); the formula gets them in this order,
  // an unsaved field undefined (nothing is packed for it).
  void save_for_backward(std::initializer_list<SavedField> fields);
  size_t num_saved() const { return saved_.size(); }
  // The field name of saved slot `slot` (the slot in saved-tensor events);
  // "" when the op gave none.
  const char* saved_name(size_t slot) const;

 private:
  const char* name_;
  Backward backward_;
  std::vector<SavedVariable> saved_;
  std::vector<const char*> saved_names_;
};

// Accumulates the gradient into a leaf's .grad. Holds the leaf strongly; the
// leaf holds it weakly (Note [Leaf hooks live on the tensor]).
class AccumulateGrad : public Node {
 public:
  explicit AccumulateGrad(Tensor variable);
  ~AccumulateGrad() override;
  variable_list apply(variable_list&& grad_outputs) override;
  std::string name() const override { return "AccumulateGrad"; }
  const Tensor& variable() const { return variable_; }

 protected:
  HookList<TensorPreHookFn>& tensor_pre_hooks() override;
  const HookList<TensorPreHookFn>& tensor_pre_hooks() const override;

 private:
  Tensor variable_;
};

// Wires `node` as grad_fn of `outputs` with edges to `inputs`' grad
// functions, when grad mode is on and some input requires grad. Emits the
// creation events. Returns whether history was recorded.
bool set_history(const std::shared_ptr<Node>& node, const variable_list& inputs,
                 const std::vector<Tensor*>& outputs);

// The edge a gradient for `t` flows along: grad_fn (non-leaf) or the
// AccumulateGrad (leaf requiring grad); invalid for constants.
Edge gradient_edge(const Tensor& t);

}  // namespace hookscope
