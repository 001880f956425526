// Packing events into blocks and reading them back (Note [Packed events]).

#include "trace/packed_events.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <type_traits>
#include <utility>

namespace hookscope::trace {

namespace {

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

// ---- PackedEvents ----

Event PackedEvents::at(size_t i) const {
  const uint8_t* b = block(i / kBlock);
  const BlockHeader h = header_at(b);
  const uint8_t* data = b + h.data_at;
  const uint64_t pos = static_cast<uint64_t>(i % kBlock) * h.record_bits;
  Event e;
  for_fields([&](auto fc) {
    constexpr size_t f = decltype(fc)::value;
    set_field<f>(e, value_of(b, h, f, read_bits(data, pos + h.offset[f], h.width[f])));
  });
  return e;
}

uint64_t PackedEvents::t_ns(size_t i) const {
  const uint8_t* b = block(i / kBlock);
  const BlockHeader h = header_at(b);
  const uint64_t code =
      read_bits(b + h.data_at, static_cast<uint64_t>(i % kBlock) * h.record_bits, h.width[0]);
  return value_of(b, h, 0, code);
}

size_t PackedEvents::decode_block(size_t b, Event* out) const {
  const size_t n = std::min(kBlock, size_ - b * kBlock);
  const uint8_t* bytes = block(b);
  const BlockHeader h = header_at(bytes);
  const uint8_t* data = bytes + h.data_at;
  for (size_t i = 0; i < n; ++i) out[i] = Event{};
  for_fields([&](auto fc) {
    constexpr size_t f = decltype(fc)::value;
    const unsigned width = h.width[f];
    const uint64_t base = h.base[f];
    if (width == 0) {  // the same value throughout the block
      const uint64_t v = value_of(bytes, h, f, 0);
      if (v != 0) {
        for (size_t i = 0; i < n; ++i) set_field<f>(out[i], v);
      }
      return;
    }
    uint64_t pos = h.offset[f];
    const unsigned record = h.record_bits;
    if ((h.dict >> f) & 1) {
      for (size_t i = 0; i < n; ++i, pos += record) {
        set_field<f>(out[i], value_of(bytes, h, f, read_bits(data, pos, width)));
      }
    } else if ((h.zero_escaped >> f) & 1) {
      for (size_t i = 0; i < n; ++i, pos += record) {
        const uint64_t code = read_bits(data, pos, width);
        set_field<f>(out[i], code == 0 ? 0 : base + (code - 1));
      }
    } else {
      for (size_t i = 0; i < n; ++i, pos += record) set_field<f>(out[i], base + read_bits(data, pos, width));
    }
  });
  return n;
}

void PackedEvents::decode(size_t begin, size_t end, Event* out) const {
  Event buf[kBlock];
  while (begin < end) {
    const size_t b = begin / kBlock;
    const size_t n = decode_block(b, buf);
    const size_t from = begin - b * kBlock;
    const size_t take = std::min(n - from, end - begin);
    std::copy(buf + from, buf + from + take, out);
    out += take;
    begin += take;
  }
}

void PackedEvents::count_kinds(uint64_t* counts) const {
  constexpr size_t kKind = 6;
  for (size_t b = 0; b < blocks_.size(); ++b) {
    const size_t n = std::min(kBlock, size_ - b * kBlock);
    const uint8_t* bytes = block(b);
    const BlockHeader h = header_at(bytes);
    if (h.width[kKind] == 0 && !((h.zero_escaped >> kKind) & 1) && !((h.dict >> kKind) & 1)) {
      counts[static_cast<uint8_t>(h.base[kKind])] += n;
      continue;
    }
    uint64_t pos = h.offset[kKind];
    for (size_t i = 0; i < n; ++i, pos += h.record_bits) {
      const uint64_t v = value_of(bytes, h, kKind, read_bits(bytes + h.data_at, pos, h.width[kKind]));
      ++counts[static_cast<uint8_t>(v)];
    }
  }
}

std::vector<Event> PackedEvents::unpack() const {
  std::vector<Event> out(size_);
  if (size_) decode(0, size_, out.data());
  return out;
}

size_t PackedEvents::memory_bytes() const {
  size_t n = blocks_.capacity() * sizeof(uint64_t) + arenas_.capacity() * sizeof(arenas_[0]);
  for (const auto& a : arenas_) n += a.size();
  return n;
}

PackedEvents PackedEvents::pack(const Event* events, size_t n) {
  PackedEventsBuilder b;
  b.append(events, n);
  return b.finish();
}

namespace {

// Appends a packed block to `p`'s last arena, or a new one when it is full.
void push_block(std::vector<std::vector<uint8_t>>& arenas, std::vector<uint64_t>& blocks,
                const Event* events, size_t n) {
  if (arenas.empty() || arenas.back().capacity() - arenas.back().size() < kMaxBlockBytes) {
    arenas.emplace_back().reserve(kArenaBytes);
  }
  const size_t at = detail::pack_block(events, n, arenas.back());
  blocks.push_back(static_cast<uint64_t>(arenas.size() - 1) << 40 | at);
}

}  // namespace

// ---- PackedEventsBuilder ----

PackedEventsBuilder::PackedEventsBuilder(uint64_t first)
    : head_room_((PackedEvents::kBlock - first % PackedEvents::kBlock) % PackedEvents::kBlock) {}

void PackedEventsBuilder::flush_staged() {
  push_block(out_.arenas_, out_.blocks_, staged_.get(), staged_n_);
  out_.size_ += staged_n_;
  staged_n_ = 0;
}

void PackedEventsBuilder::append(const Event* events, size_t n) {
  count_ += n;
  if (head_room_ > 0) {
    const size_t take = std::min(head_room_, n);
    head_.insert(head_.end(), events, events + take);
    head_room_ -= take;
    events += take;
    n -= take;
  }
  if (n == 0) return;
  // Whole blocks straight from `events`, the rest staged.
  while (staged_n_ == 0 && n >= PackedEvents::kBlock) {
    push_block(out_.arenas_, out_.blocks_, events, PackedEvents::kBlock);
    out_.size_ += PackedEvents::kBlock;
    events += PackedEvents::kBlock;
    n -= PackedEvents::kBlock;
  }
  if (n == 0) return;
  if (!staged_) staged_.reset(new Event[PackedEvents::kBlock]);
  while (n > 0) {
    const size_t take = std::min(PackedEvents::kBlock - staged_n_, n);
    std::copy(events, events + take, staged_.get() + staged_n_);
    staged_n_ += take;
    events += take;
    n -= take;
    if (staged_n_ == PackedEvents::kBlock) flush_staged();
  }
}

PackedEvents PackedEventsBuilder::finish() {
  std::vector<PackedEventsBuilder> one;
  one.push_back(std::move(*this));
  return join_packed(one);
}

PackedEvents join_packed(std::vector<PackedEventsBuilder>& parts) {
  constexpr size_t kBlock = PackedEvents::kBlock;
  PackedEvents out;
  std::vector<Event> carry;  // the block being filled across parts
  carry.reserve(kBlock);
  auto add = [&](const Event* e, size_t n) {
    while (n > 0) {
      const size_t take = std::min(kBlock - carry.size(), n);
      carry.insert(carry.end(), e, e + take);
      e += take;
      n -= take;
      if (carry.size() == kBlock) {
        push_block(out.arenas_, out.blocks_, carry.data(), kBlock);
        carry.clear();
      }
    }
  };
  size_t total = 0;
  for (PackedEventsBuilder& part : parts) {
    total += part.count_;
    add(part.head_.data(), part.head_.size());
    PackedEvents& p = part.out_;
    if (carry.empty()) {  // its blocks start on a block boundary: take them as they are
      const uint64_t base = out.arenas_.size();
      for (auto& a : p.arenas_) out.arenas_.push_back(std::move(a));
      for (uint64_t ref : p.blocks_) out.blocks_.push_back(ref + (base << 40));
    } else {  // a part that did not start where the one before ended
      Event buf[kBlock];
      for (size_t b = 0; b < p.blocks_.size(); ++b) add(buf, p.decode_block(b, buf));
    }
    add(part.staged_.get(), part.staged_n_);
    part = PackedEventsBuilder();
  }
  if (!carry.empty()) push_block(out.arenas_, out.blocks_, carry.data(), carry.size());
  out.size_ = total;
  for (auto& a : out.arenas_) {
    if (a.capacity() - a.size() > kArenaBytes / 8) a.shrink_to_fit();
  }
  out.blocks_.shrink_to_fit();
  return out;
}

}  // namespace hookscope::trace
