#pragma once
// The backward engine: dependency counting from the roots and a ready queue
// ordered as PyTorch's CPU queue (AccumulateGrad first, then the most
// recently created Function).

#include <cstdint>
#include <functional>

#include "tensor/tensor.h"

namespace hookscope::autograd {

// Accumulates d(roots)/d(leaf) into every reachable leaf's .grad.
// `grad_roots[i]` may be undefined for a single-element root (implicit 1).
// Without retain_graph the graph's saved tensors are freed as it runs.
// Calling backward or grad from inside a hook while this thread is running a
// backward pass throws (the engine is not reentrant).
// `inputs` (torch.autograd.backward's inputs=): when not empty, gradients are
// accumulated only into these tensors (.grad of a non-leaf input is retained,
// as PyTorch does); only the Functions leading to them run, so no other
// hooks fire. create_graph (double backward) is not supported: backward
// formulas never record history (docs/semantics.md).
void backward(const variable_list& roots, const variable_list& grad_roots = {},
              bool retain_graph = false, const variable_list& inputs = {});

// Returns d(outputs)/d(inputs) without touching any .grad: AccumulateGrad
// does not run, as in torch.autograd.grad. With allow_unused, an input the
// outputs do not depend on gets an undefined tensor; otherwise that throws.
variable_list grad(const variable_list& outputs, const variable_list& inputs,
                   const variable_list& grad_outputs = {}, bool retain_graph = false,
                   bool allow_unused = false);

// Queues `callback` to run on this thread when the running backward pass has
// executed every Function (PyTorch's Engine::queue_callback; DDP's Reducer
// finalizes its buckets there). Callbacks run in order and may queue more.
// Throws when no backward pass is running on this thread.
void queue_callback(std::function<void()> callback);

// The backward pass running on this thread: a number no other pass in the
// process has (torch._C._current_graph_task_id), -1 when none runs.
int64_t current_graph_task_id();
// Whether the running pass will run `node` or capture a gradient at it
// (torch._C._will_engine_execute_node). Throws when no pass runs.
bool will_engine_execute_node(Node& node);

}  // namespace hookscope::autograd
