#pragma once
// The per-Function hook list (Note [Removing hooks while they fire],
// Note [Hook list storage]).

#include <bit>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "autograd/hooks_fn.h"
#include "trace/hook_key.h"

namespace hookscope {

using trace::kHookSlotMask;

// Note [Hook key serials]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Key serials come from one process-wide counter (Note [Hook keys] in
// autograd/hooks.h), but a thread takes them kHookSerialBatch at a time
// and hands them out from a thread_local range: an add costs no atomic
// read-modify-write (a locked instruction was 40% of an add). Serials stay
// unique in the process and never repeat; one thread's keys increase in the
// order it adds hooks (keys added on one thread are 1, 2, 3, ... as with
// one counter); two threads' keys interleave by batch, not by time, and a
// thread that ends leaves the rest of its batch unused.
inline constexpr uint64_t kHookSerialBatch = 1024;
namespace detail {
struct HookSerials {
  uint64_t next = 0;
  uint64_t end = 0;  // next == end: take a new batch
};
extern thread_local constinit HookSerials t_hook_serials;
// Takes a new batch, returns its first serial and keeps the rest (node.cpp).
uint64_t refill_hook_serials();
[[noreturn]] void throw_too_many_hooks();
}  // namespace detail

// A fresh key for `slot` (Note [Hook key serials]); throws std::length_error
// past the last slot a key can name.
inline HookKey next_hook_key_for_slot(uint32_t slot) {
  if (slot >= trace::kMaxHookSlots) [[unlikely]] detail::throw_too_many_hooks();
  detail::HookSerials& s = detail::t_hook_serials;
  const uint64_t serial = s.next != s.end ? s.next++ : detail::refill_hook_serials();
  return HookKey{trace::make_hook_key(serial, slot)};
}

// The slot a key names (Note [Hook key layout] in trace/hook_key.h).
inline uint32_t slot_of(HookKey key) { return trace::hook_key_slot(key.value); }

// Note [Removing hooks while they fire]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A hook list fires its hooks in registration order, over a snapshot of the
// list taken when the pass begins, as PyTorch's _call_hooks does (it iterates
// PyDict_Values(dict), a copy: Note [Extend Hook Lifetime] in
// torch/csrc/autograd/python_hook.cpp, issue #58354; docs/semantics.md rule S1):
//  * a hook removed during the pass (by an earlier hook, or by itself) still
//    runs in that pass if it had not run yet; it never runs in later passes;
//  * a hook added during a pass does not run in that pass, only in later ones.
// Removal is O(1): the key names its slot (Note [Hook keys]); when no pass is
// running the hook is marked dead and its callable destroyed at once; during
// a pass its entry is stamped with the list's clock and the callable is
// destroyed when the outermost pass ends (so the hook that is running can
// remove itself). A pass runs the entries that are live
// or died after the pass began. Dead entries leave the firing order in
// batches (when hooks are added or a pass begins), never during a pass, so a
// slot is never reused during a pass.
//
// Note [Hook list storage]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A hook is two records at fixed addresses: an 8-byte slot (the key's
// serial and state bits) that removal reads and writes, and an entry (the
// callable, key, owner, input_nr, the pass stamp) that adding, firing,
// inspecting, asking for the owner and destroying a callable touch. Removing
// a hook whose callable is trivially destructible (Note [Hook callables] in
// autograd/hooks_fn.h) with no pass running touches the list's counters and
// its slot, nothing else; any other callable is destroyed in place.
//  * Inside the list (inside the Node): two counters, the first kInline
//    slots and the pointer to the rest; 32 bytes for kInline 1 or 2.
//    The list is 16-byte aligned and begins with the live count, the pass
//    depth and slot 0, so removing a Function's first hook touches one
//    cache line of the Node, never two (the number of dead slots in the
//    firing order is not counted: it is order.size() - size_). A Function
//    with no hook pays only these (and stays small: most Functions have none).
//  * The rest, allocated at the list's first hook: the clock, the firing
//    order (a separate array of slots; removal does not touch it), the free
//    slots, the callables to destroy after a pass, the first kInline
//    entries and the next 8 slots (so up to kInline + 8 hooks cost this one
//    block plus their entries), and a table of further blocks of 16, 32,
//    64, ... slots and entries (a slot's block from its bit width, no
//    search). Slot arrays are dense: 1000 hooks' slots fill 8 KB.
// Entries never move: a hook added during a pass cannot move the one that
// is running. When the last hook goes, the list starts again at slot 0
// (memory is kept). Measured: bench_hooks BM_DrainPostHooks (like for
// like with libtorch; figures in Note [Like-for-like removal], bench/bench_hooks.cpp).
//
// Note [Hook list fast paths]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~
// add() and remove() are inline and straight-line in the common case: a
// key from the thread's batch (Note [Hook key serials]), a free or fresh
// slot that already has storage, one move of the callable into its entry;
// a removal with no pass running, not recording, of a hook whose callable
// needs no destructor. What a few adds in thousands need -- the first hook's
// block (make_rest), a new block (grow_storage), dropping dead slots from
// the order (tidy) -- and the other removals (remove_slow: the owner read
// for the trace, a callable destroyed, a removal during a pass) are out of
// line, so the fast paths spill no registers and call nothing. Compaction
// does not branch on whether a slot is live (after random removals that
// is a coin toss: compaction, mostly mispredicted branches, was a third of
// a remove+add pair at 1000 hooks). Figures: Note [Hook add cost],
// bench/bench_hooks.cpp.
template <class Fn, uint32_t kInline = 1>
class alignas(16) HookList {
  static_assert(kInline >= 1 && kInline <= 6);

