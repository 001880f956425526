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

// Drops what a table reserved or grew past its size when that is more than
// an eighth of it (Note [Model tables sized up front]).
template <typename T>
inline void trim(std::vector<T>& v) {
  if (v.capacity() - v.size() > v.size() / 8) v.shrink_to_fit();
}

// Raw id -> model index for the ids every event looks up (Functions, hooks):
// open addressing with linear probing over flat arrays, which the load pass
// walks far faster than std::unordered_map's nodes. No erase.
class IdMap {
 public:
  IdMap() { rehash(16); }
  // Room for n entries without growing.
  void reserve(size_t n) {
    if (2 * n > values_.size()) rehash(capacity_for(n));
  }
  const uint32_t* find(uint64_t key) const {
    for (size_t i = slot(key);; i = (i + 1) & mask_) {
      if (values_[i] == kNoIndex) return nullptr;
      if (keys_[i] == key) return &values_[i];
    }
  }
  // Sets key's index (any index but kNoIndex).
  void set(uint64_t key, uint32_t value) {
    if (2 * (size_ + 1) > values_.size()) rehash(values_.size() * 2);
    size_t i = slot(key);
    for (; values_[i] != kNoIndex; i = (i + 1) & mask_) {
      if (keys_[i] == key) {
        values_[i] = value;
        return;
      }
    }
    keys_[i] = key;
    values_[i] = value;
    ++size_;
  }
  size_t size() const { return size_; }
  template <typename F>
  void for_each(F f) const {
    for (size_t i = 0; i < values_.size(); ++i) {
      if (values_[i] != kNoIndex) f(keys_[i], values_[i]);
    }
  }

 private:
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
  }
  size_t slot(uint64_t key) const {
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_) & mask_;
  }
  void rehash(size_t capacity) {
    std::vector<uint64_t> keys(capacity);
    std::vector<uint32_t> values(capacity, kNoIndex);
    keys.swap(keys_);
    values.swap(values_);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = 0;
    for (size_t i = 0; i < values.size(); ++i) {
      if (values[i] != kNoIndex) set(keys[i], values[i]);
    }
  }
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> values_;  // kNoIndex: an empty slot
  size_t size_ = 0;
  size_t mask_ = 0;
  unsigned shift_ = 64;
};

class ModelBuilder {
 public:
  explicit ModelBuilder(Model& m) : m_(m), src_(m.traces_.size()) {}
  void run();

 private:
  struct SourceMaps {
    IdMap functions;
    IdMap hooks;
    std::unordered_map<uint32_t, OwnerIndex> owners;
    std::map<std::pair<uint16_t, uint64_t>, uint32_t> collectives;
  };

  struct ThreadState {
    uint64_t last_t = 0;
    EventIndex last_at = kNever;
    uint32_t backwards = 0;  // open backward passes
    uint32_t applies = 0;    // open Function applies
  };

  void merge();
  void reserve_tables();
  void check(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e);
  void malformed(MalformedKind kind, EventIndex at, const char* what, EventIndex related = kNever);
  bool take_slots(uint64_t n, EventIndex at, const char* what);
  void find_edge_cycles();
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
  ParameterInfo& parameter(ReducerIndex r, uint64_t index, EventIndex at);
  uint32_t collective_ref(uint32_t source, uint16_t rank, uint64_t id);

  bool survives_release(HookIndex h, FunctionIndex f) const;
  FunctionIndex latest(FunctionIndex f);
  bool link(FunctionIndex previous, FunctionIndex f, EventIndex at);
  void attach(HookIndex h, FunctionIndex f, EventIndex at);
  void open_segment(HookIndex h, FunctionIndex f, EventIndex at, bool on_tensor);
  void close_segment(HookIndex h, EventIndex at);
  void end_hook(HookIndex h, EventIndex at, trace::RemoveCause cause, OwnerIndex by,
                bool implicit);

  Model& m_;
  std::vector<SourceMaps> src_;
  std::unordered_map<std::string, uint32_t> string_ids_;
  std::vector<std::vector<uint32_t>> open_;  // per Function: its open segments (any order)
  std::vector<uint32_t> open_pos_;           // per segment: its place in open_[function]
  std::vector<uint32_t> open_of_hook_;       // per hook: its open segment, or kNoIndex
  std::vector<FunctionIndex> latest_hint_;   // per Function: one at or after it in its leaf chain
  std::vector<uint8_t> owner_snapshot_;      // per owner: announced by a start snapshot
  std::unordered_map<uint64_t, ThreadState> threads_;  // by source << 32 | thread
  uint64_t last_thread_key_ = UINT64_MAX;  // threads_'s last lookup (its nodes never move)
  ThreadState* last_thread_ = nullptr;
  uint64_t slots_left_ = 0;  // Note [Model memory bound]
  std::vector<uint8_t> clock_back_reported_;  // per source
  std::vector<uint8_t> rank_header_bad_;  // per source: header rank >= world size, unreported
  std::vector<std::pair<HookIndex, EventIndex>> fire_events_;
  std::vector<ReducerIndex> reducer_of_owner_;
};

}  // namespace hookscope::analysis
