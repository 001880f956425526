#include "autograd/engine.h"

#include <atomic>
#include <queue>
#include <stdexcept>
#include <unordered_map>
#include <utility>
#include <vector>

#include "autograd/node.h"
#include "tensor/kernels.h"
#include "trace/emitters_autograd.h"

namespace hookscope::autograd {

namespace {

thread_local bool tl_in_backward = false;
thread_local std::vector<std::function<void()>>* tl_final_callbacks = nullptr;

struct NodeState {
  Node* node = nullptr;
  int dependencies = 0;
  bool relevant = false;  // on a path to something the task wants
  bool executes = false;  // runs apply (and pre/post hooks)
  bool target = false;    // backward(inputs=...): one of the inputs' Functions
  bool queued = false;
  variable_list buffer;   // incoming gradients, one per input
  std::vector<std::pair<uint32_t, size_t>> captures;  // (input_nr, result slot)
};

std::atomic<uint64_t> g_next_task_stamp{1};

}  // namespace

class GraphTask;
namespace {
thread_local GraphTask* tl_task = nullptr;  // the pass running on this thread
}  // namespace

// Note [Graph task slots]
// A graph task numbers the Functions it reaches in discovery order and keeps
// their state in a flat vector; each Node remembers (task stamp, slot) of the
// task that reached it last, so finding a Node's state is two loads, not a
// hash lookup. A graph is run by one backward at a time.
class GraphTask {
 public:
  GraphTask(bool retain_graph, bool accumulate)
      : retain_graph_(retain_graph), accumulate_(accumulate),
        stamp_(g_next_task_stamp.fetch_add(1, std::memory_order_relaxed)) {}

  // Runs the task from `roots` seeded with `grads`. For grad(), `capture`
  // lists the edges whose incoming gradient is the result. For
  // backward(inputs=...), `targets` lists the inputs' Functions: only they
  // and what leads to them run.
  variable_list run(const std::vector<Edge>& roots, const variable_list& grads,
                    const std::vector<Edge>& capture, const std::vector<Edge>& targets = {}) {
    struct Current {
      GraphTask* previous;
      explicit Current(GraphTask* t) : previous(tl_task) { tl_task = t; }
      ~Current() { tl_task = previous; }
    } current(this);
    discover(roots);
    for (size_t i = 0; i < capture.size(); ++i) {
      if (NodeState* s = state(capture[i].function.get())) {
        s->captures.emplace_back(capture[i].input_nr, i);
      }
    }
    for (const Edge& t : targets) {
      if (NodeState* s = state(t.function.get())) s->target = true;
    }
    mark_relevant(!targets.empty());
    count_dependencies();

    for (size_t i = 0; i < roots.size(); ++i) add_input(*state(roots[i].function.get()), roots[i], grads[i]);
    for (const Edge& r : roots) {
      NodeState& s = *state(r.function.get());
      if (s.dependencies == 0 && s.relevant && !s.queued) push(s);
    }

    variable_list results(capture.size());
    while (!ready_.empty()) {
      const uint32_t slot = ready_.top().slot;
      ready_.pop();
      evaluate(states_[slot], results);
    }
    return results;
  }

  size_t executed() const { return executed_; }
  uint64_t id() const { return stamp_; }
  // PyTorch's GraphTask exec_info_ test: the Node runs, or a gradient is
  // captured at it (grad()).
  bool will_execute(Node* n) {
    const NodeState* s = state(n);
    return s && s->relevant && (s->executes || !s->captures.empty());
  }

 private:
  struct ReadyEntry {
    uint64_t sequence_nr;
    uint32_t slot;
    bool operator<(const ReadyEntry& o) const { return sequence_nr < o.sequence_nr; }
  };

  NodeState* state(Node* n) {
    return n->task_stamp_ == stamp_ ? &states_[n->task_slot_] : nullptr;
  }

