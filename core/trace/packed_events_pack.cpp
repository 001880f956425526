// Packing a block of events (Note [Packed events]): each field's code, its
// dictionary where that is smaller, the records bit-packed.
//
// Note [Packing by records]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Packing is on the path of every load from Event arrays (tests, live and
// in-process recordings; file loads read blocks packed already), so it is
// kept to loops without a dependency from one event to the next: the
// field ranges three or four fields a pass (least nonzero value included,
// no pass of its own), then each field's codes OR-ed into the block's
// records, kept in two words each (a record of at most 128 bits: nearly
// always), then each record written with one or two puts, where a put per
// field chained every field of the block through one accumulator. The
// bytes are the same as field after field (the fallback for wider records).
// Measured (CPU time, synthetic DDP traces, tools in bench/bench_analysis.cpp
// BM_Pack): 23 -> 15 ns per event.

#include <algorithm>
#include <cstring>
#include <utility>

#include "trace/packed_block.h"

namespace hookscope::trace {

using namespace packed;

namespace {

// Writes codes of 1..64 bits, least significant bit first, without a branch
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

// lo[F], hi[F] and lo_nz[F] (the least value less one, 0 wrapping to
// UINT64_MAX: the least nonzero value less one) of fields F..., in one pass
// over events[0..n): every running value in a register.
template <size_t... F>
void ranges(const Event* events, size_t n, uint64_t* lo, uint64_t* hi, uint64_t* lo_nz) {
  constexpr size_t kCount = sizeof...(F);
  uint64_t l[kCount], g[kCount], z[kCount];
  for (size_t k = 0; k < kCount; ++k) l[k] = z[k] = UINT64_MAX, g[k] = 0;
  for (size_t i = 0; i < n; ++i) {
    const Event& e = events[i];
    size_t k = 0;
    ((l[k] = std::min(l[k], field<F>(e)), g[k] = std::max(g[k], field<F>(e)),
      z[k] = std::min(z[k], field<F>(e) - 1), ++k), ...);
  }
  size_t k = 0;
  ((lo[F] = l[k], hi[F] = g[k], lo_nz[F] = z[k], ++k), ...);
}

}  // namespace

namespace detail {

size_t pack_block(const Event* events, size_t n, std::vector<uint8_t>& arena) {
  // Every field's least, greatest and least nonzero value less one (0 wraps
  // to UINT64_MAX, so zeros do not count); three or four fields a pass keep
  // every running value in a register.
  uint64_t lo[kFields], hi[kFields], lo_nz[kFields];
  ranges<0, 1, 2>(events, n, lo, hi, lo_nz);
  ranges<3, 4, 5>(events, n, lo, hi, lo_nz);
  ranges<6, 7, 8, 9>(events, n, lo, hi, lo_nz);
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
  const unsigned record = h.record_bits;
  if (record > 2 * 64) {  // wild values: field after field
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
  // Note [Packing by records]: each record assembled in two words, a field
  // at a time over the block, then written with one or two puts.
  uint64_t rec_lo[PackedEvents::kBlock] = {}, rec_hi[PackedEvents::kBlock] = {};
  // Ors code(i) << off into the records, in the word(s) it falls in.
  auto place = [&](unsigned off, unsigned width, auto code) {
    if (off + width <= 64) {
      for (size_t i = 0; i < n; ++i) rec_lo[i] |= code(i) << off;
    } else if (off >= 64) {
      for (size_t i = 0; i < n; ++i) rec_hi[i] |= code(i) << (off - 64);
    } else {  // across the two words
      for (size_t i = 0; i < n; ++i) {
        const uint64_t c = code(i);
        rec_lo[i] |= c << off;
        rec_hi[i] |= c >> (64 - off);
      }
    }
  };
  for_fields([&](auto fc) {
    constexpr size_t f = decltype(fc)::value;
    const unsigned width = h.width[f];
    if (width == 0) return;
    const unsigned off = h.offset[f];
    const uint64_t s = sub[f];
    if ((dict >> f) & 1) {
      const uint8_t* index = dict_index[f];
      place(off, width, [&](size_t i) { return uint64_t{index[i]}; });
    } else if ((escaped >> f) & 1) {
      place(off, width, [&](size_t i) {
        const uint64_t v = field<f>(events[i]);
        return v == 0 ? 0 : v - s;
      });
    } else {
      place(off, width, [&](size_t i) { return field<f>(events[i]) - s; });
    }
  });
  if (record == 0) return at;
  if (record <= 64) {
    for (size_t i = 0; i < n; ++i) w.put(rec_lo[i], record);
  } else {
    for (size_t i = 0; i < n; ++i) {
      w.put(rec_lo[i], 64);
      w.put(rec_hi[i], record - 64);
    }
  }
  w.flush();
  return at;
}

}  // namespace detail

}  // namespace hookscope::trace
