#pragma once
// The load pass's working state (internal to core/analysis): model_build.cpp
// walks the timeline, model_build_ddp.cpp handles the DDP event kinds.

#include <map>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model.h"

namespace hookscope::analysis {

class ModelBuilder {
 public:
  explicit ModelBuilder(Model& m) : m_(m), src_(m.traces_.size()) {}
  void run();

 private:
  struct SourceMaps {
    std::unordered_map<uint64_t, FunctionIndex> functions;
    std::unordered_map<uint64_t, HookIndex> hooks;
    std::unordered_map<uint32_t, OwnerIndex> owners;
    std::map<std::pair<uint16_t, uint64_t>, uint32_t> collectives;
  };

  void merge();
  void apply(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e);
  void apply_ddp(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e);
  void finish();

  uint32_t str(uint32_t source, uint64_t id);
  FunctionIndex new_function(uint32_t source, uint16_t rank, uint64_t id, EventIndex at,
                             bool announced);
  FunctionIndex function_ref(uint32_t source, uint16_t rank, uint64_t id);
  FunctionIndex function_lookup(uint32_t source, uint64_t id) const;
  OwnerIndex owner_ref(uint32_t source, uint16_t rank, uint32_t id);
  HookIndex hook_ref(uint32_t source, uint16_t rank, const trace::Event& e, EventIndex at);
  ReducerIndex reducer_ref(OwnerIndex owner, uint32_t source, uint16_t rank);
  ParameterInfo& parameter(ReducerIndex r, uint64_t index);
  uint32_t collective_ref(uint32_t source, uint16_t rank, uint64_t id);

  bool survives_release(HookIndex h, FunctionIndex f) const;
  FunctionIndex latest(FunctionIndex f) const;
  void attach(HookIndex h, FunctionIndex f, EventIndex at);
  void open_segment(HookIndex h, FunctionIndex f, EventIndex at, bool on_tensor);
  void close_segment(HookIndex h, EventIndex at);
  void end_hook(HookIndex h, EventIndex at, trace::RemoveCause cause, OwnerIndex by,
                bool implicit);

  Model& m_;
  std::vector<SourceMaps> src_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::vector<std::vector<uint32_t>> open_;  // per Function: its open segments
  std::vector<uint32_t> open_of_hook_;       // per hook: its open segment, or kNoIndex
  std::vector<std::pair<HookIndex, EventIndex>> fire_events_;
  std::vector<ReducerIndex> reducer_of_owner_;
};

}  // namespace hookscope::analysis
