// The torch side of the bridge: the registry of autograd Nodes (held
// weakly), the graph walk, and snapshots of the C++ hooks on them. With
// observers.cpp, the only translation units that include torch's headers
// (bridge.h).

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/accumulate_grad.h>
#include <torch/csrc/autograd/python_cpp_function.h>
#include <torch/csrc/autograd/python_function.h>
#include <torch/csrc/autograd/python_hook.h>
#include <torch/csrc/autograd/python_variable.h>
#include <torch/csrc/autograd/variable.h>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <new>
#include <string>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "bridge.h"
#include "nodes_state.h"
#include "trace/emit.h"
#include "trace/emitters_autograd.h"
#include "trace/strings.h"

namespace hookscope::bridge {

std::recursive_mutex g_mutex;
std::atomic<uint64_t> g_epoch{1};
int g_rank = 0;

namespace {

// Note [Pooled bridge objects]: free lists by size, 16-byte steps up to 256
// bytes (NodeState with its shared_ptr block, observers, registry entries);
// anything else goes to operator new. libstdc++'s synchronized_pool_resource
// was tried first: its locks and thread-specific lookups cost as much as
// the malloc calls it saved (callgrind).
class FreeLists final : public std::pmr::memory_resource {
 public:
  static constexpr size_t kGrain = 16;
  static constexpr size_t kClasses = 16;
  static constexpr size_t kKeep = 1 << 16;  // per class: a huge graph's worth goes back to malloc

  // In a forked child only this thread runs; another may have held the lock.
  void after_fork() { new (&mutex_) std::mutex(); }

 private:
  struct Free {
    Free* next;
  };
  static bool pooled(size_t bytes, size_t align) {
    return bytes > 0 && bytes <= kGrain * kClasses && align <= kGrain;
  }
  void* do_allocate(size_t bytes, size_t align) override {
    if (!pooled(bytes, align)) return ::operator new(bytes, std::align_val_t(align));
    const size_t c = (bytes - 1) / kGrain;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (Free* f = heads_[c]) {
        heads_[c] = f->next;
        --counts_[c];
        return f;
      }
    }
    return ::operator new((c + 1) * kGrain);
  }
  void do_deallocate(void* p, size_t bytes, size_t align) override {
    if (!pooled(bytes, align)) {
      ::operator delete(p, bytes, std::align_val_t(align));
      return;
    }
    const size_t c = (bytes - 1) / kGrain;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (counts_[c] < kKeep) {
        heads_[c] = new (p) Free{heads_[c]};
        ++counts_[c];
        return;
      }
    }
    ::operator delete(p);
  }
  bool do_is_equal(const std::pmr::memory_resource& other) const noexcept override { return this == &other; }

  std::mutex mutex_;
  Free* heads_[kClasses] = {};
  size_t counts_[kClasses] = {};
};

FreeLists& free_lists() {
  static auto* resource = new FreeLists();
  return *resource;
}

}  // namespace

std::pmr::memory_resource& pool() { return free_lists(); }

