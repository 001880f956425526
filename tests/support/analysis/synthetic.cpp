#include "analysis/synthetic.h"

#include <fmt/format.h>

#include <algorithm>
#include <random>
#include <stdexcept>
#include <vector>

namespace hookscope::analysis {

using trace::EventKind;
using trace::HookKind;
using trace::OwnerKind;
using trace::RemoveCause;

TraceBuilder::TraceBuilder(int32_t header_rank) {
  data_.header.rank = header_rank;
  data_.header.scenario = "synthetic";
  data_.source = "memory";
  data_.strings.emplace_back();
  ids_.emplace(std::string(), 0);
  if (header_rank >= 0) rank_ = static_cast<uint16_t>(header_rank);
}

TraceBuilder& TraceBuilder::rank(uint16_t rank) {
  rank_ = rank;
  return *this;
}
TraceBuilder& TraceBuilder::thread(uint32_t thread) {
  thread_ = thread;
  return *this;
}
TraceBuilder& TraceBuilder::time(uint64_t t_ns) {
  t_ns_ = t_ns;
  return *this;
}

uint32_t TraceBuilder::intern(std::string_view s) {
  auto [it, inserted] = ids_.emplace(std::string(s), static_cast<uint32_t>(data_.strings.size()));
  if (inserted) data_.strings.emplace_back(s);
  return it->second;
}

trace::Event& TraceBuilder::push(EventKind kind, uint8_t sub, uint64_t node, uint64_t key,
                                 uint64_t arg, uint32_t owner, uint32_t actor) {
  trace::Event e;
  e.t_ns = t_ns_++;
  e.node = node;
  e.key = key;
  e.arg = arg;
  e.owner = owner;
  e.actor = actor;
  e.kind = kind;
  e.sub = sub;
  e.rank = rank_;
  e.thread = thread_;
  data_.events.push_back(e);
  return data_.events.back();
}

uint64_t TraceBuilder::function(std::string_view name, std::string_view label) {
  const uint64_t id = next_node_++;
  push(EventKind::kNodeCreated, 0, id, 0, intern(name));
  if (!label.empty()) push(EventKind::kNodeLabel, 0, id, 0, intern(label));
  return id;
}

uint64_t TraceBuilder::accumulator(std::string_view label, uint64_t previous) {
  const uint64_t id = next_node_++;
  push(EventKind::kNodeCreated, trace::kNodeIsLeafAccumulator, id, previous,
       intern("AccumulateGrad"));
  push(EventKind::kNodeLabel, 0, id, 0, intern(label));
  return id;
}

void TraceBuilder::edge(uint64_t from, uint64_t to, uint32_t input_nr) {
  push(EventKind::kNodeEdge, 0, from, 0, to, 0, input_nr);
}
void TraceBuilder::release(uint64_t node) { push(EventKind::kNodeReleased, 0, node); }

uint32_t TraceBuilder::owner(OwnerKind kind, std::string_view label) {
  const uint32_t id = next_owner_++;
  push(EventKind::kOwnerCreated, static_cast<uint8_t>(kind), 0, 0, intern(label), id);
  return id;
}
void TraceBuilder::destroy_owner(uint32_t owner) {
  push(EventKind::kOwnerDestroyed, 0, 0, 0, 0, owner);
}

uint64_t TraceBuilder::add_hook(uint64_t node, HookKind kind, uint32_t owner, uint32_t input_nr) {
  const uint64_t key = next_key_++;
  push(EventKind::kHookAdded, static_cast<uint8_t>(kind), node, key, input_nr, owner);
  return key;
}
void TraceBuilder::fire(uint64_t node, uint64_t key, HookKind kind, uint32_t owner) {
  push(EventKind::kHookFired, static_cast<uint8_t>(kind), node, key, 0, owner);
}
void TraceBuilder::remove(uint64_t node, uint64_t key, HookKind kind, uint32_t owner,
                          uint32_t actor, RemoveCause cause) {
  push(EventKind::kHookRemoved, static_cast<uint8_t>(kind), node, key,
       static_cast<uint64_t>(cause), owner, actor);
}
void TraceBuilder::remove_failed(uint64_t node, uint64_t key, HookKind kind, uint32_t actor) {
  push(EventKind::kHookRemoveFailed, static_cast<uint8_t>(kind), node, key, 0, 0, actor);
}

void TraceBuilder::reducer_constructed(uint32_t owner, uint32_t parameters, uint32_t buckets) {
  push(EventKind::kReducerConstructed, 0, 0, 0, parameters, owner, buckets);
}
void TraceBuilder::reducer_destroyed(uint32_t owner, trace::DestroyPolicy policy,
                                     uint32_t removed) {
  push(EventKind::kReducerDestroyed, 0, 0, 0, static_cast<uint64_t>(policy), owner, removed);
}
void TraceBuilder::prepare_for_backward(uint32_t owner, uint64_t backward) {
  push(EventKind::kPrepareForBackward, 0, 0, 0, backward, owner);
}
void TraceBuilder::mark_ready(uint32_t owner, uint64_t accumulator, uint32_t parameter,
                              uint32_t bucket) {
  push(EventKind::kMarkReady, 0, accumulator, 0, parameter, owner, bucket);
}
void TraceBuilder::marked_twice(uint32_t owner, uint64_t accumulator, std::string_view name,
                                uint32_t parameter) {
  push(EventKind::kMarkedTwice, 0, accumulator, 0, intern(name), owner, parameter);
}
void TraceBuilder::unused_parameter(uint32_t owner, uint64_t accumulator, std::string_view name,
                                    uint32_t parameter) {
  push(EventKind::kUnusedParameter, 0, accumulator, 0, intern(name), owner, parameter);
}
uint64_t TraceBuilder::bucket_ready(uint32_t owner, uint32_t bucket, uint32_t parameters) {
  const uint64_t c = next_collective_++;
  push(EventKind::kBucketReady, 0, 0, c, bucket, owner, parameters);
  push(EventKind::kCollectiveBegin, static_cast<uint8_t>(trace::CollectiveOp::kAllreduce), 0, c,
       4096, owner, bucket);
  return c;
}
void TraceBuilder::collective_end(uint32_t owner, uint64_t collective,
                                  trace::CollectiveStatus status) {
  push(EventKind::kCollectiveEnd, static_cast<uint8_t>(status), 0, collective, 1000, owner);
}
void TraceBuilder::buckets_finalized(uint32_t owner, uint64_t backward) {
  push(EventKind::kBucketsFinalized, 0, 0, 0, backward, owner);
}

trace::TraceData TraceBuilder::take() {
  trace::TraceData out = std::move(data_);
  data_ = trace::TraceData{};
  return out;
}

// ---- make_synthetic_trace -----------------------------------------------------

namespace {

struct LiveHook {
  uint64_t key;
  HookKind kind;
  uint32_t owner;
};

// The hooks the generator has put on each Function, in registration order.
class Hooks {
 public:
  explicit Hooks(TraceBuilder& b) : b_(b) {}
  uint64_t add(uint64_t node, HookKind kind, uint32_t owner) {
    const uint64_t key = b_.add_hook(node, kind, owner);
    on_[node].push_back({key, kind, owner});
    return key;
  }
  std::vector<LiveHook>& on(uint64_t node) { return on_[node]; }
  bool remove(uint64_t node, uint64_t key, uint32_t actor, RemoveCause cause) {
    auto& list = on_[node];
    auto it =
        std::find_if(list.begin(), list.end(), [&](const LiveHook& h) { return h.key == key; });
    if (it == list.end()) return false;
    b_.remove(node, key, it->kind, it->owner, actor, cause);
    list.erase(it);
    return true;
  }
  void fire(uint64_t node, HookKind kind) {
    for (const LiveHook& h : on_[node]) {
      if (h.kind == kind) b_.fire(node, h.key, kind, h.owner);
    }
  }
  // A non-leaf Function goes: its hooks are reported removed, then it is released.
  void release(uint64_t node) {
    for (const LiveHook& h : on_[node]) {
      b_.remove(node, h.key, h.kind, h.owner, 0, RemoveCause::kNodeReleased);
    }
    on_.erase(node);
    b_.release(node);
  }

