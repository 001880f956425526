#include "ddp/reducer.h"

#include <atomic>
#include <map>
#include <mutex>
#include <stdexcept>
#include <unordered_set>

#include "autograd/engine.h"
#include "autograd/hooks_list.h"
#include "autograd/node.h"
#include "autograd/variable.h"
#include "tensor/kernels.h"
#include "trace/emitters_autograd.h"
#include "trace/emitters_ddp.h"
#include "trace/strings.h"

namespace hookscope::ddp {

using trace::EventKind;

namespace {

std::atomic<uint64_t> g_next_collective{1};

// What pre-#21591 Reducers left behind (Note [Reducer destruction], policy none).
std::mutex g_lingering_mutex;
std::vector<std::pair<HookKey, std::shared_ptr<Node>>>& lingering() {
  static auto* v = new std::vector<std::pair<HookKey, std::shared_ptr<Node>>>();
  return *v;
}

// Note [Gradients as bucket views]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// As PyTorch's gradient_as_bucket_view: each parameter's gradient, once
// reduced, is a view of its range of the bucket (Note [Storage views] in
// tensor/tensor.h), made once per Reducer. finalize_backward allocates and
// copies nothing: the averaged bucket already is the gradients. A gradient
// that is still the view when the next backward marks it ready (it was not
// set to None, AccumulateGrad accumulated into it in place) is already in the
// bucket and is not copied either. As in PyTorch, a gradient kept across a
// backward sees the next backward's values.
Tensor bucket_view(const Tensor& buffer, int64_t offset, const Shape& shape) {
  const Storage& src = *buffer.impl()->storage;
  auto storage = std::make_shared<Storage>();
  storage->device = src.device;
  storage->device_index = src.device_index;
  const int64_t n = numel_of(shape);
  if (src.device == Device::kCPU) {
    storage->alias_cpu(const_cast<Storage&>(src).cpu_data() + offset, n, buffer.impl()->storage);
  } else {
    storage->numel = n;
    storage->cuda = std::shared_ptr<void>(src.cuda, const_cast<Storage&>(src).cuda_data() + offset);
  }
  auto impl = std::make_shared<TensorImpl>();
  impl->shape = shape;
  impl->storage = std::move(storage);
  return Tensor(std::move(impl));
}

}  // namespace

// Note [Reducer labels per recording]
// A trace names Reducers "Reducer 1", "Reducer 2", ... per rank, in the order
// they were built. The numbers restart when a new recording begins and no
// Reducer of an earlier one is still alive: a second live run in the same
// process (the GUI's re-run, in-process tests) reads "Reducer 1" again, as a
// fresh process would. A Reducer alive across recordings keeps its label, and
// the count goes on past it, so no two Reducers of one trace share a name.
namespace {
struct ReducerLabels {
  std::mutex mutex;
  std::map<uint16_t, int> per_rank;
  uint64_t generation = 0;  // the recorder generation of the last label taken
  int alive = 0;
};
ReducerLabels& reducer_labels() {
  static ReducerLabels labels;
  return labels;
}
}  // namespace

std::string next_reducer_label() {
  ReducerLabels& l = reducer_labels();
  std::lock_guard<std::mutex> lock(l.mutex);
  const uint64_t generation = trace::recorder_generation();
  if (l.alive == 0 && generation != l.generation) l.per_rank.clear();
  l.generation = generation;
  ++l.alive;
  return "Reducer " + std::to_string(++l.per_rank[trace::thread_rank()]);
}

void release_reducer_label() {
  ReducerLabels& l = reducer_labels();
  std::lock_guard<std::mutex> lock(l.mutex);
  --l.alive;
}

struct Reducer::Core {
  struct Bucket {
    std::vector<size_t> params;
    std::vector<size_t> offsets;
    size_t numel = 0;
    Tensor buffer;  // flat, on the parameters' device; reduced in place
    size_t registered = 0;  // its id with the group (Note [Persistent allreduce])
    std::vector<Tensor> views;  // per slot (Note [Gradients as bucket views])
    size_t pending = 0;
    std::shared_ptr<Work> work;
    uint64_t collective = 0;
    Tensor hook_result;  // what the comm hook returned (Note [Comm hooks])
  };

