#include "autograd/node.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "autograd/multi_grad_hook.h"
#include "trace/emitters_autograd.h"
#include "trace/strings.h"

namespace hookscope {

using trace::RemoveCause;

namespace {
std::atomic<uint64_t> g_next_node_id{1};
std::atomic<uint64_t> g_next_sequence_nr{0};
std::atomic<uint64_t> g_next_hook_key{1};

struct OwnerRegistry {
  std::mutex mutex;
  std::unordered_map<OwnerId, HookOwner> owners;
  OwnerId next = 1;
};
OwnerRegistry& owners() {
  static OwnerRegistry* r = new OwnerRegistry();  // outlives thread-exit paths
  return *r;
}

// A trace that starts after some owners were created still names them.
void emit_live_owners() {
  std::vector<HookOwner> live;
  {
    OwnerRegistry& r = owners();
    std::lock_guard<std::mutex> lock(r.mutex);
    for (auto& [id, o] : r.owners) live.push_back(o);
  }
  std::sort(live.begin(), live.end(),
            [](const HookOwner& a, const HookOwner& b) { return a.id < b.id; });
  for (const HookOwner& o : live) {
    trace::emit_owner_created(o.id, o.kind, trace::intern(o.label), /*from_snapshot=*/true);
  }
}
const bool g_owner_snapshot_registered = (trace::add_start_callback(&emit_live_owners), true);
}  // namespace

uint64_t next_node_id() { return g_next_node_id.fetch_add(1, std::memory_order_relaxed); }
uint64_t next_sequence_nr() {
  return g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed);
}

namespace detail {
thread_local constinit HookSerials t_hook_serials;

uint64_t refill_hook_serials() {
  const uint64_t first = g_next_hook_key.fetch_add(kHookSerialBatch, std::memory_order_relaxed);
  t_hook_serials.next = first + 1;
  t_hook_serials.end = first + kHookSerialBatch;
  return first;
}

void throw_too_many_hooks() {
  throw std::length_error("more than 16M hooks of one kind on one Function");
}
}  // namespace detail

// ---- owners -----------------------------------------------------------------

OwnerId create_owner(OwnerKind kind, std::string label) {
  OwnerRegistry& r = owners();
  OwnerId id;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    id = r.next++;
    r.owners[id] = HookOwner{kind, id, label};
  }
  if (trace::recording()) {
    trace::emit_owner_created(id, kind, trace::intern(label));
  }
  return id;
}

void destroy_owner(OwnerId id) {
  {
    OwnerRegistry& r = owners();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.owners.erase(id);
  }
  trace::emit_owner_destroyed(id);
}

HookOwner owner_info(OwnerId id) {
  OwnerRegistry& r = owners();
  std::lock_guard<std::mutex> lock(r.mutex);
  auto it = r.owners.find(id);
  if (it == r.owners.end()) return HookOwner{OwnerKind::kUser, id, "?"};
  return it->second;
}

OwnerId user_owner() {
  static const OwnerId id = create_owner(OwnerKind::kUser, "user");
  return id;
}

// ---- Node -------------------------------------------------------------------

Node::Node(edge_list next_edges)
    : id_(next_node_id()), sequence_nr_(next_sequence_nr()),
      next_edges_(std::move(next_edges)) {}

Node::~Node() {
  record_release_of_hooks();
  trace::emit_node_released(id_);
}

void Node::record_created(uint8_t flags, uint64_t previous_accumulator) {
  if (!trace::recording()) return;
  trace::emit_node_created(id_, trace::intern(name()), flags, previous_accumulator);
  for (const Edge& e : next_edges_) {
    if (e.function) trace::emit_node_edge(id_, e.function->id(), e.input_nr);
  }
}

void Node::record_release_of_hooks() {
  if (!trace::recording()) return;
  auto emit_all = [this](const auto& list, HookKind kind) {
    for (const auto* e : list.live_entries()) {
      trace::emit_hook_removed(id_, e->key.value, kind, e->owner, 0, RemoveCause::kNodeReleased);
    }
  };
  // A leaf's tensor hooks live on the tensor and survive this Node.
  emit_all(tensor_pre_hooks_, HookKind::kTensorPre);
  emit_all(retains_grad_hooks_, HookKind::kRetainGrad);
  emit_all(pre_hooks_, HookKind::kPre);
  emit_all(post_hooks_, HookKind::kPost);
}