namespace {

std::atomic<uint64_t> g_next_key{1};
uint64_t g_next_node = 1;

struct Entry {
  std::weak_ptr<Node> weak;
  std::shared_ptr<NodeState> state;
};
std::pmr::unordered_map<Node*, Entry> g_nodes(&pool());  // Note [Pooled bridge objects]
// The last AccumulateGrad of each leaf (Note [Leaf hooks live on the tensor]).
struct LeafEntry {
  c10::weak_intrusive_ptr<c10::TensorImpl> weak;
  uint64_t last_accumulator = 0;
};
std::unordered_map<c10::TensorImpl*, LeafEntry> g_leaves;
std::vector<std::pair<uint64_t, at::Tensor>> g_new_accumulators;
std::vector<std::shared_ptr<Node>> g_held;  // accumulator_id(create) until release_held()
// Per owner: its hooks a snapshot found gone (a Reducer's hooks_removed; one
// snapshot may see several Reducers' go when gc frees them together).
std::unordered_map<uint32_t, uint32_t> g_removed_of_owner;

// A C++ Function's name, interned once per type for the recording: name()
// builds a std::string (demangles, for some) on every call, and a step of a
// small transformer registers a few hundred Functions (bench/torch_bridge_overhead.py).
// Python Functions share one C++ type (PyNode) and are named each time.
// Keyed by the type_info's address: hashing a type_index hashes its name.
// A type seen under two addresses (two copies in two libraries) is looked
// up twice, and intern() gives both the same string.
std::unordered_map<const std::type_info*, uint32_t> g_name_ids;

uint32_t name_id(Node& n) {
  auto intern_bare = [&] {
    // C++ Functions' names carry their namespace ("torch::autograd::AccumulateGrad");
    // hookscope's runtime and PyTorch's Python repr use the bare name.
    std::string name = n.name();
    if (name.rfind("torch::autograd::", 0) == 0) name.erase(0, 17);
    return trace::intern(name);
  };
  if (typeid(n) == typeid(torch::autograd::PyNode)) return intern_bare();
  auto [it, fresh] = g_name_ids.try_emplace(&typeid(n), 0);
  if (fresh) it->second = intern_bare();
  return it->second;
}

std::shared_ptr<Node> to_node(PyObject* obj) {
  if (obj == nullptr || obj == Py_None) return nullptr;
  if (torch::autograd::THPCppFunction_Check(obj)) {
    return reinterpret_cast<torch::autograd::THPCppFunction*>(obj)->cdata;
  }
  if (THPFunction_Check(obj)) {
    return std::static_pointer_cast<Node>(reinterpret_cast<THPFunction*>(obj)->cdata.lock());
  }
  PyErr_Clear();
  return nullptr;
}

const at::Tensor* to_tensor(PyObject* obj) {
  if (obj == nullptr || !THPVariable_Check(obj)) return nullptr;
  return &THPVariable_Unpack(obj);
}

// The Node's state if registered in this epoch (caller holds g_mutex).
NodeState* find(Node* n) {
  auto it = g_nodes.find(n);
  if (it == g_nodes.end()) return nullptr;
  if (it->second.weak.expired() || it->second.state->epoch != g_epoch.load()) {
    g_nodes.erase(it);
    return nullptr;
  }
  return it->second.state.get();
}

// Note [Registering a step's Functions]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// Every backward registers the Functions its forward made (a small
// transformer: ~100 a step), so this is the bridge's hottest path
// (bench/torch_bridge_overhead.py). It allocates only what it keeps: the
// walk's stack is reused from call to call, and a Node being walked is
// marked by its registry entry (id 0 until its children are registered)
// rather than by a set of its own. Allocations of a kilobyte or more were
// the expensive part, not the walk: glibc consolidates its small-chunk free
// lists before each one, and PyTorch's tensors leave thousands of those.

// A reusable vector for a call that cannot be re-entered while it runs
// (callers hold g_mutex; re-entry from Python or a freed Node's observer
// would get a fresh vector).
template <typename T>
struct Reused {
  explicit Reused(std::vector<T>& store, bool& busy) : busy_(busy), mine_(!busy) {
    if (mine_) {
      busy_ = true;
      v = &store;
    } else {
      v = &own_;
    }
    v->clear();
  }
  ~Reused() {
    v->clear();
    if (mine_) busy_ = false;
  }
  Reused(const Reused&) = delete;
  Reused& operator=(const Reused&) = delete;
  std::vector<T>* v;