  std::vector<nn::NamedParameter> params;
  std::shared_ptr<ProcessGroup> group;
  ReducerOptions options;
  OwnerId owner = 0;
  std::string label;
  // Gives the label back when the Core goes, also when the constructor throws.
  struct LabelHold {
    bool held = false;
    ~LabelHold() {
      if (held) release_reducer_label();
    }
  } label_hold;
  std::vector<std::pair<HookKey, std::shared_ptr<Node>>> hooks;
  std::vector<Bucket> buckets;
  std::vector<size_t> bucket_of;
  std::vector<size_t> slot_in_bucket;
  std::vector<uint32_t> name_ids;
  std::vector<bool> ready;
  bool expect_hooks = false;
  bool no_sync = false;  // the last forward ran inside DDP's no_sync (skip_sync_for_backward)
  bool no_sync_end_queued = false;  // its backward's end will clear no_sync
  bool finalize_queued = false;
  size_t next_bucket = 0;
  size_t backward_index = 0;
  CommHook comm_hook;  // Note [Comm hooks]
  HookKey comm_hook_key{};

  // Every parameter is on this device (checked by the constructor).
  Device device() const { return params.front().tensor.device(); }

  void assign_buckets() {
    bucket_of.assign(params.size(), 0);
    slot_in_bucket.assign(params.size(), 0);
    Bucket current;
    size_t bytes = 0;
    auto close = [&] {
      if (current.params.empty()) return;
      current.buffer = Tensor::zeros({static_cast<int64_t>(current.numel)}, device());
      current.registered = group->register_allreduce(current.buffer);
      for (size_t s = 0; s < current.params.size(); ++s) {
        current.views.push_back(bucket_view(current.buffer,
                                            static_cast<int64_t>(current.offsets[s]),
                                            params[current.params[s]].tensor.shape()));
      }
      buckets.push_back(std::move(current));
      current = Bucket{};
      bytes = 0;
    };
    // Reverse registration order: gradients of the last layers arrive first.
    for (size_t k = params.size(); k-- > 0;) {
      const size_t limit = buckets.empty() ? options.first_bucket_bytes : options.bucket_cap_bytes;
      bucket_of[k] = buckets.size();
      slot_in_bucket[k] = current.params.size();
      current.params.push_back(k);
      current.offsets.push_back(current.numel);
      current.numel += static_cast<size_t>(params[k].tensor.numel());
      bytes += static_cast<size_t>(params[k].tensor.numel()) * sizeof(float);
      if (bytes >= limit) close();
    }
    close();
  }

  void reset_for_backward() {
    ready.assign(params.size(), false);
    for (Bucket& b : buckets) {
      b.pending = b.params.size();
      b.work.reset();
      b.hook_result = Tensor();
    }
    next_bucket = 0;
    finalize_queued = false;
  }

  void autograd_hook(size_t index) {
    if (!expect_hooks) {
      trace::emit_autograd_hook_noop(owner, no_sync ? trace::NoopReason::kNoSync : trace::NoopReason::kNotPrepared,
                                     hooks[index].second->id(), hooks[index].first.value, index);
      // no_sync covers the backward of the forward it ran: not the later
      // ones another DDP on the module drives (this one is then lingering).
      if (no_sync && !no_sync_end_queued) {
        no_sync_end_queued = true;
        autograd::queue_callback([this] { no_sync = no_sync_end_queued = false; });
      }
      return;
    }
    if (options.fault) options.fault(FaultPoint::kInHook, backward_index);
    if (!finalize_queued) {
      finalize_queued = true;
      autograd::queue_callback([this] { finalize_backward(); });
    }
    mark_variable_ready(index);
  }

