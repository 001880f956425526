#pragma once
// The layout of a packed block and the pieces that read and write it (Note
// [Packed events]). Internal to core/trace/packed_events*.cpp.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

#include "trace/packed_events.h"

namespace hookscope::trace::packed {

constexpr size_t kFields = 10;
constexpr size_t kArenaBytes = size_t{1} << 20;

// A block's bytes: this header, the dictionaries (8 bytes a value, field
// after field), then from byte data_at the records (record_bits each), then
// kPad zero bytes so that a field is always read with one unaligned 8-byte
// load and one more byte.
struct BlockHeader {
  uint64_t base[kFields];    // dictionary fields: the byte offset of the dictionary
  uint16_t offset[kFields];  // bit offset of each field within a record
  uint8_t width[kFields];
  uint16_t zero_escaped;     // bit f: field f codes 0 as 0 (Note [Packed events])
  uint16_t dict;             // bit f: field f is an index into its dictionary
  uint16_t record_bits;
  uint16_t data_at;
};
constexpr size_t kHeaderBytes = (sizeof(BlockHeader) + 7) & ~size_t{7};
static_assert(kHeaderBytes == 120);
// A field takes a dictionary when its values are this few.
constexpr size_t kMaxDict = 64;
constexpr size_t kPad = 16;
// Dictionaries are only taken where they make the block smaller.
constexpr size_t kMaxBlockBytes = kHeaderBytes + PackedEvents::kBlock * kFields * 8 + kPad + 64;

template <size_t F>
inline uint64_t field(const Event& e) {
  if constexpr (F == 0) return e.t_ns;
  if constexpr (F == 1) return e.node;
  if constexpr (F == 2) return e.key;
  if constexpr (F == 3) return e.arg;
  if constexpr (F == 4) return e.owner;
  if constexpr (F == 5) return e.actor;
  if constexpr (F == 6) return static_cast<uint8_t>(e.kind);
  if constexpr (F == 7) return e.sub;
  if constexpr (F == 8) return e.rank;
  if constexpr (F == 9) return e.thread;
}

template <size_t F>
inline void set_field(Event& e, uint64_t v) {
  if constexpr (F == 0) e.t_ns = v;
  if constexpr (F == 1) e.node = v;
  if constexpr (F == 2) e.key = v;
  if constexpr (F == 3) e.arg = v;
  if constexpr (F == 4) e.owner = static_cast<uint32_t>(v);
  if constexpr (F == 5) e.actor = static_cast<uint32_t>(v);
  if constexpr (F == 6) e.kind = static_cast<EventKind>(v);
  if constexpr (F == 7) e.sub = static_cast<uint8_t>(v);
  if constexpr (F == 8) e.rank = static_cast<uint16_t>(v);
  if constexpr (F == 9) e.thread = static_cast<uint32_t>(v);
}

// fn(std::integral_constant<size_t, F>) for every field F.
template <class Fn>
inline void for_fields(Fn&& fn) {
  [&]<size_t... F>(std::index_sequence<F...>) {
    (fn(std::integral_constant<size_t, F>{}), ...);
  }(std::make_index_sequence<kFields>{});
}

inline unsigned bits_for(uint64_t x) { return x ? 64u - static_cast<unsigned>(std::countl_zero(x)) : 0u; }

inline uint64_t read_bits(const uint8_t* data, uint64_t pos, unsigned width) {
  if (width == 0) return 0;
  const uint8_t* p = data + (pos >> 3);
  const unsigned shift = pos & 7;
  uint64_t v;
  std::memcpy(&v, p, 8);
  v >>= shift;
  if (shift + width > 64) v |= static_cast<uint64_t>(p[8]) << (64 - shift);
  return width == 64 ? v : v & ((uint64_t{1} << width) - 1);
}

inline uint64_t value_of(const uint8_t* block, const BlockHeader& h, size_t f, uint64_t code) {
  if ((h.dict >> f) & 1) {
    uint64_t v;
    std::memcpy(&v, block + h.base[f] + 8 * code, 8);
    return v;
  }
  if ((h.zero_escaped >> f) & 1) return code == 0 ? 0 : h.base[f] + (code - 1);
  return h.base[f] + code;
}

inline BlockHeader header_at(const uint8_t* block) {
  BlockHeader h;
  std::memcpy(&h, block, sizeof h);
  return h;
}

}  // namespace hookscope::trace::packed
