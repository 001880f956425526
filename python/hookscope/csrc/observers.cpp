// The bridge's observer hooks on every registered Node (Note [Observer
// hooks]): executions, C++ hook fires (with what a DDP Reducer's fire
// means), and the Node's release.

#include <algorithm>
#include <unordered_map>
#include <vector>

#include "bridge.h"
#include "nodes_state.h"
#include "trace/emit.h"
#include "trace/emitters_autograd.h"
#include "trace/emitters_ddp.h"

namespace hookscope::bridge {
namespace {

// DDP Reducers (owner ids) whose hooks the bridge knows: which parameter
// index each AccumulateGrad is, their buckets (Note [Collectives through
// RecordFunction]), and whether the Reducer prepared for the backward in
// progress (DDP forward): only then does its hook act.
struct Reducer {
  std::unordered_map<uint64_t, uint32_t> param_of_node;
  std::vector<uint32_t> bucket_of_param;  // kNoBucket: not known
  std::vector<uint64_t> bucket_bytes;
  std::vector<uint32_t> bucket_params;    // parameters per bucket (0: not known)
  uint32_t next_bucket = 0;               // in the backward in progress
  uint32_t ready = 0;                     // parameters its hooks marked ready in it
};
std::unordered_map<uint32_t, Reducer> g_reducers;
std::vector<uint32_t> g_prepared;
std::vector<uint32_t> g_no_sync;  // their DDP ran forward inside no_sync() (NoopReason::kNoSync)

void emit_fire(const NodeState& s, const Foreign& f) {
  trace::emit_hook_fired(s.id, f.key, HookKind::kPost, f.owner);
  auto r = g_reducers.find(f.owner);
  if (r == g_reducers.end()) return;
  const auto& params = r->second.param_of_node;
  auto p = params.find(s.id);
  if (std::find(g_prepared.begin(), g_prepared.end(), f.owner) == g_prepared.end()) {
    // As the runtime's Reducer writes it (trace/emitters_ddp.h emit_autograd_hook_noop).
    const bool no_sync = std::find(g_no_sync.begin(), g_no_sync.end(), f.owner) != g_no_sync.end();
    trace::emit_autograd_hook_noop(f.owner, no_sync ? trace::NoopReason::kNoSync : trace::NoopReason::kNotPrepared,
                                   s.id, f.key, p != params.end() ? p->second : 0);
  } else if (p != params.end()) {
    ++r->second.ready;
    const auto& buckets = r->second.bucket_of_param;
    trace::emit_mark_ready(f.owner, s.id, p->second,
                           p->second < buckets.size() ? buckets[p->second] : trace::kNoBucket);
  }
}

bool live(const NodeState& s) {
  return s.epoch == g_epoch.load(std::memory_order_relaxed) && trace::recording();
}

}  // namespace

void stamp_rank() {
  if (trace::thread_rank() != g_rank) trace::set_thread_rank(static_cast<uint16_t>(g_rank));
}

variable_list ObserverPre::operator()(const variable_list& grads) {
  if (!live(*state)) return grads;
  stamp_rank();
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto fired = [&](const std::vector<Foreign>& known, const FunctionPreHook* hook) {
    const auto addr = reinterpret_cast<uintptr_t>(hook);
    for (const Foreign& f : known) {
      if (f.addr == addr) {
        trace::emit_hook_fired(state->id, f.key, f.kind, f.owner);
      }
    }
  };
#if HOOKSCOPE_RETAINS_GRAD_HOOKS
  // They ran before pre_hooks() (Note [retain_grad on 2.x]).
  for (const auto& [output_nr, hook] : state->node->retains_grad_hooks()) {
    fired(state->retain, hook.get());
  }
#endif
  // Every pre hook before this one has run (the engine runs them all, in order).
  for (const auto& hook : state->node->pre_hooks()) {
    if (hook.get() == this) break;
    fired(state->pre, hook.get());
  }
  trace::emit_apply_begin(state->id);
  return grads;
}

ObserverPost::~ObserverPost() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (live(*state)) trace::emit_node_released(state->id);
  forget_node(*state);
}