namespace {

template <class List, class Fn>
HookKey add_hook(Node& node, List& list, HookKind kind, Fn&& fn, OwnerId owner,
                 uint32_t input_nr) {
  HookKey key = list.add(std::move(fn), owner, input_nr);
  trace::emit_hook_added(node.id(), key.value, kind, owner, input_nr);
  return key;
}

template <class List>
[[gnu::noinline, gnu::cold]] bool del_hook_recorded(Node& node, List& list, HookKind kind,
                                                    HookKey key, OwnerId remover,
                                                    RemoveCause cause) {
  remover = resolve_owner(remover);
  OwnerId owner = 0;
  if (!list.remove(key, &owner)) {
    trace::emit_hook_remove_failed(node.id(), key.value, kind, remover);
    return false;
  }
  trace::emit_hook_removed(node.id(), key.value, kind, owner, remover, cause);
  return true;
}

// Not recording, removal reads no more than the slot (the owner sits off it,
// Note [Hook list storage]).
template <class List>
bool del_hook(Node& node, List& list, HookKind kind, HookKey key, OwnerId remover,
              RemoveCause cause = RemoveCause::kByKey) {
  if (__builtin_expect(trace::recording(), 0)) {
    return del_hook_recorded(node, list, kind, key, remover, cause);
  }
  return list.remove(key);
}

}  // namespace

HookKey Node::add_tensor_pre_hook(TensorPreHookFn fn, uint32_t input_nr, OwnerId owner) {
  if (input_nr >= num_inputs_) {
    throw std::out_of_range("add_tensor_pre_hook: input_nr " + std::to_string(input_nr) +
                            " but " + name() + " has " + std::to_string(num_inputs_) +
                            " input(s)");
  }
  return add_hook(*this, tensor_pre_hooks(), HookKind::kTensorPre, std::move(fn), owner,
                  input_nr);
}
HookKey Node::add_retain_grad_hook(TensorPreHookFn fn, uint32_t input_nr, OwnerId owner) {
  return add_hook(*this, retains_grad_hooks_, HookKind::kRetainGrad, std::move(fn), owner,
                  input_nr);
}
HookKey Node::add_pre_hook(FunctionPreHookFn fn, OwnerId owner) {
  return add_hook(*this, pre_hooks_, HookKind::kPre, std::move(fn), owner, 0);
}
HookKey Node::add_post_hook(FunctionPostHookFn fn, OwnerId owner) {
  return add_hook(*this, post_hooks_, HookKind::kPost, std::move(fn), owner, 0);
}

bool Node::del_tensor_pre_hook(HookKey key, OwnerId remover) {
  return del_hook(*this, tensor_pre_hooks(), HookKind::kTensorPre, key, remover);
}
bool Node::del_retain_grad_hook(HookKey key, OwnerId remover) {
  return del_hook(*this, retains_grad_hooks_, HookKind::kRetainGrad, key, remover);
}
bool Node::del_pre_hook(HookKey key, OwnerId remover) {
  return del_hook(*this, pre_hooks_, HookKind::kPre, key, remover);
}
bool Node::del_post_hook(HookKey key, OwnerId remover) {
  return del_hook(*this, post_hooks_, HookKind::kPost, key, remover);
}

size_t Node::del_post_hooks_of_kind(OwnerKind kind, OwnerId remover) {
  std::vector<HookKey> doomed;
  for (const auto* e : post_hooks_.live_entries()) {
    if (owner_info(e->owner).kind == kind) doomed.push_back(e->key);
  }
  for (HookKey k : doomed) {
    del_hook(*this, post_hooks_, HookKind::kPost, k, remover, RemoveCause::kByType);
  }
  return doomed.size();
}

// ---- firing -----------------------------------------------------------------

