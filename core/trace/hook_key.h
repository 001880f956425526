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