variable_list ObserverPost::operator()(const variable_list& outputs, const variable_list& inputs) {
  if (!live(*state)) return outputs;
  stamp_rank();
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  for (const auto& hook : state->node->post_hooks()) {
    if (hook.get() == this) break;
    const auto addr = reinterpret_cast<uintptr_t>(hook.get());
    for (const Foreign& f : state->post) {
      if (f.addr == addr) emit_fire(*state, f);
    }
  }
  trace::emit_apply_end(state->id);
  return outputs;
}

void clear_reducers() {
  g_reducers.clear();
  g_prepared.clear();
  g_no_sync.clear();
}

void set_reducer(uint32_t owner, const std::vector<uint64_t>& accumulators) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (accumulators.empty()) {
    g_reducers.erase(owner);
    return;
  }
  auto& m = g_reducers[owner].param_of_node;
  m.clear();
  for (size_t i = 0; i < accumulators.size(); ++i) {
    if (accumulators[i]) m[accumulators[i]] = static_cast<uint32_t>(i);
  }
}

void set_buckets(uint32_t owner, const std::vector<uint64_t>& bytes,
                 const std::vector<std::vector<uint32_t>>& params) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto r = g_reducers.find(owner);
  if (r == g_reducers.end()) return;
  Reducer& red = r->second;
  red.bucket_bytes = bytes;
  red.bucket_params.assign(bytes.size(), 0);
  red.bucket_of_param.assign(red.param_of_node.size(), trace::kNoBucket);
  for (size_t b = 0; b < params.size() && b < bytes.size(); ++b) {
    red.bucket_params[b] = static_cast<uint32_t>(params[b].size());
    for (uint32_t i : params[b]) {
      if (i < red.bucket_of_param.size()) red.bucket_of_param[i] = static_cast<uint32_t>(b);
    }
  }
}

bool next_bucket(uint64_t bytes, BucketTurn& turn) {
  // The Reducer prepared last: DDP's forward right before this backward.
  if (g_prepared.empty()) return false;
  auto r = g_reducers.find(g_prepared.back());
  if (r == g_reducers.end()) return false;
  Reducer& red = r->second;
  const uint32_t b = red.next_bucket;
  if (!red.bucket_bytes.empty() && (b >= red.bucket_bytes.size() || red.bucket_bytes[b] != bytes)) return false;
  turn.owner = r->first;
  turn.bucket = b;
  turn.params = b < red.bucket_params.size() ? red.bucket_params[b] : 0;
  red.next_bucket = b + 1;
  return true;
}

void set_prepared(uint32_t owner, bool prepared) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  auto it = std::find(g_prepared.begin(), g_prepared.end(), owner);
  if (prepared && it == g_prepared.end()) g_prepared.push_back(owner);
  if (!prepared && it != g_prepared.end()) g_prepared.erase(it);
  if (prepared) {
    auto r = g_reducers.find(owner);
    if (r != g_reducers.end()) {
      r->second.next_bucket = 0;
      r->second.ready = 0;
    }
  }
  if (prepared) g_no_sync.erase(std::remove(g_no_sync.begin(), g_no_sync.end(), owner), g_no_sync.end());
}

int64_t ready_count(uint32_t owner) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (std::find(g_prepared.begin(), g_prepared.end(), owner) == g_prepared.end()) return -1;
  auto r = g_reducers.find(owner);
  return r == g_reducers.end() ? 0 : r->second.ready;
}

void set_no_sync(uint32_t owner) {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  if (std::find(g_no_sync.begin(), g_no_sync.end(), owner) == g_no_sync.end()) g_no_sync.push_back(owner);
}

void clear_prepared() {
  std::lock_guard<std::recursive_mutex> lock(g_mutex);
  g_prepared.clear();
  g_no_sync.clear();
}

}  // namespace hookscope::bridge