  void mark_variable_ready(size_t index) {
    const uint64_t node = hooks[index].second->id();
    if (ready[index]) {
      trace::emit_marked_twice(owner, node, name_ids[index], static_cast<uint32_t>(index));
      throw std::runtime_error(
          label + ": expected to mark a variable ready only once, but parameter '" +
          params[index].name + "' (index " + std::to_string(index) +
          ") was marked ready twice in this backward. Likely causes: 1) the parameter is "
          "used outside the module's forward, or in several forwards before one backward; "
          "2) it takes part in several reentrant backward passes (e.g. activation "
          "checkpointing) — reentrant backward is not supported; 3) unused-parameter "
          "detection marked it ready and a gradient still arrived (the graph changed "
          "between forward and backward).");
    }
    ready[index] = true;
    const size_t b = bucket_of[index];
    Bucket& bucket = buckets[b];
    const size_t slot = slot_in_bucket[index];
    const auto offset = static_cast<int64_t>(bucket.offsets[slot]);
    const int64_t n = params[index].tensor.numel();
    Tensor g = params[index].tensor.grad();
    Kernels& k = kernels_for(bucket.buffer.device());
    if (g.impl() == bucket.views[slot].impl()) {
      // Already in the bucket (Note [Gradients as bucket views]).
    } else if (g.defined()) {
      k.copy_range(g, 0, bucket.buffer, offset, n);
    } else {
      k.fill_range(bucket.buffer, offset, n, 0.f);
    }
    trace::emit_mark_ready(owner, node, index, static_cast<uint32_t>(b));
    if (--bucket.pending == 0) mark_bucket_ready();
  }

  // Launches every consecutive ready bucket from next_bucket on, so buckets
  // are reduced strictly in order.
  void mark_bucket_ready() {
    while (next_bucket < buckets.size() && buckets[next_bucket].pending == 0) {
      Bucket& bucket = buckets[next_bucket];
      if (options.fault) options.fault(FaultPoint::kBeforeCollective, backward_index);
      if (comm_hook) {
        run_comm_hook(bucket);
        ++next_bucket;
        continue;
      }
      bucket.collective = g_next_collective.fetch_add(1);
      trace::emit_bucket_ready(owner, bucket.collective, next_bucket,
                               static_cast<uint32_t>(bucket.params.size()));
      trace::emit_collective_begin(owner, trace::CollectiveOp::kAllreduce, bucket.collective,
                                   bucket.numel * sizeof(float), static_cast<uint32_t>(next_bucket));
      bucket.work = group->allreduce_registered(bucket.registered);
      ++next_bucket;
    }
  }

  // Note [A comm hook's collectives] (ddp/process_group.h): while the hook
  // runs, its first allreduce of the bucket's size is the bucket's collective.
  struct BucketWatch : CollectiveWatch {
    Core& core;
    Bucket& bucket;
    uint32_t index;
    bool matched = false;
    BucketWatch(Core& c, Bucket& b, size_t i) : core(c), bucket(b), index(static_cast<uint32_t>(i)) {}
    Begun begin(trace::CollectiveOp op, uint64_t bytes) override {
      const uint64_t id = g_next_collective.fetch_add(1);
      if (matched || op != trace::CollectiveOp::kAllreduce || bytes != bucket.numel * sizeof(float)) {
        trace::emit_collective_begin(0, op, id, bytes, trace::kNoBucket);
        return {0, id};
      }
      matched = true;
      bucket.collective = id;
      trace::emit_bucket_ready(core.owner, id, index, static_cast<uint32_t>(bucket.params.size()));
      trace::emit_collective_begin(core.owner, op, id, bytes, index);
      return {core.owner, id};
    }
  };

  void run_comm_hook(Bucket& bucket) {
    GradBucket view{next_bucket, bucket.buffer, bucket.params, next_bucket + 1 == buckets.size()};
    trace::emit_comm_hook_fired(owner, comm_hook_key.value, static_cast<uint32_t>(next_bucket), view.bytes());
    Tensor out;
    {
      BucketWatch watch(*this, bucket, next_bucket);
      WatchCollectives watching(watch);
      out = comm_hook(view);
    }
    if (!out.defined() || out.numel() != bucket.buffer.numel() || out.device() != bucket.buffer.device()) {
      throw std::invalid_argument(
          label + ": its comm hook returned " +
          (out.defined() ? std::to_string(out.numel()) + " values on " + out.device_str() : "an undefined tensor") +
          " for bucket " + std::to_string(next_bucket) + ", which holds " + std::to_string(bucket.buffer.numel()) +
          " on " + bucket.buffer.device_str() +
          ": return the bucket's gradients reduced (bucket.buffer itself, or a tensor of its size and device)");
    }
    bucket.hook_result = std::move(out);
  }

