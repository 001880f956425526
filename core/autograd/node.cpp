#include "autograd/node.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <stdexcept>
#include <unordered_map>

#include "trace/emit.h"
#include "trace/strings.h"

namespace hookscope {

using trace::EventKind;
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

uint8_t kind_byte(HookKind k) { return static_cast<uint8_t>(k); }

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
    trace::emit(EventKind::kOwnerCreated, static_cast<uint8_t>(o.kind), 0, 0,
                trace::intern(o.label), o.id, trace::kOwnerFromSnapshot);
  }
}
const bool g_owner_snapshot_registered = (trace::add_start_callback(&emit_live_owners), true);
}  // namespace

uint64_t next_node_id() { return g_next_node_id.fetch_add(1, std::memory_order_relaxed); }
uint64_t next_sequence_nr() {
  return g_next_sequence_nr.fetch_add(1, std::memory_order_relaxed);
}
HookKey next_hook_key_for_slot(uint32_t slot) {
  if (slot >= (1u << kHookSlotBits)) {
    throw std::length_error("more than 16M hooks of one kind on one Function");
  }
  const uint64_t serial = g_next_hook_key.fetch_add(1, std::memory_order_relaxed);
  return HookKey{(serial << kHookSlotBits) | slot};
}

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
    trace::emit(EventKind::kOwnerCreated, static_cast<uint8_t>(kind), 0, 0,
                trace::intern(label), id);
  }
  return id;
}

void destroy_owner(OwnerId id) {
  {
    OwnerRegistry& r = owners();
    std::lock_guard<std::mutex> lock(r.mutex);
    r.owners.erase(id);
  }
  trace::emit(EventKind::kOwnerDestroyed, 0, 0, 0, 0, id);
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
  trace::emit(EventKind::kNodeReleased, 0, id_);
}

void Node::record_created(uint8_t flags, uint64_t previous_accumulator) {
  if (!trace::recording()) return;
  trace::emit(EventKind::kNodeCreated, flags, id_, previous_accumulator,
              trace::intern(name()));
  for (const Edge& e : next_edges_) {
    if (e.function) {
      trace::emit(EventKind::kNodeEdge, 0, id_, 0, e.function->id(), 0, e.input_nr);
    }
  }
}

void Node::record_release_of_hooks() {
  if (!trace::recording()) return;
  auto emit_all = [this](const auto& list, HookKind kind) {
    for (const auto* e : list.live_entries()) {
      trace::emit(EventKind::kHookRemoved, kind_byte(kind), id_, e->key.value,
                  static_cast<uint64_t>(RemoveCause::kNodeReleased), e->owner, 0);
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
HookKey add_hook(Node& node, List& list, HookKind kind, Fn fn, OwnerId owner,
                 uint32_t input_nr) {
  HookKey key = list.add(std::move(fn), owner, input_nr);
  trace::emit(EventKind::kHookAdded, kind_byte(kind), node.id(), key.value, input_nr,
              owner);
  return key;
}

template <class List>
bool del_hook(Node& node, List& list, HookKind kind, HookKey key, OwnerId remover,
              RemoveCause cause = RemoveCause::kByKey) {
  OwnerId owner = 0;
  if (!list.remove(key, &owner)) {
    trace::emit(EventKind::kHookRemoveFailed, kind_byte(kind), node.id(), key.value, 0,
                0, remover);
    return false;
  }
  trace::emit(EventKind::kHookRemoved, kind_byte(kind), node.id(), key.value,
              static_cast<uint64_t>(cause), owner, remover);
  return true;
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
void fire_event(const Node& node, HookKind kind, HookKey key, OwnerId owner) {
  trace::emit(EventKind::kHookFired, kind_byte(kind), node.id(), key.value, 0, owner);
}

void fire_tensor_hooks(Node& node, HookList<TensorPreHookFn>& list, HookKind kind,
                       variable_list& grads) {
  list.fire([&](const auto& e, TensorPreHookFn& fn) {
    fire_event(node, kind, e.key, e.owner);
    if (e.input_nr >= grads.size() || !grads[e.input_nr].defined()) return;
    Tensor replaced = fn(grads[e.input_nr]);
    if (replaced.defined()) {
      if (replaced.shape() != grads[e.input_nr].shape()) {
        throw std::runtime_error("hook on " + node.name() + " returned a gradient of shape " +
                                 shape_str(replaced.shape()) + " for one of shape " +
                                 shape_str(grads[e.input_nr].shape()) +
                                 "; a tensor hook must keep the gradient's shape");
      }
      grads[e.input_nr] = std::move(replaced);
    }
  });
}
}  // namespace

void Node::call_tensor_pre_hooks(variable_list& grads) {
  fire_tensor_hooks(*this, tensor_pre_hooks(), HookKind::kTensorPre, grads);
  fire_tensor_hooks(*this, retains_grad_hooks_, HookKind::kRetainGrad, grads);
}

void Node::call_pre_hooks(variable_list& grads) {
  pre_hooks_.fire([&](const auto& e, FunctionPreHookFn& fn) {
    fire_event(*this, HookKind::kPre, e.key, e.owner);
    fn(grads);
  });
}

void Node::call_post_hooks(variable_list& grad_inputs, const variable_list& grad_outputs) {
  post_hooks_.fire([&](const auto& e, FunctionPostHookFn& fn) {
    fire_event(*this, HookKind::kPost, e.key, e.owner);
    fn(grad_inputs, grad_outputs);
  });
}

// ---- FunctionNode -----------------------------------------------------------

FunctionNode::FunctionNode(const char* name, Backward backward)
    : name_(name), backward_(std::move(backward)) {}

variable_list FunctionNode::apply(variable_list&& grad_outputs) {
  if (released_) {
    throw std::runtime_error(
        std::string("Trying to backward through the graph a second time (") + name_ +
        " already ran and freed its saved tensors). Saved intermediate values of the "
        "graph are freed when you call backward() or grad(); pass retain_graph=true to "
        "the first call if you need to backward through the graph again.");
  }
  return backward_(grad_outputs);
}

void FunctionNode::release_variables() {
  backward_ = nullptr;
  released_ = true;
}

}  // namespace hookscope