 private:
  bool& busy_;
  bool mine_;
  std::vector<T> own_;
};

// A Node of the walk: its state is in the registry, id 0 until registered.
struct Frame {
  std::shared_ptr<Node> node;
  std::shared_ptr<NodeState> state;
  size_t next = 0;
};

// Enters a Node in the registry, unnamed (id 0: being walked) until its
// children are registered.
std::shared_ptr<NodeState> enter(const std::shared_ptr<Node>& n) {
  auto state = std::allocate_shared<NodeState>(std::pmr::polymorphic_allocator<NodeState>(&pool()));
  state->epoch = g_epoch.load();
  state->node = n.get();
  g_nodes[n.get()] = Entry{n, state};
  return state;
}

// A leaf's AccumulateGrad: its flags, and the previous one of its tensor.
uint8_t note_accumulator(Node& n, uint64_t id, uint64_t& previous) {
  // typeid first: a failed dynamic_cast walks the class hierarchy, for
  // every other Function of the step. No class derives from AccumulateGrad.
  if (typeid(n) != typeid(torch::autograd::AccumulateGrad)) return 0;
  auto* acc = static_cast<torch::autograd::AccumulateGrad*>(&n);
  if (!acc->variable.defined()) return 0;
  c10::TensorImpl* impl = acc->variable.unsafeGetTensorImpl();
  auto it = g_leaves.find(impl);
  if (it != g_leaves.end() && it->second.weak.expired()) {
    g_leaves.erase(it);
    it = g_leaves.end();
  }
  if (it == g_leaves.end()) {
    it = g_leaves.emplace(impl, LeafEntry{c10::weak_intrusive_ptr<c10::TensorImpl>(acc->variable.getIntrusivePtr()),
                                          0}).first;
  }
  previous = it->second.last_accumulator;
  it->second.last_accumulator = id;
  g_new_accumulators.emplace_back(id, acc->variable);
  return trace::kNodeIsLeafAccumulator;
}

// Names a walked Node whose children are registered: its events and observers.
void register_node(const std::shared_ptr<Node>& n, std::shared_ptr<NodeState> state, uint32_t name) {
  state->id = g_next_node++;
  uint64_t previous = 0;
  const uint8_t flags = note_accumulator(*n, state->id, previous);
  // PyTorch's sequence number + 1 rides in actor (Note [Torch bridge node ids]);
  // no label, so that Functions match those of hookscope's runtime in a diff.
  trace::emit(trace::ev::NodeCreated{.node = state->id,
                                     .name = name,
                                     .flags = flags,
                                     .previous_accumulator = previous,
                                     .sequence_nr = static_cast<uint32_t>(n->sequence_nr() + 1)});
  for (const auto& edge : n->next_edges()) {
    if (!edge.function) continue;
    if (NodeState* c = find(edge.function.get())) trace::emit_node_edge(state->id, c->id, edge.input_nr);
  }
  n->add_pre_hook(std::make_unique<ObserverPre>(state));
  n->add_post_hook(std::make_unique<ObserverPost>(std::move(state)));
}

// Depth first from the stack's Node: children are registered before parents.
void walk(std::vector<Frame>& stack) {
  while (!stack.empty()) {
    Frame& top = stack.back();
    const auto& edges = top.node->next_edges();
    if (top.next < edges.size()) {
      const auto& edge = edges[top.next++];
      Node* child = edge.function.get();
      if (child && !find(child)) {  // registered, or on the stack already
        auto state = enter(edge.function);
        stack.push_back({edge.function, std::move(state)});
      }
      continue;
    }
    const uint32_t name = name_id(*top.node);  // may raise (a Python Function's): still on the stack
    Frame done = std::move(top);
    stack.pop_back();
    register_node(done.node, std::move(done.state), name);
  }
}

// Registers `root` and every unregistered Node below it, children first, so
// that every kNodeEdge names Nodes already created (Note [Registering a
// step's Functions]). Caller holds the GIL (a Python Function's name()
// calls Python) and g_mutex.
uint64_t ensure(const std::shared_ptr<Node>& root) {
  if (!root) return 0;
  if (NodeState* s = find(root.get())) return s->id;
  static std::vector<Frame> store;
  static bool busy = false;
  Reused<Frame> reused(store, busy);
  std::vector<Frame>& stack = *reused.v;
  std::shared_ptr<NodeState> root_state = enter(root);
  stack.push_back({root, root_state});
  try {
    walk(stack);
  } catch (...) {
    // The Nodes still being walked leave the registry (a later call
    // registers them whole).
    for (const Frame& f : stack) {
      auto it = g_nodes.find(f.node.get());
      if (it != g_nodes.end() && it->second.state == f.state) g_nodes.erase(it);
    }
    throw;
  }
  return root_state->id;
}

// The bridge's own observer first: it is on every Node, and typeid is one
// comparison where a failed dynamic_cast walks the class hierarchy.
bool is_python_pre(const FunctionPreHook* h) {
  return typeid(*h) == typeid(ObserverPre) || dynamic_cast<const torch::autograd::PyFunctionPreHook*>(h) ||
         dynamic_cast<const torch::autograd::PyFunctionTensorPreHook*>(h) ||
         dynamic_cast<const ObserverPre*>(h);
}
bool is_python_post(const FunctionPostHook* h) {
  return typeid(*h) == typeid(ObserverPost) || dynamic_cast<const torch::autograd::PyFunctionPostHook*>(h) ||
         dynamic_cast<const ObserverPost*>(h);
}

// The addresses of a hook list's C++ hooks that are not the bridge's or Python's.
template <typename List, typename Skip>
std::vector<uintptr_t> foreign_addrs(const List& list, Skip skip) {
  std::vector<uintptr_t> now;
  for (const auto& h : list) {
    if (!skip(h.get())) now.push_back(reinterpret_cast<uintptr_t>(h.get()));
  }
  return now;
}

// `moved` (retain_grad hooks on 2.x only): the owners of hooks that may
// have moved here from another Node; a hook that leaves a Node is removed by
// its own owner (Note [retain_grad on 2.x]).
size_t diff_hooks(NodeState& s, const std::vector<uintptr_t>& now, std::vector<Foreign>& known,
                  HookKind kind, uint32_t add_owner, uint32_t remove_actor,
                  const std::unordered_map<uintptr_t, uint32_t>* moved = nullptr) {
  size_t removed = 0;
  for (auto it = known.begin(); it != known.end();) {
    if (std::find(now.begin(), now.end(), it->addr) == now.end()) {
      ++removed;
      ++g_removed_of_owner[it->owner];
      trace::emit_hook_removed(s.id, it->key, it->kind, it->owner, moved ? it->owner : remove_actor,
                               trace::RemoveCause::kByKey);
      it = known.erase(it);
    } else {
      ++it;
    }
  }
  for (uintptr_t addr : now) {
    bool seen = std::any_of(known.begin(), known.end(), [&](const Foreign& f) { return f.addr == addr; });
    if (seen) continue;
    uint32_t owner = add_owner;
    if (moved) {
      auto m = moved->find(addr);
      if (m != moved->end()) owner = m->second;
    }
    Foreign f{addr, g_next_key++, owner, kind};
    known.push_back(f);
    // The owner it is recorded under (a moved retain_grad hook keeps its
    // tensor's), so its add, fires and removal name one owner.
    trace::emit_hook_added(s.id, f.key, kind, f.owner);
  }
  return removed;
}

// Moves the bridge's observers to the ends of their lists (Note [Observer hooks]).
template <typename Observer, typename List>
void keep_last(List& hooks) {
  if (!hooks.empty() && typeid(*hooks.back()) == typeid(Observer)) return;  // most often
  auto it = std::find_if(hooks.begin(), hooks.end(), [](const auto& h) {
    return typeid(*h) == typeid(Observer);
  });
  if (it != hooks.end() && it + 1 != hooks.end()) std::rotate(it, it + 1, hooks.end());
}

// A live registered Node, held while a caller looks at it.
struct Live {
  std::shared_ptr<Node> node;
  NodeState* state;
};

// The registered Nodes alive in this epoch, into `out`; drops the others.
void live_nodes(std::vector<Live>& out) {
  const uint64_t epoch = g_epoch.load();
  for (auto it = g_nodes.begin(); it != g_nodes.end();) {
    auto n = it->second.state->epoch == epoch ? it->second.weak.lock() : nullptr;
    if (!n) {
      it = g_nodes.erase(it);
    } else {
      out.push_back({std::move(n), it->second.state.get()});
      ++it;
    }
  }
}

// Whether a Node has nothing a snapshot could find: no C++ hook known or
// present, its lists only the bridge's observers (most of a step's Nodes).
bool only_observers(Node& n, const NodeState& s) {
  if (!s.post.empty() || !s.pre.empty() || !s.retain.empty()) return false;
#if HOOKSCOPE_RETAINS_GRAD_HOOKS
  if (!n.retains_grad_hooks().empty()) return false;
#endif
  const auto& post = n.post_hooks();
  const auto& pre = n.pre_hooks();
  return post.size() == 1 && pre.size() == 1 && typeid(*post.back()) == typeid(ObserverPost) &&
         typeid(*pre.back()) == typeid(ObserverPre);
}

std::shared_ptr<Node> node_or_accumulator(PyObject* obj) {
  if (auto n = to_node(obj)) return n;
  if (const at::Tensor* t = to_tensor(obj)) {
    return torch::autograd::impl::try_get_grad_accumulator(*t);
  }
  return nullptr;
}

}  // namespace

