// Packing a block of events (Note [Packed events]): each field's code, its
// dictionary where that is smaller, the records bit-packed.
//
// Note [Packing by records]
// ~~~~~~~~~~~~~~~~~~~~~~~~~
// Packing is on the path of every load from Event arrays (tests, live and
// in-process recordings; file loads read blocks packed already), so it is
// kept to loops without a dependency from one event to the next: the
// field ranges over columns (Note [Packing by columns]; least nonzero value
// included, no pass of its own), then each field's codes OR-ed into the block's
// records, kept in two words each (a record of at most 128 bits: nearly
// always), then each record written with one or two puts, where a put per
// field chained every field of the block through one accumulator. The
// bytes are the same as field after field (the fallback for wider records).
// Measured (CPU time, synthetic DDP traces, tools in bench/bench_analysis.cpp
// BM_Pack): 23 -> 15 ns per event; by columns, 14.7 -> 8.6 ns per event on
// events in cache (the packing a load from arrays does beside its walk).

#include <algorithm>
#include <bit>
#include <cstddef>
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

// Note [Packing by columns]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~
// A block is first copied into six columns of kBlock 64-bit words, one per
// word of the Event record (time, node, key, arg, then owner|actor and
// kind|sub|rank|thread, split again by shifts where read; the rows past n
// repeat row 0, which changes no least or greatest value), so the passes
// that follow read each field contiguously and run a fixed count: the
// ranges (least, greatest, least nonzero value less one) and the codes
// OR-ed into the records. Where the CPU has them, those two passes run in
// AVX-512 or AVX2 (one build of each, picked when the program starts:
// gcc's target_clones), elsewhere as plain loops; all give the same bytes.
constexpr size_t kRows = PackedEvents::kBlock;
constexpr size_t kWords = 6;
static_assert(offsetof(Event, owner) == 32 && offsetof(Event, actor) == 36 &&
              offsetof(Event, kind) == 40 && offsetof(Event, sub) == 41 &&
              offsetof(Event, rank) == 42 && offsetof(Event, thread) == 44);
struct Columns {
  alignas(64) uint64_t w[kWords][kRows];
};

void to_columns(const Event* events, size_t n, Columns& c) {
  const auto* bytes = reinterpret_cast<const unsigned char*>(events);
  for (size_t i = 0; i < n; ++i, bytes += sizeof(Event)) {
    for (size_t k = 0; k < kWords; ++k) std::memcpy(&c.w[k][i], bytes + 8 * k, 8);
  }
  for (size_t k = 0; k < kWords; ++k) {
    for (size_t i = n; i < kRows; ++i) c.w[k][i] = c.w[k][0];
  }
}

// Field F of row i (little-endian words: Note [Event record]).
template <size_t F>
[[gnu::always_inline]] inline uint64_t column(const Columns& c, size_t i) {
  if constexpr (F < 4) return c.w[F][i];
  if constexpr (F == 4) return c.w[4][i] & 0xffffffffu;
  if constexpr (F == 5) return c.w[4][i] >> 32;
  if constexpr (F == 6) return c.w[5][i] & 0xffu;
  if constexpr (F == 7) return (c.w[5][i] >> 8) & 0xffu;
  if constexpr (F == 8) return (c.w[5][i] >> 16) & 0xffffu;
  if constexpr (F == 9) return c.w[5][i] >> 32;
}

