#pragma once
// The per-Function hook list (Note [Removing hooks while they fire],
// Note [Hook list storage]).

#include <bit>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "trace/hook_key.h"

namespace hookscope {

// A fresh key for `slot` (autograd/node.cpp, Note [Hook keys] in autograd/hooks.h).
HookKey next_hook_key_for_slot(uint32_t slot);

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
// Removal is O(1): the key names its slot (Note [Hook keys]); the entry is
// stamped with the list's clock and, when no pass is running, its callable is
// destroyed at once (during a pass: when the outermost pass ends, so the hook
// that is running can remove itself). A pass runs the entries that are live
// or died after the pass began. Dead entries leave the firing order in
// batches (when hooks are added or a pass begins), never during a pass, so a
// slot is never reused during a pass.
//
// Note [Hook list storage]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// Removal touches the list's header and one cache line: the entry. An entry
// (key, removal stamp, owner, input_nr, the callable stored inline; 64 bytes,
// aligned to a line) is all a removal reads or writes, and it destroys the
// callable in place (a std::function keeps a small callable inline, so a
// typical hook costs no heap block of ours). Entries live in blocks of 16,
// 16, 32, 64, ... entries, so a slot's block is its bit width (no table) and
// entries never move: a hook added during a pass cannot move the one that
// is running. The firing order is a separate array of slots; removal does not
// touch it. When the last hook goes, the list starts again at slot 0. Measured: bench_hooks BM_DrainPostHooks (issue 16 item 5).
template <class Fn>
class HookList {
 public:
  struct alignas(64) Entry {
    HookKey key;
    uint64_t removed_at = 0;  // the list's clock when it was removed; 0 while live
    OwnerId owner = 0;
    uint32_t input_nr = 0;  // which gradient a tensor pre hook sees
    Fn fn;
    bool live() const { return removed_at == 0; }
  };

  HookList() = default;
  HookList(const HookList&) = delete;
  HookList& operator=(const HookList&) = delete;

  HookKey add(Fn fn, OwnerId owner, uint32_t input_nr = 0) {
    if (firing_ == 0) {
      if (size_ == 0 && capacity_ != 0) {
        restart();
      } else if (dead_ > 64 + size_) {
        compact();
      }
    }
    const bool reuse = !free_.empty();
    const uint32_t slot = reuse ? free_.back() : capacity_;
    const HookKey key = next_hook_key_for_slot(slot);  // throws past the last slot
    if (reuse) {
      free_.pop_back();
    } else {
      if (slot == block_start(num_blocks())) grow();
      ++capacity_;
    }
    Entry& e = at(slot);
    e.key = key;
    e.removed_at = 0;
    e.owner = owner;
    e.input_nr = input_nr;
    e.fn = std::move(fn);
    order_.push_back(slot);
    ++size_;
    return key;
  }

  // Removes the hook with `key`; its owner is stored to `owner` when given.
  // False when the key is not (or no longer) here.
  bool remove(HookKey key, OwnerId* owner = nullptr) {
    const uint32_t slot = slot_of(key);
    if (slot >= capacity_) return false;
    Entry& e = at(slot);
    if (e.key.value != key.value || !e.live()) return false;
    e.removed_at = ++clock_;
    if (owner) *owner = e.owner;
    if (firing_ == 0) {
      clear(e.fn);
    } else {
      deferred_.push_back(slot);
    }
    --size_;
    ++dead_;
    return true;
  }

  // Calls visit(entry, fn) for each hook that was live when the pass began
  // (Note [Removing hooks while they fire]).
  template <class Visit>
  void fire(Visit&& visit) {
    if (firing_ == 0 && dead_ != 0) compact();
    if (size_ == 0) return;
    const uint64_t began = ++clock_;
    ++firing_;
    struct Done {
      HookList* self;
      ~Done() {
        if (--self->firing_ == 0) self->destroy_deferred();
      }
    } done{this};
    const size_t last = order_.size();
    for (size_t i = 0; i < last; ++i) {
      Entry& e = at(order_[i]);  // order_ may grow (not move entries) during the call
      if (e.removed_at == 0 || e.removed_at > began) visit(static_cast<const Entry&>(e), e.fn);
    }
  }

  bool contains(HookKey key) const {
    const uint32_t slot = slot_of(key);
    return slot < capacity_ && at(slot).live() && at(slot).key.value == key.value;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Live entries in firing order (for inspection and for sweeps).
  std::vector<const Entry*> live_entries() const {
    std::vector<const Entry*> out;
    out.reserve(size_);
    for (uint32_t s : order_) {
      if (at(s).live()) out.push_back(&at(s));
    }
    return out;
  }

 private:
  static constexpr uint32_t kFirstBlockBits = 4;  // blocks of 16, 16, 32, 64, ...

  // Block b holds slots [block_start(b), block_start(b + 1)).
  static constexpr uint32_t block_start(uint32_t b) {
    return b == 0 ? 0 : (uint32_t{1} << (kFirstBlockBits - 1)) << b;
  }
  static uint32_t block_of(uint32_t slot) {
    return static_cast<uint32_t>(std::bit_width(slot >> kFirstBlockBits));
  }
  // The first block hangs off the list itself: a Node with a few hooks
  // reaches them without a table.
  Entry& at(uint32_t slot) { return const_cast<Entry&>(std::as_const(*this).at(slot)); }
  const Entry& at(uint32_t slot) const {
    if (slot < block_start(1)) return first_[slot];
    const uint32_t b = block_of(slot);
    return blocks_[b - 1][slot - block_start(b)];
  }
  uint32_t num_blocks() const {
    return first_ ? 1 + static_cast<uint32_t>(blocks_.size()) : 0;
  }

  void grow() {
    const uint32_t b = num_blocks();
    auto block = std::make_unique<Entry[]>(block_start(b + 1) - block_start(b));
    if (b == 0) {
      first_ = std::move(block);
    } else {
      blocks_.push_back(std::move(block));
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
  void compact() {
    size_t kept = 0;
    for (uint32_t s : order_) {
      if (at(s).live()) {
        order_[kept++] = s;
      } else {
        free_.push_back(s);
      }
    }
    order_.resize(kept);
    dead_ = 0;
  }

  // No hook left and no pass running: every slot is free again, from slot 0
  // (stale keys name slots past capacity_ or hold another serial).
  void restart() {
    order_.clear();
    free_.clear();
    capacity_ = 0;
    dead_ = 0;
  }

  void destroy_deferred() {
    for (uint32_t slot : deferred_) clear(at(slot).fn);
    deferred_.clear();
  }

  std::unique_ptr<Entry[]> first_;                // block 0
  std::vector<std::unique_ptr<Entry[]>> blocks_;  // blocks 1, 2, ...
  std::vector<uint32_t> order_;      // slots in firing (registration) order, dead ones too
  std::vector<uint32_t> free_;       // slots out of order_, to reuse
  std::vector<uint32_t> deferred_;   // removed during a pass: callables to destroy after it
  uint32_t capacity_ = 0;            // slots handed out so far
  uint32_t size_ = 0;                // live hooks
  uint32_t dead_ = 0;                // dead slots still in order_
  uint32_t firing_ = 0;
  uint64_t clock_ = 0;  // ticks at each pass start and each removal
};

}  // namespace hookscope