void forget_node(const NodeState& state) {
  // Hooks still on a Node that goes are gone with it: a Reducer destroyed
  // last frees its AccumulateGrads before any snapshot can see its hooks go.
  for (const Foreign& f : state.post) ++g_removed_of_owner[f.owner];
  auto it = g_nodes.find(state.node);
  if (it != g_nodes.end() && it->second.state.get() == &state) g_nodes.erase(it);
}

uint64_t new_key() { return g_next_key++; }

void reset_registry() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  g_epoch++;
  g_nodes.clear();
  g_removed_of_owner.clear();
  g_leaves.clear();
  g_new_accumulators.clear();
  g_held.clear();
  g_name_ids.clear();  // the string table is the recording's
  clear_reducers();
}

void after_fork() {
  new (&g_mutex) std::recursive_mutex();
  free_lists().after_fork();
  reset_registry();
}

void set_rank(int rank) { g_rank = rank; }

uint64_t node_id(PyObject* obj) {
  std::shared_ptr<Node> n = to_node(obj);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  return ensure(n);
}

uint64_t accumulator_id(PyObject* tensor, bool create) {
  const at::Tensor* t = to_tensor(tensor);
  if (!t || !t->requires_grad() || !t->is_leaf()) return 0;
  std::shared_ptr<Node> acc = create ? torch::autograd::impl::grad_accumulator(*t)
                                     : torch::autograd::impl::try_get_grad_accumulator(*t);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  const uint64_t id = ensure(acc);
  // One made here lives until release_held(): the caller records the hook
  // it registers on it first, as hookscope's runtime does (created, hook
  // added, released when nothing else holds it, as PyTorch frees it).
  if (create && acc) g_held.push_back(std::move(acc));
  return id;
}

