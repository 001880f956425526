// Packing a block of events (Note [Packed events]): each field's code, its
// dictionary where that is smaller, the records bit-packed.

#include <algorithm>
#include <cstring>
#include <utility>

#include "trace/packed_block.h"

namespace hookscope::trace {

using namespace packed;

namespace {

// on whether a word filled up (the buffer has 8 bytes of room past the end).
struct BitWriter {
  uint8_t* out;
  uint64_t acc = 0;
  unsigned fill = 0;  // bits in acc, < 64
  void put(uint64_t v, unsigned w) {
    acc |= v << fill;
    std::memcpy(out, &acc, 8);
    const unsigned total = fill + w;
    const unsigned full = total >> 6;  // 1 when acc filled up
    fill = total & 63;
    // The bits of v that did not fit: v >> (w - fill), 0 when none are left.
    const uint64_t rest = (v >> 1) >> ((w - fill - 1 + (fill == 0)) & 63);
    acc = full ? (fill ? rest : 0) : acc;
    out += full * 8;
  }
  void flush() {
    if (fill) std::memcpy(out, &acc, 8);
  }
};

// The distinct values of field F of events[0..n) into values[0..size) and
// each event's index into index[]; false when there are more than `limit`
// (<= kMaxDict).
template <size_t F>
bool build_dict(const Event* events, size_t n, size_t limit, uint64_t* values, size_t& size,
                uint8_t* index) {
  constexpr size_t kSlots = 2 * kMaxDict;  // open addressing, half full at most
  uint64_t key[kSlots];
  uint8_t slot_of[kSlots];
  bool used[kSlots] = {};
  size = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t v = field<F>(events[i]);
    size_t s = static_cast<size_t>((v * 0x9E3779B97F4A7C15ull) >> 57);  // 7 bits
    while (used[s] && key[s] != v) s = (s + 1) % kSlots;
    if (!used[s]) {
      if (size == limit) return false;
      used[s] = true;
      key[s] = v;
      slot_of[s] = static_cast<uint8_t>(size);
      values[size++] = v;
    }
    index[i] = slot_of[s];
  }
  return true;
}

// lo[F] and hi[F] of five fields, in one pass over events[0..n).
template <size_t A, size_t B, size_t C, size_t D, size_t E>
void range5(const Event* events, size_t n, uint64_t* lo, uint64_t* hi) {
  uint64_t la = UINT64_MAX, lb = UINT64_MAX, lc = UINT64_MAX, ld = UINT64_MAX, le = UINT64_MAX;
  uint64_t ga = 0, gb = 0, gc = 0, gd = 0, ge = 0;
  for (size_t i = 0; i < n; ++i) {
    const Event& e = events[i];
    const uint64_t a = field<A>(e), b = field<B>(e), c = field<C>(e), d = field<D>(e),
                   x = field<E>(e);
    la = std::min(la, a), ga = std::max(ga, a);
    lb = std::min(lb, b), gb = std::max(gb, b);
    lc = std::min(lc, c), gc = std::max(gc, c);
    ld = std::min(ld, d), gd = std::max(gd, d);
    le = std::min(le, x), ge = std::max(ge, x);
  }
  lo[A] = la, lo[B] = lb, lo[C] = lc, lo[D] = ld, lo[E] = le;
  hi[A] = ga, hi[B] = gb, hi[C] = gc, hi[D] = gd, hi[E] = ge;
}

}  // namespace