 public:
  // A hook's callable and what inspection reads, at a fixed address.
  struct Entry {
    Fn fn;
    HookKey key;
    OwnerId owner = 0;
    uint32_t input_nr = 0;    // which gradient a tensor pre hook sees
    uint64_t removed_at = 0;  // the list's clock when removed during a pass
  };

  HookList() = default;
  HookList(const HookList&) = delete;
  HookList& operator=(const HookList&) = delete;

  // Adding costs a key (Note [Hook key serials]), the slot and entry
  // writes and a push to the firing order; what a few adds in thousands
  // need (the first hook's block, a new block of slots, dropping dead slots
  // from the order) is out of line (Note [Hook list fast paths]).
  HookKey add(Fn&& fn, OwnerId owner, uint32_t input_nr = 0) {
    if (!rest_) [[unlikely]] make_rest();
    Rest& r = *rest_;
    if (firing_ == 0 && (r.order.size() > 64 + 2 * size_t{size_} || (size_ == 0 && r.capacity != 0)))
        [[unlikely]] {
      tidy();
    }
    const bool reuse = !r.free.empty();
    const uint32_t slot = reuse ? r.free.back() : r.capacity;
    const HookKey key = next_hook_key_for_slot(slot);  // throws past the last slot
    if (slot >= r.storage_end) [[unlikely]] grow_storage(slot);
    r.order.push_back(slot);
    if (reuse) {
      r.free.pop_back();
    } else {
      ++r.capacity;
    }
    const auto [state, e] = locate(slot);
    e->fn = std::move(fn);
    e->key = key;
    e->owner = owner;
    e->input_nr = input_nr;
    e->removed_at = 0;
    *state = (key.value & ~kHookSlotMask) | kLive |
             (hook_fn_trivially_destructible(e->fn) ? kTrivial : 0);
    ++size_;
    return key;
  }
  HookKey add(const Fn& fn, OwnerId owner, uint32_t input_nr = 0)
    requires std::is_copy_constructible_v<Fn>
  {
    return add(Fn(fn), owner, input_nr);
  }

  // Removes the hook with `key`; its owner is stored to `owner` when given
  // (which reads the hook's entry: pass null when the owner is not needed).
  // False when the key is not (or no longer) here.
  bool remove(HookKey key, OwnerId* owner = nullptr) {
    const uint32_t slot = slot_of(key);
    // An inline slot always exists (one past the capacity holds no live hook).
    if (slot >= kInline && (!rest_ || slot >= rest_->capacity)) return false;
    Slot& s = slot_at(slot);
    if (!matches(s, key)) return false;
    const Slot was = s;
    --size_;
    if (firing_ == 0 && (was & kTrivial) != 0 && owner == nullptr) [[likely]] {
      s = was & ~kLive;  // nothing else to touch (Note [Hook list storage])
      return true;
    }
    remove_slow(slot, was, owner);
    return true;
  }