void release_held() {
  std::vector<std::shared_ptr<Node>> held;
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    held.swap(g_held);
  }
  held.clear();  // observers of Nodes freed here take the (recursive) lock
}

void observe_graph(PyObject* roots) {
  PyObject* seq = PySequence_Fast(roots, "roots must be a sequence");
  if (!seq) throw std::runtime_error("observe_graph: roots must be a sequence");
  std::vector<std::shared_ptr<Node>> nodes;
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq); ++i) {
    if (auto n = to_node(PySequence_Fast_GET_ITEM(seq, i))) nodes.push_back(std::move(n));
  }
  Py_DECREF(seq);
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  for (const auto& n : nodes) ensure(n);
}

size_t snapshot(uint32_t add_owner, uint32_t remove_actor, int pre_kind) {
  size_t removed = 0;
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  // Reused from call to call (Note [Registering a step's Functions]).
  static std::vector<Live> store;
  static bool busy = false;
  Reused<Live> reused(store, busy);
  std::vector<Live>& nodes = *reused.v;
  live_nodes(nodes);
#if HOOKSCOPE_RETAINS_GRAD_HOOKS
  std::unordered_map<uintptr_t, uint32_t> retain_owners;
  for (const Live& l : nodes) {
    for (const Foreign& f : l.state->retain) retain_owners[f.addr] = f.owner;
  }
#endif
  for (const Live& l : nodes) {
    Node* n = l.node.get();
    NodeState* s = l.state;
    if (only_observers(*n, *s)) continue;
    auto post = foreign_addrs(n->post_hooks(), [](const FunctionPostHook* h) { return is_python_post(h); });
    auto pre = foreign_addrs(n->pre_hooks(), [](const FunctionPreHook* h) { return is_python_pre(h); });
    removed += diff_hooks(*s, post, s->post, HookKind::kPost, add_owner, remove_actor);
    removed += diff_hooks(*s, pre, s->pre, static_cast<HookKind>(pre_kind), add_owner, remove_actor);
#if HOOKSCOPE_RETAINS_GRAD_HOOKS
    std::vector<uintptr_t> retain;
    for (const auto& [output_nr, h] : n->retains_grad_hooks()) {
      retain.push_back(reinterpret_cast<uintptr_t>(h.get()));
    }
    removed += diff_hooks(*s, retain, s->retain, HookKind::kRetainGrad, add_owner, remove_actor, &retain_owners);
#endif
    keep_last<ObserverPost>(n->post_hooks());
    keep_last<ObserverPre>(n->pre_hooks());
  }
  // Nodes freed when `nodes` is cleared (Reused's end): their observers take
  // the (recursive) lock, and erase their entries from the registry.
  return removed;
}

