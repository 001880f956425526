#pragma once
// The load pass's working state (internal to core/analysis): model_build.cpp
// walks the timeline, model_build_ddp.cpp handles the DDP event kinds.

#include <cstdint>
#include <cstdlib>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/model.h"
#include "trace/pages.h"

namespace hookscope::analysis {

// Drops what a table reserved or grew past its size when that is more than
// an eighth of it (Note [Model tables sized up front]).
template <typename T>
inline void trim(std::vector<T>& v) {
  if (v.capacity() - v.size() > v.size() / 8) v.shrink_to_fit();
}

// Note [Tables populated at once]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A table reserved up front (Note [Model tables sized up front]) is filled
// once, front to back, in fresh memory: page by page that was a page fault
// per 4 KiB (a tenth of a load, on a VM where a fault costs ~1 us). Big
// tables have their pages populated in one call after they are reserved
// (MADV_POPULATE_WRITE, Linux 5.14; advice only: where refused, the pages
// fault in as before).
template <typename T, typename A>
inline void populate(std::vector<T, A>& v) {
  const size_t bytes = v.capacity() * sizeof(T);
  if (bytes < (size_t{1} << 20)) return;  // a syscall costs more than the faults it saves
  trace::populate_pages(v.data(), bytes);
}

// Key of a collective: its id is unique per (source, rank).
struct CollectiveKey {
  uint64_t id = 0;
  uint16_t rank = 0;
  friend bool operator==(const CollectiveKey&, const CollectiveKey&) = default;
};
inline uint64_t id_hash(uint64_t key) { return key * 0x9E3779B97F4A7C15ull; }
inline uint64_t id_hash(const CollectiveKey& k) {
  return (k.id ^ (uint64_t{k.rank} << 48 | uint64_t{k.rank})) * 0x9E3779B97F4A7C15ull;
}

// Memory for big tables that are read at random: 2 MiB aligned and marked
// for transparent huge pages, so that a random lookup misses one TLB entry
// per 2 MiB, not per 4 KiB page (on a 64 MiB map nearly every lookup did).
template <typename T>
struct HugePageAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;
  HugePageAllocator() = default;
  template <typename U>
  HugePageAllocator(const HugePageAllocator<U>&) {}
  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < 2 * kHuge) return std::allocator<T>().allocate(n);
    void* p = std::aligned_alloc(kHuge, (bytes + kHuge - 1) / kHuge * kHuge);
    if (!p) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // advice only: fine if refused
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t n) {
    if (n * sizeof(T) < 2 * kHuge) {
      std::allocator<T>().deallocate(p, n);
    } else {
      std::free(p);
    }
  }
  friend bool operator==(const HugePageAllocator&, const HugePageAllocator&) { return true; }
};