// The distinct values of field F of rows [0, n) into values[0..size) and
// each event's index into index[]; false when there are more than `limit`
// (<= kMaxDict).
template <size_t F>
bool build_dict(const Columns& c, size_t n, size_t limit, uint64_t* values, size_t& size,
                uint8_t* index) {
  constexpr size_t kSlots = 2 * kMaxDict;  // open addressing, half full at most
  uint64_t key[kSlots];
  uint8_t slot_of[kSlots];
  bool used[kSlots] = {};
  size = 0;
  for (size_t i = 0; i < n; ++i) {
    const uint64_t v = column<F>(c, i);
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

// target_clones needs ifunc (glibc); the columns are read as little-endian words.
// Not under TSan: the ifunc resolver runs while the dynamic loader relocates,
// before TSan's runtime is up, and its instrumented code crashes there (every
// program of a TSan build died at start, even `hookscope-cli --version`).
static_assert(std::endian::native == std::endian::little, "packing reads records as little-endian words");
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__GLIBC__) && \
    !defined(__SANITIZE_THREAD__)
#define HOOKSCOPE_COLUMN_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define HOOKSCOPE_COLUMN_CLONES
#endif

// lo[f], hi[f] and lo_nz[f] (the least value less one, 0 wrapping to
// UINT64_MAX: the least nonzero value less one) of every field.
template <size_t F>
[[gnu::always_inline]] inline void column_range(const Columns& c, uint64_t* lo, uint64_t* hi, uint64_t* lo_nz) {
  uint64_t l = UINT64_MAX, g = 0, z = UINT64_MAX;
  for (size_t i = 0; i < kRows; ++i) {
    const uint64_t v = column<F>(c, i);
    l = v < l ? v : l;
    g = v > g ? v : g;
    z = v - 1 < z ? v - 1 : z;
  }
  lo[F] = l;
  hi[F] = g;
  lo_nz[F] = z;
}

HOOKSCOPE_COLUMN_CLONES
void column_ranges(const Columns& c, uint64_t* lo, uint64_t* hi, uint64_t* lo_nz) {
  column_range<0>(c, lo, hi, lo_nz);
  column_range<1>(c, lo, hi, lo_nz);
  column_range<2>(c, lo, hi, lo_nz);
  column_range<3>(c, lo, hi, lo_nz);
  column_range<4>(c, lo, hi, lo_nz);
  column_range<5>(c, lo, hi, lo_nz);
  column_range<6>(c, lo, hi, lo_nz);
  column_range<7>(c, lo, hi, lo_nz);
  column_range<8>(c, lo, hi, lo_nz);
  column_range<9>(c, lo, hi, lo_nz);
}

// How field f's codes are made: v - sub, 0 for 0 else v - sub (zero-escaped),
// or the dictionary index.
enum class Code : uint8_t { kPlain, kEscaped, kDict };
struct FieldCode {
  Code code = Code::kPlain;
  unsigned width = 0, offset = 0;
  uint64_t sub = 0;
  const uint8_t* dict_index = nullptr;
};

// Ors each row's code << offset into its record, kept in two words (records
// of at most 128 bits).
template <size_t F>
[[gnu::always_inline]] inline void place_field(const Columns& c, const FieldCode& fc, uint64_t* rec_lo, uint64_t* rec_hi) {
  if (fc.width == 0) return;
  const uint64_t s = fc.sub;
  const unsigned off = fc.offset;
  uint64_t code[kRows];
  if (fc.code == Code::kDict) {
    for (size_t i = 0; i < kRows; ++i) code[i] = fc.dict_index[i];
  } else if (fc.code == Code::kEscaped) {
    for (size_t i = 0; i < kRows; ++i) {
      const uint64_t v = column<F>(c, i);
      code[i] = v == 0 ? 0 : v - s;
    }
  } else {
    for (size_t i = 0; i < kRows; ++i) code[i] = column<F>(c, i) - s;
  }
  if (off + fc.width <= 64) {
    for (size_t i = 0; i < kRows; ++i) rec_lo[i] |= code[i] << off;
  } else if (off >= 64) {
    for (size_t i = 0; i < kRows; ++i) rec_hi[i] |= code[i] << (off - 64);
  } else {  // across the two words
    for (size_t i = 0; i < kRows; ++i) {
      rec_lo[i] |= code[i] << off;
      rec_hi[i] |= code[i] >> (64 - off);
    }
  }
}

HOOKSCOPE_COLUMN_CLONES
void place_codes(const Columns& c, const FieldCode* fields, uint64_t* rec_lo, uint64_t* rec_hi) {
  place_field<0>(c, fields[0], rec_lo, rec_hi);
  place_field<1>(c, fields[1], rec_lo, rec_hi);
  place_field<2>(c, fields[2], rec_lo, rec_hi);
  place_field<3>(c, fields[3], rec_lo, rec_hi);
  place_field<4>(c, fields[4], rec_lo, rec_hi);
  place_field<5>(c, fields[5], rec_lo, rec_hi);
  place_field<6>(c, fields[6], rec_lo, rec_hi);
  place_field<7>(c, fields[7], rec_lo, rec_hi);
  place_field<8>(c, fields[8], rec_lo, rec_hi);
  place_field<9>(c, fields[9], rec_lo, rec_hi);
}

}  // namespace

namespace detail {

size_t pack_block(const Event* events, size_t n, std::vector<uint8_t>& arena) {
  // Every field's least, greatest and least nonzero value less one (0 wraps
  // to UINT64_MAX, so zeros do not count), over its column (Note [Packing by
  // columns]).
  Columns cols;
  to_columns(events, n, cols);
  uint64_t lo[kFields], hi[kFields], lo_nz[kFields];
  column_ranges(cols, lo, hi, lo_nz);
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
    if (limit >= 2 && build_dict<f>(cols, n, limit, dict_values[f], dict_size[f], dict_index[f])) {
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
        const uint64_t v = column<f>(cols, i);
        w.put(((escaped >> f) & 1) && v == 0 ? 0 : v - sub[f], width);
      });
    }
    w.flush();
    return at;
  }
  // Note [Packing by records]: each record assembled in two words, a field
  // at a time over the block, then written with one or two puts.
  if (record == 0) return at;
  FieldCode codes[kFields];
  for (size_t f = 0; f < kFields; ++f) {
    FieldCode& c = codes[f];
    c.width = h.width[f];
    c.offset = h.offset[f];
    c.sub = sub[f];
    if ((dict >> f) & 1) {
      c.code = Code::kDict;
      c.dict_index = dict_index[f];
      std::fill(dict_index[f] + n, dict_index[f] + kRows, uint8_t{0});  // rows past n: unused
    } else if ((escaped >> f) & 1) {
      c.code = Code::kEscaped;
    }
  }
  uint64_t rec_lo[kRows] = {}, rec_hi[kRows] = {};
  place_codes(cols, codes, rec_lo, rec_hi);
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
