#pragma once
// Traces made by hand, event by event, in the exact shape Note [Event record]
// gives each kind: for tests that need a trace with a given bug (the DDP
// runtime's own traces come from the recorder), and for benchmarks that need
// millions of events. Nothing here checks that the story makes sense.

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "trace/event.h"
#include "trace/trace_data.h"

namespace hookscope::analysis {

class TraceBuilder {
 public:
  // `header_rank` >= 0: a per-rank process trace; -1: ranks run as threads.
  explicit TraceBuilder(int32_t header_rank = -1);

  TraceBuilder& rank(uint16_t rank);      // stamped on the events that follow
  TraceBuilder& thread(uint32_t thread);  // likewise
  TraceBuilder& time(uint64_t t_ns);      // the next event's time; then +1 ns per event
  size_t size() const { return data_.events.size(); }  // index of the next event

  uint32_t intern(std::string_view s);
  trace::Event& push(trace::EventKind kind, uint8_t sub = 0, uint64_t node = 0, uint64_t key = 0,
                     uint64_t arg = 0, uint32_t owner = 0, uint32_t actor = 0);

  // ---- autograd (ids and keys come from counters, like the runtime's) ----
  uint64_t function(std::string_view name, std::string_view label = {});
  // A leaf's AccumulateGrad; `previous` is the leaf's last one (0: none).
  uint64_t accumulator(std::string_view label, uint64_t previous = 0);
  void edge(uint64_t from, uint64_t to, uint32_t input_nr = 0);
  void release(uint64_t node);
  uint32_t owner(trace::OwnerKind kind, std::string_view label);
  void destroy_owner(uint32_t owner);
  uint64_t add_hook(uint64_t node, trace::HookKind kind, uint32_t owner, uint32_t input_nr = 0);
  void fire(uint64_t node, uint64_t key, trace::HookKind kind, uint32_t owner);
  void remove(uint64_t node, uint64_t key, trace::HookKind kind, uint32_t owner, uint32_t actor,
              trace::RemoveCause cause = trace::RemoveCause::kByKey);
  void remove_failed(uint64_t node, uint64_t key, trace::HookKind kind, uint32_t actor);

  // ---- DDP (owner = the Reducer's owner id) ----
  void reducer_constructed(uint32_t owner, uint32_t parameters, uint32_t buckets);
  void reducer_destroyed(uint32_t owner, trace::DestroyPolicy policy, uint32_t removed);
  void prepare_for_backward(uint32_t owner, uint64_t backward);
  void mark_ready(uint32_t owner, uint64_t accumulator, uint32_t parameter, uint32_t bucket);
  void marked_twice(uint32_t owner, uint64_t accumulator, std::string_view name,
                    uint32_t parameter);
  void unused_parameter(uint32_t owner, uint64_t accumulator, std::string_view name,
                        uint32_t parameter);
  // kBucketReady then kCollectiveBegin; returns the collective id.
  uint64_t bucket_ready(uint32_t owner, uint32_t bucket, uint32_t parameters);
  void collective_end(uint32_t owner, uint64_t collective,
                      trace::CollectiveStatus status = trace::CollectiveStatus::kOk);
  void buckets_finalized(uint32_t owner, uint64_t backward);

  trace::TraceData take();

 private:
  trace::TraceData data_;
  std::unordered_map<std::string, uint32_t> ids_;
  uint16_t rank_ = 0;
  uint32_t thread_ = 0;
  uint64_t t_ns_ = 1000;
  uint64_t next_node_ = 1;
  uint64_t next_key_ = 1;
  uint32_t next_owner_ = 1;
  uint64_t next_collective_ = 1;
};

// A long trace that reads like training under DDP: per step a forward graph
// (created, backward run, released), the Reducer's post hooks firing on
// every parameter's AccumulateGrad with mark_ready / buckets / collectives,
// user hooks added, fired and removed, a leaf whose AccumulateGrad is
// re-created every step (its hooks migrate), and every `rebuild_every` steps
// the Reducer destroyed with `policy` and built again on the same module.
struct SyntheticOptions {
  size_t events = 1'000'000;  // stops after the step that reaches this
  uint32_t parameters = 64;
  uint32_t rebuild_every = 50;  // 0: never
  trace::DestroyPolicy policy = trace::DestroyPolicy::kByKey;
  uint64_t seed = 0;
  int32_t header_rank = -1;
  uint16_t rank = 0;
};

trace::TraceData make_synthetic_trace(const SyntheticOptions& options);

}  // namespace hookscope::analysis