  void visit(Node* n, std::vector<Node*>& stack) {
    if (n->task_stamp_ == stamp_) return;
    n->task_stamp_ = stamp_;
    n->task_slot_ = static_cast<uint32_t>(states_.size());
    states_.emplace_back();
    states_.back().node = n;
    stack.push_back(n);
  }

  void discover(const std::vector<Edge>& roots) {
    std::vector<Node*> stack;
    for (const Edge& r : roots) visit(r.function.get(), stack);
    while (!stack.empty()) {
      Node* n = stack.back();
      stack.pop_back();
      for (const Edge& e : n->next_edges()) {
        if (e.function) visit(e.function.get(), stack);
      }
    }
  }

  // backward(): everything reachable runs. backward(inputs=...): the
  // inputs' Functions run, and the Functions on a path to them. grad():
  // only Functions on a path to a captured edge are relevant, and only those
  // with a relevant successor run (so AccumulateGrad never runs). As
  // PyTorch's GraphTask::init_to_execute (needed_ / captures_).
  void mark_relevant(bool has_targets) {
    if (accumulate_ && !has_targets) {
      for (NodeState& s : states_) s.relevant = s.executes = true;
      return;
    }
    // Fixed point over the reachable set; the graph is a DAG, so iterating
    // in reverse discovery order converges in a few sweeps.
    for (NodeState& s : states_) {
      s.relevant = !s.captures.empty() || s.target;
      s.executes = s.target;
    }
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto it = states_.rbegin(); it != states_.rend(); ++it) {
        for (const Edge& e : it->node->next_edges()) {
          if (e.function && state(e.function.get())->relevant && !it->executes) {
            it->relevant = it->executes = true;
            changed = true;
          }
        }
      }
    }
  }

  void count_dependencies() {
    for (NodeState& s : states_) {
      if (!s.executes) continue;
      for (const Edge& e : s.node->next_edges()) {
        if (!e.function) continue;
        NodeState* next = state(e.function.get());
        if (next->relevant) ++next->dependencies;
      }
    }
  }

  void add_input(NodeState& s, const Edge& edge, const Tensor& grad) {
    if (s.buffer.empty()) s.buffer.resize(edge.function->num_inputs());
    if (!grad.defined()) return;
    Tensor& slot = s.buffer.at(edge.input_nr);
    if (!slot.defined()) {
      slot = grad;
    } else {
      Tensor sum = Tensor::empty(slot.shape(), slot.device());
      kernels_for(slot.device()).binary(BinaryOp::kAdd, slot, grad, sum);
      slot = sum;
    }
  }

  void push(NodeState& s) {
    s.queued = true;
    ready_.push(ReadyEntry{s.node->sequence_nr(), s.node->task_slot_});
  }

  // Note [Captures and tensor pre hooks]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
  // As PyTorch 2.x Engine::evaluate_function: a Node that will not execute
  // (a captured input's Function in grad()) runs its tensor pre hooks and is
  // captured after them; a Node that executes anyway (it leads to another
  // captured input) is captured from its raw incoming gradients, before its
  // tensor pre hooks, which then run once, inside call_function.
  void evaluate(NodeState& s, variable_list& results) {
    Node* node = s.node;
    variable_list grads = std::move(s.buffer);
    if (grads.empty()) grads.resize(node->num_inputs());
    if (!s.executes) {
      node->call_tensor_pre_hooks(grads);
      for (auto [input_nr, slot] : s.captures) results[slot] = grads.at(input_nr);
      return;
    }
    for (auto [input_nr, slot] : s.captures) results[slot] = grads.at(input_nr);

    // call_function: every hook runs, defined gradients or not (Note
    // [Undefined gradients]).
    node->call_tensor_pre_hooks(grads);
    node->call_pre_hooks(grads);
    trace::emit_apply_begin(node->id());
    variable_list outputs;
    // Post hooks see the incoming gradients too; copy them only for those.
    if (node->num_post_hooks() == 0) {
      outputs = node->apply(std::move(grads));
    } else {
      outputs = node->apply(variable_list(grads));
    }
    trace::emit_apply_end(node->id());
    ++executed_;
    outputs.resize(node->num_outputs());
    node->call_post_hooks(outputs, grads);
    if (outputs.size() != node->num_outputs()) {
      throw std::runtime_error("a post hook on " + node->name() + " changed the number of "
                               "gradients from " + std::to_string(node->num_outputs()) +
                               " to " + std::to_string(outputs.size()) +
                               "; a post hook may replace gradients, not add or drop them");
    }
    if (!retain_graph_) node->release_variables();
    const edge_list& edges = node->next_edges();
    for (size_t i = 0; i < edges.size(); ++i) {
      const Edge& e = edges[i];
      if (!e.function) continue;
      NodeState& next = *state(e.function.get());
      if (!next.relevant) continue;
      add_input(next, e, outputs[i]);
      if (--next.dependencies == 0) push(next);
    }
  }

  bool retain_graph_;
  bool accumulate_;
  uint64_t stamp_;
  size_t executed_ = 0;
  std::vector<NodeState> states_;
  std::priority_queue<ReadyEntry> ready_;
};