uint32_t removed_hooks_of(uint32_t owner) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto it = g_removed_of_owner.find(owner);
  return it == g_removed_of_owner.end() ? 0 : it->second;
}

std::vector<uint64_t> cpp_post_hook_keys(PyObject* obj) {
  std::shared_ptr<Node> n = node_or_accumulator(obj);
  std::vector<uint64_t> out;
  if (!n) return out;
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  NodeState* s = find(n.get());
  if (!s) return out;
  for (const auto& h : n->post_hooks()) {
    const auto addr = reinterpret_cast<uintptr_t>(h.get());
    for (const Foreign& f : s->post) {
      if (f.addr == addr) out.push_back(f.key);
    }
  }
  return out;
}

size_t post_hook_count(PyObject* obj) {
  std::shared_ptr<Node> n = node_or_accumulator(obj);
  if (!n) return 0;
  size_t count = 0;
  for (const auto& h : n->post_hooks()) {
    if (!dynamic_cast<const ObserverPost*>(h.get())) ++count;
  }
  return count;
}

PyObject* python_hook_dicts() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  std::vector<Live> nodes;
  live_nodes(nodes);
  PyObject* out = PyList_New(0);
  for (const Live& l : nodes) {
    Node* n = l.node.get();
    NodeState* s = l.state;
    auto add = [&](PyObject* dict, HookKind kind) {
      PyObject* item = Py_BuildValue("(KiO)", static_cast<unsigned long long>(s->id),
                                     static_cast<int>(kind), dict);
      PyList_Append(out, item);
      Py_DECREF(item);
    };
    for (const auto& h : n->pre_hooks()) {
      if (auto* p = dynamic_cast<torch::autograd::PyFunctionPreHook*>(h.get())) add(p->dict, HookKind::kPre);
    }
    for (const auto& h : n->post_hooks()) {
      if (auto* p = dynamic_cast<torch::autograd::PyFunctionPostHook*>(h.get())) add(p->dict, HookKind::kPost);
    }
  }
  nodes.clear();
  return out;
}

PyObject* take_new_accumulators() {
  std::vector<std::pair<uint64_t, at::Tensor>> taken;
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    taken.swap(g_new_accumulators);
  }
  PyObject* out = PyList_New(0);
  for (auto& [id, t] : taken) {
    PyObject* item = Py_BuildValue("(KN)", static_cast<unsigned long long>(id), THPVariable_Wrap(t));
    PyList_Append(out, item);
    Py_DECREF(item);
  }
  return out;
}

}  // namespace hookscope::bridge