namespace {
// Note [Hook fire events]
// ~~~~~~~~~~~~~~~~~~~~~~~
// kHookFired is emitted immediately before the hook is called, and only then:
// one event per call, none for a hook that does not run. Hooks run whether
// their gradient is defined or not (PyTorch passes None: python_hook.cpp
// PyFunctionTensorPreHook wraps an undefined tensor as None and calls every
// hook of the snapshot), so no hook of a list that fires is ever skipped.
void fire_tensor_hooks(Node& node, HookList<TensorPreHookFn>& list, HookKind kind,
                       variable_list& grads) {
  list.fire([&](const auto& e, TensorPreHookFn& fn) {
    if (e.input_nr >= grads.size()) {
      throw std::logic_error("tensor pre hook on " + node.name() + " for input " +
                             std::to_string(e.input_nr) + " of " +
                             std::to_string(grads.size()));
    }
    // A multi-grad hook's tensor hooks: their function's calls are the fires (Note [Multi-grad hooks]).
    if (!autograd::fire_written_by_hook(e.key.value)) {
      trace::emit_hook_fired(node.id(), e.key.value, kind, e.owner);
    }
    Tensor& grad = grads[e.input_nr];
    Tensor replaced = fn(grad);
    if (!replaced.defined()) return;  // an undefined result keeps the gradient (Python: None)
    if (!grad.defined()) {
      throw std::runtime_error("hook on " + node.name() +
                               " returned a gradient where the incoming gradient is undefined; "
                               "a tensor hook can't replace an undefined gradient (return an "
                               "undefined Tensor to keep it)");
    }
    if (replaced.shape() != grad.shape()) {
      throw std::runtime_error("hook on " + node.name() + " returned a gradient of shape " +
                               shape_str(replaced.shape()) + " for one of shape " +
                               shape_str(grad.shape()) +
                               "; a tensor hook must keep the gradient's shape");
    }
    grad = std::move(replaced);
  });
}
}  // namespace

void Node::call_tensor_pre_hooks(variable_list& grads) {
  fire_tensor_hooks(*this, tensor_pre_hooks(), HookKind::kTensorPre, grads);
  fire_tensor_hooks(*this, retains_grad_hooks_, HookKind::kRetainGrad, grads);
}

void Node::call_pre_hooks(variable_list& grads) {
  pre_hooks_.fire([&](const auto& e, FunctionPreHookFn& fn) {
    trace::emit_hook_fired(id_, e.key.value, HookKind::kPre, e.owner);
    fn(grads);
  });
}

void Node::call_post_hooks(variable_list& grad_inputs, const variable_list& grad_outputs) {
  post_hooks_.fire([&](const auto& e, FunctionPostHookFn& fn) {
    trace::emit_hook_fired(id_, e.key.value, HookKind::kPost, e.owner);
    fn(grad_inputs, grad_outputs);
  });
}

// ---- FunctionNode -----------------------------------------------------------

FunctionNode::FunctionNode(const char* name, Backward backward)
    : name_(name), backward_(std::move(backward)) {}

FunctionNode::FunctionNode(const char* name, SimpleBackward backward)
    : name_(name),
      backward_([fn = std::move(backward)](const variable_list& g, const variable_list&) {
        return fn(g);
      }) {}

void FunctionNode::save_for_backward(std::initializer_list<SavedField> fields) {
  saved_.reserve(saved_.size() + fields.size());
  for (const SavedField& f : fields) {
    saved_names_.push_back(f.name);
    saved_.emplace_back(f.tensor, *this, static_cast<uint32_t>(saved_.size()),
                        f.wrapped_number);
  }
}

const char* FunctionNode::saved_name(size_t slot) const { return saved_names_.at(slot); }

variable_list FunctionNode::apply(variable_list&& grad_outputs) {
  // Saved tensors are unpacked on every run, whether or not a gradient is
  // defined (as PyTorch's generated apply() does).
  variable_list saved;
  saved.reserve(saved_.size());
  for (const SavedVariable& s : saved_) saved.push_back(s.unpack(*this));
  bool any_defined = false;
  for (const Tensor& g : grad_outputs) any_defined = any_defined || g.defined();
  if (!any_defined) return variable_list(num_outputs());  // Note [Undefined gradients]
  return backward_(grad_outputs, saved);
}

void FunctionNode::release_variables() {
  for (SavedVariable& s : saved_) s.reset();
}

}  // namespace hookscope
