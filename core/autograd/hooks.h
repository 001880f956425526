#pragma once
// Hook keys, hook owners and the per-Function hook list.

#include <cstdint>
#include <string>
#include <deque>
#include <unordered_map>
#include <utility>
#include <vector>

#include "trace/event.h"

namespace hookscope {

using trace::HookKind;
using trace::OwnerKind;

// Note [Hook keys]
// ~~~~~~~~~~~~~~~~
// Every add_*_hook returns a HookKey drawn from one process-wide counter, so
// a key is never handed out twice, whatever Function or hook kind it names.
// PyTorch (#21591) used the hook's address as key; an address is reused once
// the hook is freed, so a stale key kept by a dead Reducer could remove a
// newer Reducer's hook (ABA). With counter keys a stale key matches nothing:
// del_*_hook returns false, removes nothing, and emits kHookRemoveFailed.
struct HookKey {
  uint64_t value = 0;
  explicit operator bool() const { return value != 0; }
  friend bool operator==(HookKey a, HookKey b) { return a.value == b.value; }
};

HookKey next_hook_key();

// Who added a hook (a user, a Reducer, retain_grad). Owners are recorded in
// the trace with a kind and a label, and their end of life is an event, so
// the analysis can tell a live owner's hooks from a leaked one's.
using OwnerId = uint32_t;

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

// Note [Removing hooks while they fire]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A hook list fires its hooks in registration order. While it fires, hooks
// may be added to or removed from the same list (by the firing hook itself or
// by another):
//  * a hook removed before its turn in the current pass does not run;
//  * a hook removed after it ran (including a hook removing itself) has run
//    once; it will not run in later passes;
//  * a hook added during a pass does not run in that pass, only in later ones.
// Removal marks the entry dead and drops its key from the index (O(1)); dead
// entries are compacted away only when no pass is in progress, so the entry
// a pass is running stays valid (and its callable alive) until it returns.
template <class Fn>
class HookList {
 public:
  struct Entry {
    HookKey key;
    OwnerId owner = 0;
    uint32_t input_nr = 0;  // which gradient a tensor pre hook sees
    bool live = true;
    Fn fn;
  };

  HookKey add(Fn fn, OwnerId owner, uint32_t input_nr = 0) {
    HookKey key = next_hook_key();
    index_.emplace(key.value, static_cast<uint32_t>(entries_.size()));
    entries_.push_back(Entry{key, owner, input_nr, true, std::move(fn)});
    return key;
  }

  // Removes the hook with `key`; returns its entry's owner/input_nr through
  // `removed` when given. False when the key is not (or no longer) here.
  bool remove(HookKey key, Entry* removed = nullptr) {
    auto it = index_.find(key.value);
    if (it == index_.end()) return false;
    Entry& e = entries_[it->second];
    index_.erase(it);
    e.live = false;
    if (removed) {
      removed->key = e.key;
      removed->owner = e.owner;
      removed->input_nr = e.input_nr;
    }
    // Free captured state now unless a pass is running: the hook being
    // removed may be the one executing.
    if (firing_ == 0) e.fn = Fn();
    ++dead_;
    maybe_compact();
    return true;
  }

  // Calls visit(entry) for each live hook present when the pass began.
  template <class Visit>
  void fire(Visit&& visit) {
    ++firing_;
    struct Done {
      HookList* self;
      ~Done() {
        --self->firing_;
        self->maybe_compact();
      }
    } done{this};
    const size_t n = entries_.size();
    for (size_t i = 0; i < n; ++i) {
      if (!entries_[i].live) continue;
      // entries_ is a deque: hooks added by `visit` do not move this entry.
      Entry& e = entries_[i];
      visit(static_cast<const Entry&>(e), e.fn);
    }
  }

  bool contains(HookKey key) const { return index_.count(key.value) != 0; }
  size_t size() const { return index_.size(); }
  bool empty() const { return index_.empty(); }

  // Live entries in firing order (for inspection and for sweeps).
  std::vector<const Entry*> live_entries() const {
    std::vector<const Entry*> out;
    out.reserve(index_.size());
    for (const Entry& e : entries_) {
      if (e.live) out.push_back(&e);
    }
    return out;
  }

 private:
  void maybe_compact() {
    if (firing_ > 0 || dead_ == 0 || dead_ * 2 < entries_.size()) return;
    std::deque<Entry> kept;
    for (Entry& e : entries_) {
      if (!e.live) continue;
      index_[e.key.value] = static_cast<uint32_t>(kept.size());
      kept.push_back(std::move(e));
    }
    entries_.swap(kept);
    dead_ = 0;
  }

  std::deque<Entry> entries_;
  std::unordered_map<uint64_t, uint32_t> index_;
  uint32_t dead_ = 0;
  uint32_t firing_ = 0;
};

}  // namespace hookscope