namespace {

class BackwardScope {
 public:
  BackwardScope(size_t roots, bool grad_mode) {
    if (tl_in_backward) {
      throw std::logic_error(
          "backward() or grad() was called from inside a hook while this thread is "
          "running a backward pass; hookscope's engine is not reentrant. Record what you "
          "need in the hook and run the second backward after the first returns.");
    }
    tl_in_backward = true;
    tl_final_callbacks = &callbacks;
    trace::emit_backward_begin(roots, grad_mode);
  }
  ~BackwardScope() {
    tl_in_backward = false;
    tl_final_callbacks = nullptr;
    trace::emit_backward_end(executed, completed);
  }
  // Runs the queued final callbacks (they may queue more).
  void run_callbacks() {
    for (size_t i = 0; i < callbacks.size(); ++i) {
      auto cb = std::move(callbacks[i]);
      cb();
    }
    callbacks.clear();
  }
  bool completed = false;
  size_t executed = 0;
  std::vector<std::function<void()>> callbacks;
  // Note [No double backward]
  // ~~~~~~~~~~~~~~~~~~~~~~~~~
  // The pass runs with grad mode off, as PyTorch's with create_graph=False
  // (GraphTask's thread-local grad mode): formulas, hooks and final
  // callbacks record no history, so a gradient never has a grad_fn and
  // differentiating it again fails at once ("does not require grad",
  // make_roots) instead of giving numbers that follow only what a hook
  // computed. create_graph is not offered (docs/semantics.md I3).
  NoGradGuard no_grad;
};

// Roots and their seed gradients, validated as PyTorch validates them.
std::pair<std::vector<Edge>, variable_list> make_roots(const variable_list& roots,
                                                       const variable_list& grad_roots) {
  if (roots.empty()) throw std::invalid_argument("backward: no tensors to differentiate");
  if (!grad_roots.empty() && grad_roots.size() != roots.size()) {
    throw std::invalid_argument("backward: got " + std::to_string(grad_roots.size()) +
                                " gradients for " + std::to_string(roots.size()) +
                                " tensors");
  }
  std::vector<Edge> edges;
  variable_list grads;
  for (size_t i = 0; i < roots.size(); ++i) {
    const Tensor& r = roots[i];
    Edge e = gradient_edge(r);
    if (!e.is_valid()) {
      throw std::invalid_argument(
          "element " + std::to_string(i) +
          " of tensors does not require grad and does not have a grad_fn (a gradient that "
          "backward() or grad() returned has no history: hookscope's runtime has no "
          "create_graph, so double backward is not supported)");
    }
    Tensor g = grad_roots.empty() ? Tensor() : grad_roots[i];
    if (!g.defined()) {
      if (r.numel() != 1) {
        throw std::invalid_argument(
            "grad can be implicitly created only for scalar outputs; tensor " +
            std::to_string(i) + " has shape " + shape_str(r.shape()) +
            " (pass its gradient explicitly)");
      }
      g = Tensor::full(r.shape(), 1.f, r.device());
    } else if (g.shape() != r.shape()) {
      throw std::invalid_argument("backward: gradient " + std::to_string(i) + " has shape " +
                                  shape_str(g.shape()) + " but its tensor has shape " +
                                  shape_str(r.shape()));
    }
    edges.push_back(std::move(e));
    grads.push_back(std::move(g));
  }
  return {std::move(edges), std::move(grads)};
}

}  // namespace

