#pragma once
// The bit layout of a runtime hook key, in one place (Note [Hook key layout]).

#include <cstdint>

namespace hookscope::trace {

// Note [Hook key layout]
// ~~~~~~~~~~~~~~~~~~~~~~
// A hook key the runtime hands out is `serial << kHookSlotBits | slot`: the
// low 24 bits name the hook's slot in its list (so removal needs no search,
// Note [Hook keys] in autograd/hooks.h), the bits above carry a process-wide
// serial number that is never reused. Keys below 1 << 24 (serial 0) only occur
// in traces made by hand or by the torch bridge, which uses its own keys; text
// for people writes a runtime key as "serial.slot" (Note [Hook keys in text]).
constexpr int kHookSlotBits = 24;
constexpr uint64_t kHookSlotMask = (uint64_t{1} << kHookSlotBits) - 1;
constexpr uint64_t kMaxHookSlots = uint64_t{1} << kHookSlotBits;

constexpr uint64_t make_hook_key(uint64_t serial, uint32_t slot) {
  return (serial << kHookSlotBits) | (slot & kHookSlotMask);
}
constexpr uint32_t hook_key_slot(uint64_t key) { return static_cast<uint32_t>(key & kHookSlotMask); }
constexpr uint64_t hook_key_serial(uint64_t key) { return key >> kHookSlotBits; }

}  // namespace hookscope::trace

namespace hookscope {

// What every add_*_hook / register_*_hook returns (Note [Hook keys] in
// autograd/hooks.h). Declared here, below both tensor/ and autograd/, so
// tensor.h can name it without including autograd (Note [Layers]).
struct HookKey {
  uint64_t value = 0;
  explicit operator bool() const { return value != 0; }
  friend bool operator==(HookKey a, HookKey b) { return a.value == b.value; }
};

// Who added a hook (autograd/hooks.h create_owner). 0 is never a real owner:
// as a default argument it means "the default user owner" (user_owner()).
using OwnerId = uint32_t;
constexpr OwnerId kDefaultHookOwner = 0;

}  // namespace hookscope