// Note [Id maps]
// ~~~~~~~~~~~~~~
// Raw id -> model index for the ids the load pass looks up (Functions, hooks,
// owners, collectives): open addressing with linear probing over one flat
// array of (key, index) slots, which the load pass walks far faster than
// std::unordered_map's nodes or std::map's tree. No erase: an id used again
// is set to its new index. A big map (millions of Functions) misses the cache
// on every lookup although a trace names few of them at a time (this step's
// graph, the parameters' AccumulateGrads): a small direct-mapped cache of
// recent lookups, written through by set(), answers those.
// Ids are mostly counters from 1: integer ids below a bound set by reserve()
// (twice the entries expected) are kept in a flat array indexed by the id
// instead, which new ids fill in order (no random probe per new Function),
// and the hash table holds only the others.
template <typename Key>
class IdMap {
 public:
  IdMap() { rehash(16); }
  // Room for n entries without growing (for integer ids that are counters).
  void reserve(size_t n) {
    if constexpr (kDense) {
      if (dense_.empty()) {
        dense_.assign(2 * n + 1024, kNoIndex);
        return;
      }
    }
    if (2 * n > slots_.size()) rehash(capacity_for(n));
  }
  // The index of `key`, kNoIndex when absent.
  uint32_t find(const Key& key) {
    if constexpr (kDense) {
      if (key < dense_.size()) return dense_[key];
    }
    const uint64_t hash = id_hash(key);
    if (!recent_.empty()) {
      const Slot& r = recent_[hash >> recent_shift_];
      if (r.value != kNoIndex && r.key == key) return r.value;
    }
    for (size_t i = slot(hash);; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.value == kNoIndex) return kNoIndex;
      if (s.key == key) {
        if (!recent_.empty()) recent_[hash >> recent_shift_] = s;
        return s.value;
      }
    }
  }
  // Starts loading the slot of `key` into the cache, for a find() soon after.
  void prefetch(const Key& key) const {
    if constexpr (kDense) {
      if (key < dense_.size()) return __builtin_prefetch(&dense_[key]);
    }
    __builtin_prefetch(&slots_[slot(id_hash(key))]);
  }
  // Sets key's index (any index but kNoIndex); returns the one it replaces, or kNoIndex.
  uint32_t set(const Key& key, uint32_t value) {
    if constexpr (kDense) {
      if (key < dense_.size()) {
        const uint32_t old = dense_[key];
        dense_[key] = value;
        if (old == kNoIndex) ++dense_size_;
        return old;
      }
    }
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.size() * 2);
    const uint64_t hash = id_hash(key);
    if (!recent_.empty()) recent_[hash >> recent_shift_] = Slot{key, value};
    size_t i = slot(hash);
    for (; slots_[i].value != kNoIndex; i = (i + 1) & mask_) {
      if (slots_[i].key == key) {
        const uint32_t old = slots_[i].value;
        slots_[i].value = value;
        return old;
      }
    }
    slots_[i] = Slot{key, value};
    ++size_;
    return kNoIndex;
  }
  size_t size() const { return size_ + dense_size_; }

 private:
  static constexpr bool kDense = std::is_same_v<Key, uint64_t>;
  struct Slot {
    Key key{};
    uint32_t value = kNoIndex;  // kNoIndex: an empty slot
  };
  static constexpr size_t kRecentBits = 12;
  static size_t capacity_for(size_t n) {
    size_t c = 16;
    while (c < 2 * n) c *= 2;
    return c;
  }
  size_t slot(uint64_t hash) const { return static_cast<size_t>(hash >> shift_) & mask_; }
  void rehash(size_t capacity) {
    std::vector<Slot, HugePageAllocator<Slot>> slots(capacity);
    slots.swap(slots_);
    mask_ = capacity - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
    size_ = 0;
    // The cache pays only once the table outgrows the caches.
    if (capacity >= (size_t{1} << 16) && recent_.empty()) recent_.resize(size_t{1} << kRecentBits);
    for (const Slot& s : slots) {
      if (s.value != kNoIndex) set(s.key, s.value);
    }
  }
  std::vector<Slot, HugePageAllocator<Slot>> slots_;
  std::vector<Slot> recent_;  // direct-mapped by the hash's top bits; empty: off
  std::vector<uint32_t, HugePageAllocator<uint32_t>> dense_;  // by id below its size
  size_t dense_size_ = 0;  // ids set in dense_
  static constexpr unsigned recent_shift_ = 64 - kRecentBits;
  size_t size_ = 0;
  size_t mask_ = 0;
  unsigned shift_ = 64;
};

// Model string ids by their text (Model::str): open addressing over flat
// (hash, id) slots, the text compared in the model's own table, so a string
// is stored once and no node is allocated per string.
class StringIds {
 public:
  explicit StringIds(const std::vector<std::string>& strings) : strings_(strings) { rehash(64); }
  static uint64_t hash(std::string_view text) { return std::hash<std::string_view>{}(text); }
  // The id of `text` (whose hash is `h`), kNoIndex when absent.
  uint32_t find(std::string_view text, uint64_t h) const {
    for (size_t i = h & mask_;; i = (i + 1) & mask_) {
      const Slot& s = slots_[i];
      if (s.id == kNoIndex) return kNoIndex;
      if (s.hash == static_cast<uint32_t>(h >> 32) && strings_[s.id] == text) return s.id;
    }
  }
  // Adds `id` (absent until now) for the text hashed `h`.
  void insert(uint64_t h, uint32_t id) {
    if (2 * (size_ + 1) > slots_.size()) rehash(slots_.size() * 2);
    size_t i = h & mask_;
    while (slots_[i].id != kNoIndex) i = (i + 1) & mask_;
    slots_[i] = Slot{static_cast<uint32_t>(h >> 32), id};
    ++size_;
  }

 private:
  struct Slot {
    uint32_t hash = 0;  // the hash's top half
    uint32_t id = kNoIndex;
  };
  void rehash(size_t capacity) {
    std::vector<Slot> old(capacity);
    old.swap(slots_);
    mask_ = capacity - 1;
    size_ = 0;
    for (const Slot& s : old) {
      if (s.id != kNoIndex) insert(hash(strings_[s.id]), s.id);
    }
  }
  const std::vector<std::string>& strings_;
  std::vector<Slot> slots_;
  size_t mask_ = 0;
  size_t size_ = 0;
};