int64_t current_graph_task_id() { return tl_task ? static_cast<int64_t>(tl_task->id()) : -1; }

bool will_engine_execute_node(Node& node) {
  if (tl_task == nullptr) {
    throw std::logic_error("will_engine_execute_node should only be called during the backward pass");
  }
  return tl_task->will_execute(&node);
}

void queue_callback(std::function<void()> callback) {
  if (tl_final_callbacks == nullptr) {
    throw std::logic_error("queue_callback: no backward pass is running on this thread");
  }
  tl_final_callbacks->push_back(std::move(callback));
}

void backward(const variable_list& roots, const variable_list& grad_roots,
              bool retain_graph, const variable_list& inputs) {
  auto [edges, grads] = make_roots(roots, grad_roots);
  // backward(inputs=...): as torch.autograd.backward, a non-leaf input
  // retains its gradient (retain_grad() is called on it, and stays); a leaf's
  // AccumulateGrad is used only if it exists (none means unreachable).
  std::vector<Edge> targets;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& t = inputs[i];
    if (!t.defined() || !t.requires_grad()) {
      throw std::invalid_argument("backward: input " + std::to_string(i) +
                                  " does not require grad (every tensor in inputs= must)");
    }
    if (!t.is_leaf()) {
      Tensor(t).retain_grad();  // shares t's impl
      targets.push_back(Edge{t.grad_fn(), t.output_nr()});
    } else if (auto* meta = t.autograd_meta()) {
      if (auto acc = meta->grad_accumulator.lock()) targets.push_back(Edge{acc, 0});
    }
  }
  BackwardScope scope(roots.size(), false);
  GraphTask task(retain_graph, /*accumulate=*/true);
  if (!inputs.empty() && targets.empty()) {
    // No input is reachable from the roots: nothing runs (PyTorch allows it).
    scope.run_callbacks();
    scope.completed = true;
    return;
  }
  task.run(edges, grads, {}, targets);
  scope.executed = task.executed();
  scope.run_callbacks();
  scope.completed = true;
}

variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs, bool retain_graph, bool allow_unused) {
  auto [edges, grads] = make_roots(outputs, grad_outputs);
  std::vector<Edge> capture;
  for (size_t i = 0; i < inputs.size(); ++i) {
    Edge e = gradient_edge(inputs[i]);
    if (!e.is_valid()) {
      throw std::invalid_argument("grad: input " + std::to_string(i) +
                                  " does not require grad");
    }
    capture.push_back(std::move(e));
  }
  BackwardScope scope(outputs.size(), true);
  GraphTask task(retain_graph, /*accumulate=*/false);
  variable_list result = task.run(edges, grads, capture);
  scope.executed = task.executed();
  scope.run_callbacks();
  for (size_t i = 0; i < result.size(); ++i) {
    if (!result[i].defined() && !allow_unused) {
      throw std::invalid_argument(
          "grad: input " + std::to_string(i) +
          " appears not to have been used in the graph; pass allow_unused=true if that is "
          "intended");
    }
  }
  scope.completed = true;
  return result;
}

}  // namespace hookscope::autograd