  // Calls visit(entry, fn) for each hook that was live when the pass began
  // (Note [Removing hooks while they fire]).
  template <class Visit>
  void fire(Visit&& visit) {
    if (size_ == 0) return;
    if (firing_ == 0 && rest_->order.size() != size_) [[unlikely]] compact();
    const uint64_t began = ++rest_->clock;
    ++firing_;
    struct Done {
      HookList* self;
      ~Done() {
        if (--self->firing_ == 0) self->destroy_deferred();
      }
    } done{this};
    Rest& r = *rest_;  // stays until the list goes
    const size_t last = r.order.size();
    for (size_t i = 0; i < last; ++i) {
      // The order may grow (and move) meanwhile; slots and entries never move.
      const auto [state, e] = locate(r.order[i]);
      if ((*state & kLive) == 0 && ((*state & kRemovedInPass) == 0 || e->removed_at <= began)) {
        continue;
      }
      visit(static_cast<const Entry&>(*e), e->fn);
    }
  }

  bool contains(HookKey key) const {
    const uint32_t slot = slot_of(key);
    if (slot >= kInline && (!rest_ || slot >= rest_->capacity)) return false;
    return matches(slot_at(slot), key);
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Live entries in firing order (for inspection and for sweeps).
  std::vector<const Entry*> live_entries() const {
    std::vector<const Entry*> out;
    if (size_ == 0) return out;
    out.reserve(size_);
    for (uint32_t slot : rest_->order) {
      if (slot_at(slot) & kLive) out.push_back(&entry(slot));
    }
    return out;
  }

 private:
  // What removal reads and writes: the key's serial (its bits above the
  // slot's, Note [Hook key layout]) and state bits where the key has its
  // slot. Eight bytes, eight to a cache line.
  using Slot = uint64_t;
  static constexpr Slot kLive = 1;           // not removed
  static constexpr Slot kTrivial = 2;        // the callable needs no destructor call
  static constexpr Slot kRemovedInPass = 4;  // removed while a pass ran: entry's removed_at
  static bool matches(Slot s, HookKey key) {
    return ((s ^ key.value) & ~kHookSlotMask) == 0 && (s & kLive) != 0;
  }

  // Slots from kInline on: block b holds 8 << b of them.
  static constexpr uint32_t kMaxBlocks = 22;
  static constexpr uint32_t kBlock0 = 8;
  static uint32_t block_of(uint32_t slot) {
    return static_cast<uint32_t>(std::bit_width(slot - kInline + kBlock0)) - 4;
  }
  static uint32_t offset_in_block(uint32_t slot, uint32_t b) {
    return slot - kInline + kBlock0 - (kBlock0 << b);
  }
  struct Blocks {  // blocks 1, 2, ...
    std::unique_ptr<Slot[]> slots[kMaxBlocks];
    std::unique_ptr<Entry[]> entries[kMaxBlocks];
  };
  struct Rest {
    uint32_t capacity = 0;           // slots handed out so far
    uint32_t storage_end = kInline;  // slots below this have storage
    uint64_t clock = 0;              // ticks at each pass start and each removal during a pass
    std::vector<uint32_t> order;     // slots in firing (registration) order, dead ones too
    std::vector<uint32_t> free;      // slots out of the order, to reuse
    std::vector<uint32_t> deferred;  // removed during a pass: callables to destroy after it
    Slot block0_slots[kBlock0] = {};
    std::unique_ptr<Entry[]> block0_entries;
    std::unique_ptr<Blocks> blocks;
    Entry first_entries[kInline];  // for the slots inside the list
  };

  Slot& slot_at(uint32_t slot) { return const_cast<Slot&>(std::as_const(*this).slot_at(slot)); }
  const Slot& slot_at(uint32_t slot) const {
    if (slot < kInline) return slots_[slot];
    const uint32_t b = block_of(slot);
    const uint32_t off = offset_in_block(slot, b);
    return b == 0 ? rest_->block0_slots[off] : rest_->blocks->slots[b][off];
  }
  Entry& entry(uint32_t slot) { return const_cast<Entry&>(std::as_const(*this).entry(slot)); }
  const Entry& entry(uint32_t slot) const {
    if (slot < kInline) return rest_->first_entries[slot];
    const uint32_t b = block_of(slot);
    const uint32_t off = offset_in_block(slot, b);
    return b == 0 ? rest_->block0_entries[off] : rest_->blocks->entries[b][off];
  }
  // A hook's slot and entry, found once (firing).
  std::pair<Slot*, Entry*> locate(uint32_t slot) {
    Rest& r = *rest_;
    if (slot < kInline) return {&slots_[slot], &r.first_entries[slot]};
    const uint32_t b = block_of(slot);
    const uint32_t off = offset_in_block(slot, b);
    if (b == 0) return {&r.block0_slots[off], &r.block0_entries[off]};
    Blocks& blocks = *r.blocks;
    return {&blocks.slots[b][off], &blocks.entries[b][off]};
  }
  // Out of line: the first hook's block (Note [Hook list fast paths]).
  [[gnu::noinline]] void make_rest() { rest_ = std::make_unique<Rest>(); }

  // Out of line: storage for `slot`, the first past r.storage_end (slots
  // are handed out in order, so it opens the next block).
  [[gnu::noinline]] void grow_storage(uint32_t slot) {
    Rest& r = *rest_;
    const uint32_t b = block_of(slot);
    const uint32_t n = kBlock0 << b;
    if (b == 0) {
      r.block0_entries = std::make_unique<Entry[]>(n);
    } else {
      if (!r.blocks) r.blocks = std::make_unique<Blocks>();
      r.blocks->entries[b] = std::make_unique<Entry[]>(n);
      r.blocks->slots[b] = std::make_unique<Slot[]>(n);
    }
    r.storage_end = slot + n;  // slot opens block b
  }

  // Out of line: a removal that reads the owner, destroys a callable or
  // happens during a pass; the slot is `was`, size_ is counted.
  [[gnu::noinline]] void remove_slow(uint32_t slot, Slot was, OwnerId* owner) {
    const auto [state, e] = locate(slot);
    if (owner) *owner = e->owner;
    if (firing_ == 0) {
      *state = was & ~kLive;
      if ((was & kTrivial) == 0) clear(e->fn);
    } else {
      *state = (was & ~kLive) | kRemovedInPass;
      e->removed_at = ++rest_->clock;
      if ((was & kTrivial) == 0) rest_->deferred.push_back(slot);
    }
  }

  // No pass running, and the last hook went (start again at slot 0) or dead
  // slots outnumber live ones by 64 (drop them from the order).
  [[gnu::noinline]] void tidy() {
    if (size_ == 0) {
      restart();
    } else {
      compact();
    }
  }

  static void clear(Fn& fn) {
    if constexpr (requires { fn = nullptr; }) {
      fn = nullptr;
    } else {
      fn = Fn();
    }
  }

  // Drops dead slots from the firing order and frees them (no pass running).
  // Whether a slot is live is a coin toss after random removals, so the
  // loop does not branch on it: every slot is written to both lists and the
  // right one's end moves on.
  void compact() {
    auto& order = rest_->order;
    auto& free = rest_->free;
    const size_t old_free = free.size();
    free.resize(old_free + order.size() + 1);
    uint32_t* kept = order.data();
    uint32_t* freed = free.data() + old_free;
    for (uint32_t slot : order) {
      const size_t live = slot_at(slot) & kLive;
      *kept = slot;
      *freed = slot;
      kept += live;
      freed += live ^ 1;
    }
    order.resize(static_cast<size_t>(kept - order.data()));
    free.resize(static_cast<size_t>(freed - free.data()));
  }

  // No hook left and no pass running: every slot is free again, from slot 0
  // (stale keys name slots past the capacity or hold another serial).
  void restart() {
    rest_->order.clear();
    rest_->free.clear();
    rest_->capacity = 0;
  }

  void destroy_deferred() {
    for (uint32_t slot : rest_->deferred) clear(entry(slot).fn);
    rest_->deferred.clear();
  }

  // Removing the first hook (with no pass running, its callable trivially
  // destructible) reads and writes size_, firing_ and slots_[0] and nothing
  // else: 16 bytes at a 16-byte boundary, so one cache line of the Node,
  // wherever the allocator put it (Note [Hook list storage]). Other slots
  // also read the capacity in rest_ (and past kInline, its blocks).
  uint32_t size_ = 0;  // live hooks (the order also holds dead slots: order.size() - size_)
  uint32_t firing_ = 0;
  Slot slots_[kInline] = {};
  std::unique_ptr<Rest> rest_;  // from the first hook on
};

}  // namespace hookscope