 private:
  TraceBuilder& b_;
  std::unordered_map<uint64_t, std::vector<LiveHook>> on_;
};

}  // namespace

trace::TraceData make_synthetic_trace(const SyntheticOptions& o) {
  if (o.parameters < 2 || o.parameters % 2) {
    throw std::invalid_argument("make_synthetic_trace: parameters must be even and >= 2");
  }
  TraceBuilder b(o.header_rank);
  b.rank(o.rank);
  Hooks hooks(b);
  std::mt19937_64 rng(o.seed);
  const uint32_t P = o.parameters;
  const uint32_t per_bucket = 8;
  const uint32_t num_buckets = (P + per_bucket - 1) / per_bucket;
  auto bucket_of = [&](uint32_t p) { return (P - 1 - p) / per_bucket; };

  const uint32_t user = b.owner(OwnerKind::kUser, "user");
  const uint32_t probe = b.owner(OwnerKind::kUser, "probe");
  std::vector<uint64_t> acc(P);
  for (uint32_t p = 0; p < P; ++p) {
    acc[p] = b.accumulator(fmt::format("{}.{} [{}]", p / 2, p % 2 ? "bias" : "weight", 16 + p));
  }
  // A leaf outside DDP whose AccumulateGrad is re-created every step.
  uint64_t emb = b.accumulator("embedding [32, 16]");
  const std::vector<LiveHook> leaf_hooks = {
      {b.add_hook(emb, HookKind::kTensorPre, probe), HookKind::kTensorPre, probe},
      {b.add_hook(emb, HookKind::kPostAccumulate, probe), HookKind::kPostAccumulate, probe}};

  uint32_t reducer = 0;
  int reducers_built = 0;
  auto build_reducer = [&] {
    reducer = b.owner(OwnerKind::kReducer, fmt::format("Reducer {}", ++reducers_built));
    b.reducer_constructed(reducer, P, num_buckets);
    for (uint32_t p = 0; p < P; ++p) hooks.add(acc[p], HookKind::kPost, reducer);
  };
  auto destroy_reducer = [&] {
    uint32_t removed = 0;
    for (uint32_t p = 0; p < P; ++p) {
      std::vector<LiveHook> list = hooks.on(acc[p]);
      for (const LiveHook& h : list) {
        const bool mine = h.owner == reducer;
        const bool sweep = o.policy == trace::DestroyPolicy::kByType && h.owner != user &&
                           h.owner != probe;
        if ((o.policy == trace::DestroyPolicy::kByKey && mine) || sweep) {
          removed += hooks.remove(acc[p], h.key, reducer,
                                  sweep ? RemoveCause::kByType : RemoveCause::kByKey);
        }
      }
    }
    b.reducer_destroyed(reducer, o.policy, removed);
    b.destroy_owner(reducer);
  };
  build_reducer();

  uint64_t stale_key = 0;
  for (uint64_t step = 0; b.size() < o.events; ++step) {
    if (o.rebuild_every && step > 0 && step % o.rebuild_every == 0) {
      destroy_reducer();
      build_reducer();
    }
    if (step > 0) emb = b.accumulator("embedding [32, 16]", emb);  // hooks follow
    b.prepare_for_backward(reducer, step);
    // Forward: layer l uses parameters 2l (weight) and 2l + 1 (bias).
    std::vector<uint64_t> graph;
    uint64_t prev = emb;
    for (uint32_t l = 0; l < P / 2; ++l) {
      const uint64_t f = b.function("AddmmBackward0");
      b.edge(f, prev, 0);
      b.edge(f, acc[2 * l], 1);
      b.edge(f, acc[2 * l + 1], 2);
      graph.push_back(f);
      prev = f;
    }
    const uint64_t loss = b.function("NllLossBackward0");
    b.edge(loss, prev);
    graph.push_back(loss);
    hooks.add(loss, HookKind::kPre, probe);
    const uint64_t target = graph[rng() % graph.size()];
    const uint64_t self_removing = hooks.add(target, HookKind::kPost, user);
    if (rng() % 4 == 0) hooks.add(graph[rng() % graph.size()], HookKind::kTensorPre, user);

    // Backward, last Function first; then the accumulators, last parameter first.
    b.push(EventKind::kBackwardBegin, 0, 0, 0, 1);
    for (size_t k = graph.size(); k-- > 0;) {
      const uint64_t f = graph[k];
      hooks.fire(f, HookKind::kTensorPre);
      hooks.fire(f, HookKind::kPre);
      b.push(EventKind::kApplyBegin, 0, f);
      b.push(EventKind::kApplyEnd, 0, f);
      hooks.fire(f, HookKind::kPost);
      if (f == target) hooks.remove(f, self_removing, user, RemoveCause::kByKey);
    }
    for (const LiveHook& h : leaf_hooks) {
      if (h.kind == HookKind::kTensorPre) b.fire(emb, h.key, h.kind, h.owner);
    }
    b.push(EventKind::kApplyBegin, 0, emb);
    for (const LiveHook& h : leaf_hooks) {
      if (h.kind == HookKind::kPostAccumulate) b.fire(emb, h.key, h.kind, h.owner);
    }
    b.push(EventKind::kApplyEnd, 0, emb);
    std::vector<uint32_t> pending(num_buckets, 0);
    for (uint32_t p = 0; p < P; ++p) ++pending[bucket_of(p)];
    uint32_t next_bucket = 0;
    std::vector<uint64_t> collectives;
    for (uint32_t p = P; p-- > 0;) {
      b.push(EventKind::kApplyBegin, 0, acc[p]);
      b.push(EventKind::kApplyEnd, 0, acc[p]);
      for (const LiveHook& h : hooks.on(acc[p])) {
        b.fire(acc[p], h.key, h.kind, h.owner);
        if (h.owner != reducer) {
          b.push(EventKind::kAutogradHookNoop, 1, acc[p], 0, p, h.owner);
          continue;
        }
        b.mark_ready(reducer, acc[p], p, bucket_of(p));
        --pending[bucket_of(p)];
        while (next_bucket < num_buckets && pending[next_bucket] == 0) {
          const uint32_t size = std::min(per_bucket, P - next_bucket * per_bucket);
          collectives.push_back(b.bucket_ready(reducer, next_bucket++, size));
        }
      }
    }
    for (uint64_t c : collectives) b.collective_end(reducer, c);
    if (next_bucket == num_buckets) b.buckets_finalized(reducer, step);
    b.push(EventKind::kBackwardEnd, 0, 0, 0, graph.size() + P + 1);

    if (step % 7 == 3 && stale_key) {
      b.remove_failed(graph.back(), stale_key, HookKind::kPost, user);  // a stale key refused
    }
    stale_key = self_removing;
    for (uint64_t f : graph) hooks.release(f);
    b.release(emb);  // its hooks live on the tensor until the next one
    b.push(EventKind::kTrainStep, 0, 0, rng(), step);
  }
  return b.take();
}

}  // namespace hookscope::analysis
