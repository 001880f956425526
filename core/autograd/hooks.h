#pragma once
// Hook keys, hook owners and the per-Function hook list.

#include <cstdint>
#include <string>
#include <memory>
#include <utility>
#include <vector>

#include "trace/event.h"
#include "trace/hook_key.h"

namespace hookscope {

using trace::HookKind;
using trace::OwnerKind;

// Note [Hook keys]
// ~~~~~~~~~~~~~~~~
// Every add_*_hook returns a HookKey that carries a serial number from one
// process-wide counter, so a key is never handed out twice, whatever Function
// or hook kind it names (its low bits name the hook's slot in its list, which
// makes removal O(1) without a hash map).
// PyTorch (#21591) used the hook's address as key; an address is reused once
// the hook is freed, so a stale key kept by a dead Reducer could remove a
// newer Reducer's hook (ABA). With counter keys a stale key matches nothing:
// del_*_hook returns false, removes nothing, and emits kHookRemoveFailed.
// (HookKey itself is declared in trace/hook_key.h.)

// A key names the slot its hook occupies in its list and carries a
// process-wide serial number (Note [Hook key layout] in trace/hook_key.h), so
// it is unique in the process and removal needs no search.
HookKey next_hook_key_for_slot(uint32_t slot);
inline uint32_t slot_of(HookKey key) { return trace::hook_key_slot(key.value); }

// Who added a hook (a user, a Reducer, retain_grad). Owners are recorded in
// the trace with a kind and a label, and their end of life is an event, so
// the analysis can tell a live owner's hooks from a leaked one's.
// OwnerId: trace/hook_key.h.

struct HookOwner {
  OwnerKind kind = OwnerKind::kUser;
  OwnerId id = 0;
  std::string label;
};

// Registers a new owner and emits kOwnerCreated. Thread-safe.
OwnerId create_owner(OwnerKind kind, std::string label);
// Marks the owner destroyed (emits kOwnerDestroyed); its hooks stay where they are.
void destroy_owner(OwnerId id);
// The owner's description; label "?" for an unknown id.
HookOwner owner_info(OwnerId id);
// The default owner of hooks added without one: kind user, label "user".
OwnerId user_owner();
// `owner`, or user_owner() for kDefaultHookOwner.
inline OwnerId resolve_owner(OwnerId owner) { return owner == kDefaultHookOwner ? user_owner() : owner; }

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
// marked dead with the list's clock and, when no pass is running, its callable
// is freed. A pass runs the entries that are live or died after the pass
// began. Dead entries are unlinked in batches (before a pass, or when they
// pile up), never during a pass, so the hook that is running and the pass's
// position stay valid, and a slot is never reused during a pass. Entries live
// in fixed blocks that never move, so a hook added during a pass cannot move
// the one that is running.
template <class Fn>
class HookList {
 public:
  struct Entry {
    HookKey key;
    OwnerId owner = 0;
    uint32_t input_nr = 0;  // which gradient a tensor pre hook sees
    bool live = false;
    uint64_t removed_at = 0;  // the list's clock when it was removed
    uint32_t prev = kNil, next = kNil;
    Fn fn;
  };

  HookList() = default;
  HookList(const HookList&) = delete;
  HookList& operator=(const HookList&) = delete;

  HookKey add(Fn fn, OwnerId owner, uint32_t input_nr = 0) {
    uint32_t slot;
    if (!free_.empty()) {
      slot = free_.back();
      free_.pop_back();
    } else {
      slot = capacity_++;
      if ((slot & kBlockMask) == 0) blocks_.push_back(std::make_unique<Entry[]>(kBlockSize));
    }
    HookKey key = next_hook_key_for_slot(slot);
    Entry& e = at(slot);
    e.key = key;
    e.owner = owner;
    e.input_nr = input_nr;
    e.live = true;
    e.removed_at = 0;
    e.fn = std::move(fn);
    e.next = kNil;
    e.prev = tail_;
    if (tail_ != kNil) {
      at(tail_).next = slot;
    } else {
      head_ = slot;
    }
    tail_ = slot;
    ++size_;
    return key;
  }

  // Removes the hook with `key`; its owner is stored to `owner` when given.
  // False when the key is not (or no longer) here.
  bool remove(HookKey key, OwnerId* owner = nullptr) {
    const uint32_t slot = slot_of(key);
    if (slot >= capacity_) return false;
    Entry& e = at(slot);
    if (!e.live || e.key.value != key.value) return false;
    e.live = false;
    e.removed_at = ++clock_;
    --size_;
    if (owner) *owner = e.owner;
    // Unlinking touches the neighbours; it is batched (Note [Removing hooks
    // while they fire]) so a removal touches only its own entry.
    if (firing_ == 0) e.fn = Fn();
    deferred_.push_back(slot);
    if (firing_ == 0 && deferred_.size() > 64 + size_) release_deferred();
    return true;
  }

  // Calls visit(entry, fn) for each hook that was live when the pass began
  // (Note [Removing hooks while they fire]).
  template <class Visit>
  void fire(Visit&& visit) {
    if (firing_ == 0 && !deferred_.empty()) release_deferred();
    if (size_ == 0) return;
    const uint64_t began = ++clock_;
    ++firing_;
    struct Done {
      HookList* self;
      ~Done() {
        if (--self->firing_ == 0) self->release_deferred();
      }
    } done{this};
    const uint32_t last = tail_;
    for (uint32_t s = head_; s != kNil;) {
      Entry& e = at(s);
      if (e.live || e.removed_at > began) visit(static_cast<const Entry&>(e), e.fn);
      if (s == last) break;
      s = e.next;  // read after the call: e stays linked even if it was removed
    }
  }

  bool contains(HookKey key) const {
    const uint32_t slot = slot_of(key);
    return slot < capacity_ && at(slot).live && at(slot).key.value == key.value;
  }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // Live entries in firing order (for inspection and for sweeps).
  std::vector<const Entry*> live_entries() const {
    std::vector<const Entry*> out;
    out.reserve(size_);
    for (uint32_t s = head_; s != kNil; s = at(s).next) {
      if (at(s).live) out.push_back(&at(s));
    }
    return out;
  }

 private:
  static constexpr uint32_t kNil = UINT32_MAX;
  static constexpr uint32_t kBlockBits = 4;
  static constexpr uint32_t kBlockSize = 1u << kBlockBits;
  static constexpr uint32_t kBlockMask = kBlockSize - 1;

  Entry& at(uint32_t slot) { return blocks_[slot >> kBlockBits][slot & kBlockMask]; }
  const Entry& at(uint32_t slot) const { return blocks_[slot >> kBlockBits][slot & kBlockMask]; }

  void release(uint32_t slot) {
    Entry& e = at(slot);
    if (e.prev != kNil) {
      at(e.prev).next = e.next;
    } else {
      head_ = e.next;
    }
    if (e.next != kNil) {
      at(e.next).prev = e.prev;
    } else {
      tail_ = e.prev;
    }
    e.prev = e.next = kNil;
    e.fn = Fn();
    free_.push_back(slot);
  }

  void release_deferred() {
    for (uint32_t slot : deferred_) release(slot);
    deferred_.clear();
  }

  std::vector<std::unique_ptr<Entry[]>> blocks_;
  std::vector<uint32_t> free_;
  std::vector<uint32_t> deferred_;
  uint32_t capacity_ = 0;
  uint32_t head_ = kNil, tail_ = kNil;
  uint32_t size_ = 0;
  uint32_t firing_ = 0;
  uint64_t clock_ = 0;  // ticks at each pass start and each removal
};

}  // namespace hookscope