// One trace's events read in order by the load pass (a few events ahead for
// prefetching, never further back than that): from its Event array when it
// was given one (Note [Packing beside the walk]), else from its packed store
// a block at a time, the two blocks around the current event kept decoded
// (Note [Packed events]).
class EventReader {
 public:
  explicit EventReader(const trace::TraceData& t)
      : direct_(t.events.empty() ? nullptr : t.events.data()), packed_(&t.packed) {
    if (!direct_) buf_.reset(new trace::Event[2 * trace::PackedEvents::kBlock]);
  }
  const trace::Event& get(size_t pos) {
    if (direct_) return direct_[pos];
    constexpr size_t kBlock = trace::PackedEvents::kBlock;
    const size_t b = pos / kBlock;
    trace::Event* slot = buf_.get() + (b & 1) * kBlock;
    if (held_[b & 1] != b) {
      packed_->decode_block(b, slot);
      held_[b & 1] = b;
    }
    return slot[pos % kBlock];
  }

 private:
  const trace::Event* direct_;
  const trace::PackedEvents* packed_;
  std::unique_ptr<trace::Event[]> buf_;
  size_t held_[2] = {SIZE_MAX, SIZE_MAX};
};

class ModelBuilder {
 public:
  explicit ModelBuilder(Model& m) : m_(m), src_(m.traces_.size()), string_ids_(m.strings_) {}
  void run();

 private:
  struct SourceMaps {
    IdMap<uint64_t> functions;
    IdMap<uint64_t> hooks;
    IdMap<uint64_t> owners;
    IdMap<CollectiveKey> collectives;
    // The collectives of one rank (the first seen; nearly always the only
    // one) by id alone, so that their counter ids stay in the flat array.
    IdMap<uint64_t> collectives_of_rank;
    int32_t collective_rank = -1;
  };

  // Per source: the header's rank, and what the rare checks still look for.
  struct SourceChecks {
    int32_t header_rank = -1;
    uint32_t world_size = 0;  // events' ranks must be below it; 0: unchecked
    bool clock_back = false;  // the reader saw this trace's clock go back, unreported
    bool header_rank_bad = false;
    bool rare = false;        // any of the above
  };

  struct ThreadState {
    uint64_t last_t = 0;
    EventIndex last_at = kNever;
    uint32_t backwards = 0;  // open backward passes
    uint32_t applies = 0;    // open Function applies
  };

  void merge();
  void pack_arrays();
  void reserve_tables();
  void walk();
  void check(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e,
             SourceChecks& sc);
  void rare_checks(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e,
                   SourceChecks& sc);
  void malformed(MalformedKind kind, EventIndex at, const char* what, EventIndex related = kNever);
  bool take_slots(uint64_t n, EventIndex at, const char* what);
  void find_edge_cycles();
  void apply(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e);
  void apply_ddp(EventIndex i, uint32_t source, uint16_t rank, const trace::Event& e);
  void finish();
  void trim_tables();
  void group_fires_edges_segments();
  void build_lookups_and_index();
  void find_lingering_owners();  // owner_status.cpp, Note [Lingering owners]
  // Note [Finishing on two threads]: from this many events on.
  static constexpr size_t kTwoThreadEvents = size_t{1} << 20;

  uint32_t str(uint32_t source, uint64_t id);
  FunctionIndex new_function(uint32_t source, uint16_t rank, uint64_t id, EventIndex at,
                             bool announced);
  FunctionIndex function_ref(uint32_t source, uint16_t rank, uint64_t id);
  FunctionIndex function_lookup(uint32_t source, uint64_t id);
  OwnerIndex new_owner(uint32_t source, uint16_t rank, uint32_t id);
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
  StringIds string_ids_;
  std::vector<std::vector<uint32_t>> open_;  // per Function: its open segments (any order)
  std::vector<uint32_t> open_pos_;           // per segment: its place in open_[function]
  std::vector<uint32_t> open_of_hook_;       // per hook: its open segment, or kNoIndex
  std::vector<FunctionIndex> latest_hint_;   // per Function: one at or after it in its leaf chain
  std::vector<uint8_t> owner_snapshot_;      // per owner: announced by a start snapshot
  std::unordered_map<uint64_t, ThreadState> threads_;  // by source << 32 | thread
  uint64_t last_thread_key_ = UINT64_MAX;  // threads_'s last lookup (its nodes never move)
  ThreadState* last_thread_ = nullptr;
  uint64_t slots_left_ = 0;  // Note [Model memory bound]
  bool pack_beside_ = false;  // Note [Packing beside the walk]: on a second thread
  // Functions and segments in the order they ended (Note [Replay by intervals]).
  std::vector<uint32_t> functions_ended_, segments_ended_;
  // Records whose id a newer record took over (find_*() skips them), any order.
  std::vector<uint32_t> superseded_functions_, superseded_hooks_, superseded_owners_;
  std::vector<ReducerIndex> reducer_of_owner_;
};

}  // namespace hookscope::analysis
