// DDP's collectives as PyTorch's profiler sees them (Note [Collectives
// through RecordFunction]): one global RecordFunction callback, USER_SCOPE
// only, turns c10d's "gloo:all_reduce" (and the like) into kCollectiveBegin /
// kCollectiveEnd, and the prepared Reducer's bucket allreduces into
// kBucketReady as hookscope's runtime writes them.

#include <ATen/record_function.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <optional>
#include <string_view>
#include <thread>

#include "bridge.h"
#include "nodes_state.h"
#include "trace/emit.h"
#include "trace/emitters_ddp.h"

namespace hookscope::bridge {

// Note [Collectives through RecordFunction]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// c10d's process groups (1.13 and 2.x; Gloo and NCCL) open a RecordFunction
// of scope USER_SCOPE for each collective, named "<backend>:<op>" with the
// tensors as its inputs, and end it when the work completes (Gloo: on its
// worker thread): what torch.profiler shows. The bridge adds one global
// callback for USER_SCOPE alone while it records, so aten ops (scope
// FUNCTION) stay as cheap as without it, and writes each one as
// kCollectiveBegin (bytes: the inputs' sizes) and kCollectiveEnd (duration:
// our clock from begin to end; status always ok: the callback cannot tell a
// failed work from a finished one, and a failure reaches the program as an
// exception that _recorder.py records).
// Which collective is a bucket's: a Reducer reduces its buckets strictly in
// order within a backward (Reducer::mark_bucket_ready), on the thread of
// the backward. So, inside a backward, the n-th floating-point allreduce of
// the Reducer prepared for it is its bucket n, when its size is that
// bucket's (sizes known: set_buckets; a user's allreduce from a hook of
// another size, or find_unused_parameters' integer allreduce of its used
// map, stays a collective of no Reducer). Buckets are read from DDP's
// logging data (_recorder.py): their byte sizes from construction, which
// parameter is in which bucket only once DDP rebuilt them (the first
// buckets' members are not exposed by 1.13 or 2.6: kMarkReady says kNoBucket).

namespace {

std::optional<at::CallbackHandle> g_callback;
std::atomic<uint64_t> g_next_collective{1};
std::atomic<int> g_in_backward{0};

// Collectives begun and whose record function has not gone yet (it goes
// right after on_end): finish() waits for them (wait_collectives).
std::atomic<int64_t> g_open{0};

struct Collective : at::ObserverContext {
  Collective() { g_open++; }
  ~Collective() override { g_open--; }
  uint64_t id = 0;
  uint64_t epoch = 0;
  uint64_t begin_ns = 0;
  uint32_t owner = 0;
};

// "gloo:all_reduce" -> kAllreduce; nullopt for a record function that is no
// collective (DDP's "DistributedDataParallel.forward", the user's own) or
// a collective the trace has no op for (reduce_scatter, send, ...).
std::optional<trace::CollectiveOp> collective_op(std::string_view name) {
  const size_t colon = name.find(':');
  if (colon == std::string_view::npos) return std::nullopt;
  const std::string_view backend = name.substr(0, colon);
  if (backend != "gloo" && backend != "nccl" && backend != "mpi" && backend != "ucc") return std::nullopt;
  const std::string_view op = name.substr(colon + 1);
  if (op == "all_reduce" || op == "all_reduce_coalesced") return trace::CollectiveOp::kAllreduce;
  if (op == "broadcast") return trace::CollectiveOp::kBroadcast;
  if (op == "barrier") return trace::CollectiveOp::kBarrier;
  if (op == "all_gather" || op == "all_gather_into_tensor" || op == "_allgather_base") {
    return trace::CollectiveOp::kAllgather;
  }
  return std::nullopt;
}

std::unique_ptr<at::ObserverContext> on_begin(const at::RecordFunction& fn) {
  const char* name = fn.name();
  if (name == nullptr || !trace::recording()) return nullptr;
  const auto op = collective_op(name);
  if (!op) return nullptr;
  uint64_t bytes = 0;
  bool floating = false;
  for (const c10::IValue& v : fn.inputs()) {
    if (!v.isTensor()) continue;
    const at::Tensor& t = v.toTensor();
    bytes += static_cast<uint64_t>(t.numel()) * t.element_size();
    floating = floating || at::isFloatingType(t.scalar_type());
  }
  auto c = std::make_unique<Collective>();
  c->id = g_next_collective++;
  c->epoch = g_epoch.load(std::memory_order_relaxed);
  stamp_rank();
  uint32_t bucket = trace::kNoBucket;
  {
    std::lock_guard<std::recursive_mutex> lock(g_mutex);
    BucketTurn turn;
    if (*op == trace::CollectiveOp::kAllreduce && floating && g_in_backward.load() > 0 &&
        next_bucket(bytes, turn)) {
      c->owner = turn.owner;
      bucket = turn.bucket;
      trace::emit_bucket_ready(turn.owner, c->id, turn.bucket, turn.params);
    }
  }
  trace::emit_collective_begin(c->owner, *op, c->id, bytes, bucket);
  c->begin_ns = trace::now_ns();
  return c;
}

void on_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  auto* c = static_cast<Collective*>(ctx);
  if (c == nullptr || c->epoch != g_epoch.load(std::memory_order_relaxed) || !trace::recording()) return;
  stamp_rank();  // Gloo's worker thread
  trace::emit_collective_end(c->owner, trace::CollectiveStatus::kOk, c->id, trace::now_ns() - c->begin_ns,
                             trace::kPlacementHost);
}

}  // namespace

void observe_collectives(bool on) {
  if (on && !g_callback) {
    g_callback = at::addGlobalCallback(at::RecordFunctionCallback(&on_begin, &on_end)
                                           .needsInputs(true)
                                           .scopes({at::RecordScope::USER_SCOPE}));
  } else if (!on && g_callback) {
    at::removeCallback(*g_callback);
    g_callback.reset();
  }
}

// Note [The last collective's end]: Gloo completes a work's future before
// it ends the work's record function, so the program can go on, and stop
// the recording, between the two: the last allreduce of the run read begun
// and never ended (a test saw it once in four runs under load). finish()
// gives the ends of what is in flight a bounded time; a collective that
// never ends (a peer died) costs at most `limit` at exit.
void wait_collectives(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (g_open.load() > 0 && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

void set_in_backward(bool in) {
  if (in) {
    g_in_backward++;
  } else if (g_in_backward.load() > 0) {
    g_in_backward--;
  }
}

}  // namespace hookscope::bridge