  // A comm hook's result becomes the bucket's gradients, not averaged.
  void take_hook_result(Bucket& bucket) {
    if (bucket.hook_result.impl() == bucket.buffer.impl()) return;
    kernels_for(bucket.buffer.device())
        .copy_range(bucket.hook_result, 0, bucket.buffer, 0, static_cast<int64_t>(bucket.buffer.numel()));
  }

  void finalize_backward() {
    expect_hooks = false;
    if (next_bucket < buckets.size()) {
      std::string missing;
      for (size_t i = 0; i < params.size(); ++i) {
        if (ready[i]) continue;
        trace::emit_unused_parameter(owner, hooks[i].second->id(), name_ids[i], static_cast<uint32_t>(i));
        missing += (missing.empty() ? "" : ", ") + params[i].name;
      }
      throw std::runtime_error(
          label + ": this backward did not produce gradients for parameter(s) " + missing +
          ", so their buckets could not be reduced. If the forward legitimately skips "
          "them, construct DDP with find_unused_parameters=true.");
    }
    const float scale = 1.f / static_cast<float>(group->size());
    for (Bucket& bucket : buckets) {
      if (comm_hook) {
        take_hook_result(bucket);
        point_grads_at(bucket);
        continue;
      }
      try {
        bucket.work->wait();
      } catch (const CollectiveError& e) {
        trace::emit_collective_end(owner, e.status(), bucket.collective, bucket.work->duration_ns(),
                                   bucket.work->placement());
        throw;
      }
      trace::emit_collective_end(owner, trace::CollectiveStatus::kOk, bucket.collective,
                                 bucket.work->duration_ns(), bucket.work->placement());
      Kernels& k = kernels_for(bucket.buffer.device());
      k.scale(bucket.buffer, scale, bucket.buffer);
      point_grads_at(bucket);
    }
    trace::emit_buckets_finalized(owner, backward_index);
  }

  void point_grads_at(Bucket& bucket) {
    for (size_t s = 0; s < bucket.params.size(); ++s) {
      Tensor& p = params[bucket.params[s]].tensor;
      AutogradMeta& meta = p.materialize_autograd_meta();
      if (meta.grad != bucket.views[s].impl_ptr()) meta.grad = bucket.views[s].impl_ptr();
    }
  }