namespace detail {

size_t pack_block(const Event* events, size_t n, std::vector<uint8_t>& arena) {
  // One pass for every field's least, greatest and least nonzero value less
  // one (0 wraps to UINT64_MAX, so zeros do not count).
  // Five fields a pass keep every running value in a register.
  uint64_t lo[kFields], hi[kFields], lo_nz[kFields];
  for (size_t f = 0; f < kFields; ++f) lo[f] = lo_nz[f] = UINT64_MAX, hi[f] = 0;
  range5<0, 1, 2, 3, 4>(events, n, lo, hi);
  range5<5, 6, 7, 8, 9>(events, n, lo, hi);
  for_fields([&](auto fc) {  // only where there are both zeros and other values
    constexpr size_t f = decltype(fc)::value;
    if (lo[f] != 0 || hi[f] == 0) return;
    uint64_t m = UINT64_MAX;
    for (size_t i = 0; i < n; ++i) m = std::min(m, field<f>(events[i]) - 1);
    lo_nz[f] = m;
  });
  BlockHeader h{};
  uint64_t sub[kFields];  // code = v - sub (zero-escaped: 0 for 0)
  // Dictionaries: the distinct values of a field (at most kMaxDict) and each
  // event's index among them.
  uint64_t dict_values[kFields][kMaxDict];
  size_t dict_size[kFields] = {};
  uint8_t dict_index[kFields][PackedEvents::kBlock];
  size_t dict_bytes = 0;
  for_fields([&](auto fc) {
    constexpr size_t f = decltype(fc)::value;
    unsigned width = bits_for(hi[f] - lo[f]);
    h.base[f] = lo[f];
    sub[f] = lo[f];
    if (lo[f] == 0 && hi[f] != 0) {  // both zeros and other values
      const unsigned escaped = bits_for(hi[f] - lo_nz[f]);  // greatest - least nonzero + 1
      if (escaped < width) {
        width = escaped;
        h.zero_escaped = static_cast<uint16_t>(h.zero_escaped | (1u << f));
        h.base[f] = lo_nz[f] + 1;
        sub[f] = lo_nz[f];
      }
    }
    // Hook keys (serial << 24 | slot), string ids, sizes: few values spread
    // wide. Time rises through the block: never a dictionary.
    // The most values a dictionary may hold and still be smaller.
    size_t limit = 0;
    for (size_t d = 2; f != 0 && width >= 8 && n >= 16 && d <= kMaxDict; ++d) {
      if (bits_for(d - 1) * n + 64 * d < width * n) limit = d;
    }
    if (limit >= 2 && build_dict<f>(events, n, limit, dict_values[f], dict_size[f], dict_index[f])) {
      const unsigned index_bits = bits_for(dict_size[f] - 1);
      if (index_bits * n + 64 * dict_size[f] < width * n) {
        width = index_bits;
        h.dict = static_cast<uint16_t>(h.dict | (1u << f));
        h.zero_escaped = static_cast<uint16_t>(h.zero_escaped & ~(1u << f));
        h.base[f] = kHeaderBytes + dict_bytes;
        dict_bytes += 8 * dict_size[f];
      }
    }
    h.width[f] = static_cast<uint8_t>(width);
    h.offset[f] = h.record_bits;
    h.record_bits = static_cast<uint16_t>(h.record_bits + width);
  });
  h.data_at = static_cast<uint16_t>(kHeaderBytes + dict_bytes);
  const size_t payload = (static_cast<size_t>(h.record_bits) * n + 7) / 8;
  const size_t at = arena.size();
  const size_t bytes = (h.data_at + payload + kPad + 7) & ~size_t{7};
  arena.resize(at + bytes);  // zeroed
  uint8_t* block = arena.data() + at;
  std::memcpy(block, &h, sizeof h);
  for (size_t f = 0; f < kFields; ++f) {
    if ((h.dict >> f) & 1) std::memcpy(block + h.base[f], dict_values[f], 8 * dict_size[f]);
  }
  BitWriter w{block + h.data_at};
  const uint16_t escaped = h.zero_escaped, dict = h.dict;
  for (size_t i = 0; i < n; ++i) {
    for_fields([&](auto fc) {
      constexpr size_t f = decltype(fc)::value;
      const unsigned width = h.width[f];
      if (width == 0) return;
      if ((dict >> f) & 1) return w.put(dict_index[f][i], width);
      const uint64_t v = field<f>(events[i]);
      w.put(((escaped >> f) & 1) && v == 0 ? 0 : v - sub[f], width);
    });
  }
  w.flush();
  return at;
}

}  // namespace detail

}  // namespace hookscope::trace