  void remove_hooks() {
    size_t removed = 0;
    switch (options.policy) {
      case DestroyPolicy::kByKey:
        for (auto& [key, fn] : hooks) {
          // A false return would mean someone else removed our hook; the
          // failed removal is recorded, and the analysis reports it.
          if (fn->del_post_hook(key, owner)) ++removed;
        }
        break;
      case DestroyPolicy::kNone: {
        std::lock_guard<std::mutex> lock(g_lingering_mutex);
        for (auto& h : hooks) lingering().push_back(h);
        break;
      }
      case DestroyPolicy::kByType: {
        std::unordered_set<Node*> swept;
        for (auto& [key, fn] : hooks) {
          if (swept.insert(fn.get()).second) {
            removed += fn->del_post_hooks_of_kind(OwnerKind::kReducer, owner);
          }
        }
        break;
      }
    }
    if (comm_hook) {  // it dies with the Reducer whatever the policy (Note [Comm hooks])
      trace::emit_hook_removed(0, comm_hook_key.value, HookKind::kCommHook, owner, owner,
                               trace::RemoveCause::kByKey);
    }
    trace::emit_reducer_destroyed(owner, options.policy, static_cast<uint32_t>(removed));
  }
};

Reducer::Reducer(std::vector<nn::NamedParameter> params, std::shared_ptr<ProcessGroup> group,
                 ReducerOptions options)
    : core_(std::make_shared<Core>()) {
  if (params.empty()) throw std::invalid_argument("Reducer: the module has no parameters");
  Core& c = *core_;
  c.params = std::move(params);
  c.group = std::move(group);
  c.options = std::move(options);
  c.label = next_reducer_label();
  c.label_hold.held = true;
  c.owner = create_owner(OwnerKind::kReducer, c.label);
  const Tensor& first = c.params.front().tensor;
  for (auto& p : c.params) {
    if (p.tensor.device() != first.device() || p.tensor.device_index() != first.device_index()) {
      throw std::invalid_argument("Reducer: parameter '" + p.name + "' is on " +
                                  p.tensor.device_str() + " but '" + c.params.front().name +
                                  "' is on " + first.device_str() +
                                  "; DDP needs every parameter of the module on one device");
    }
  }
  c.assign_buckets();
  for (auto& p : c.params) {
    if (!p.tensor.requires_grad()) {
      throw std::invalid_argument("Reducer: parameter '" + p.name + "' does not require grad");
    }
    c.name_ids.push_back(trace::intern(p.name));
  }
  trace::emit_reducer_constructed(c.owner, c.params.size(), static_cast<uint32_t>(c.buckets.size()));
  std::weak_ptr<Core> weak = core_;
  for (size_t i = 0; i < c.params.size(); ++i) {
    std::shared_ptr<Node> acc = c.params[i].tensor.grad_accumulator();
    const OwnerId owner = c.owner;
    HookKey key = acc->add_post_hook(
        [weak, i, owner, acc_id = acc->id()](variable_list&, const variable_list&) {
          if (auto core = weak.lock()) {
            core->autograd_hook(i);
          } else {
            trace::emit_autograd_hook_noop(owner, trace::NoopReason::kOwnerDestroyed, acc_id, 0, i);
          }
        },
        c.owner);
    c.hooks.emplace_back(key, std::move(acc));
  }
  c.reset_for_backward();
}

Reducer::~Reducer() {
  for (const auto& b : core_->buckets) core_->group->unregister_allreduce(b.registered);
  core_->remove_hooks();
  destroy_owner(core_->owner);
}

void Reducer::skip_sync_for_backward() {
  core_->no_sync = true;
}

void Reducer::prepare_for_backward(const variable_list& outputs) {
  Core& c = *core_;
  c.reset_for_backward();
  c.expect_hooks = true;
  c.no_sync = false;
  ++c.backward_index;
  trace::emit_prepare_for_backward(c.owner, c.backward_index);
  if (!c.options.find_unused_parameters) return;
  // Search the graph from the outputs; parameters whose AccumulateGrad is not
  // reached get no gradient in this backward and are marked ready now.
  std::unordered_set<const Node*> seen;
  std::vector<const Node*> stack;
  for (const Tensor& t : outputs) {
    if (t.grad_fn() && seen.insert(t.grad_fn().get()).second) stack.push_back(t.grad_fn().get());
  }
  while (!stack.empty()) {
    const Node* n = stack.back();
    stack.pop_back();
    for (const Edge& e : n->next_edges()) {
      if (e.function && seen.insert(e.function.get()).second) stack.push_back(e.function.get());
    }
  }
  for (size_t i = 0; i < c.params.size(); ++i) {
    if (seen.count(c.hooks[i].second.get())) continue;
    trace::emit_unused_parameter(c.owner, c.hooks[i].second->id(), c.name_ids[i],
                                 static_cast<uint32_t>(i));
    c.mark_variable_ready(i);
  }
}

HookKey Reducer::register_comm_hook(CommHook hook) {
  Core& c = *core_;
  if (!hook) throw std::invalid_argument(c.label + ": register_comm_hook needs a callable hook, got an empty one");
  if (c.comm_hook) {
    throw std::logic_error(c.label + ": register_comm_hook can only be called once (it has comm hook " +
                           trace::format_hook_key(c.comm_hook_key.value) +
                           "); build the DDP again to use another hook");
  }
  c.comm_hook = std::move(hook);
  c.comm_hook_key = next_hook_key_for_slot(0);
  trace::emit_hook_added(0, c.comm_hook_key.value, HookKind::kCommHook, c.owner);
  return c.comm_hook_key;
}

OwnerId Reducer::owner() const { return core_->owner; }
const std::string& Reducer::label() const { return core_->label; }
size_t Reducer::num_buckets() const { return core_->buckets.size(); }
size_t Reducer::hooks_added() const { return core_->hooks.size(); }

std::vector<std::vector<size_t>> Reducer::bucket_assignment() const {
  std::vector<std::vector<size_t>> out;
  for (const auto& b : core_->buckets) out.push_back(b.params);
  return out;
}

}  // namespace hookscope::ddp
