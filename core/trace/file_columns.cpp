#include "trace/file_columns.h"

#include <zstd.h>

#include <cstddef>
#include <stdexcept>

#include "trace/file_format.h"

namespace hookscope::trace {

namespace {

// Column order in the file (Note [Chunk columns]).
enum Column {
  kColT,
  kColKind,
  kColSub,
  kColRank,
  kColNode,
  kColKey,
  kColArg,
  kColOwner,
  kColActor
};

// Size in bytes of each column's Event field.
constexpr int kFieldBytes[kNumColumns] = {8, 1, 1, 2, 8, 8, 8, 4, 4};
static_assert(sizeof(Event::kind) == 1 && sizeof(Event::rank) == 2 && sizeof(Event::owner) == 4);

inline int width_of(uint64_t range) {
  return range == 0 ? 0 : (64 - __builtin_clzll(range) + 7) / 8;
}

struct KindTable {
  uint8_t is_string[256] = {};
  constexpr KindTable() {
    for (int k = 0; k < 256; ++k) is_string[k] = event_arg_is_string(static_cast<EventKind>(k));
  }
};
constexpr KindTable kKinds;

// ---- decoding: columns into contiguous values, then one pass into events -------

// Loops over blocks of a fixed trip count are vectorized at -O2.
constexpr size_t kBlock = 16;

inline uint64_t from_zigzag(uint64_t z) { return (z >> 1) ^ (0 - (z & 1)); }

// vals[i] = base + the value in the `width` byte planes at `planes`; with
// `delta`, those are zigzag deltas, decoded, and with `sum` also summed from
// `prev`. Every pass but the prefix sum is vectorized.
void gather_column(const uint8_t* __restrict planes, int width, size_t n, uint64_t base, bool delta,
                   bool sum, uint64_t prev, uint64_t* __restrict vals) {
  const size_t blocked = n - n % kBlock;
  if (width == 0) {
    for (size_t i = 0; i < n; ++i) vals[i] = base;
  } else {
    for (size_t i = 0; i < blocked; i += kBlock) {
      for (size_t j = 0; j < kBlock; ++j) vals[i + j] = base + planes[i + j];
    }
    for (size_t j = blocked; j < n; ++j) vals[j] = base + planes[j];
  }
  for (int p = 1; p < width; ++p) {
    const uint8_t* __restrict plane = planes + static_cast<size_t>(p) * n;
    const int shift = 8 * p;
    for (size_t i = 0; i < blocked; i += kBlock) {
      for (size_t j = 0; j < kBlock; ++j)
        vals[i + j] += static_cast<uint64_t>(plane[i + j]) << shift;
    }
    for (size_t j = blocked; j < n; ++j) vals[j] += static_cast<uint64_t>(plane[j]) << shift;
  }
  if (delta) {
    for (size_t i = 0; i < blocked; i += kBlock) {
      for (size_t j = 0; j < kBlock; ++j) {
        vals[i + j] = from_zigzag(vals[i + j]);
      }
    }
    for (size_t j = blocked; j < n; ++j) vals[j] = from_zigzag(vals[j]);
    if (sum) {
      for (size_t i = 0; i < n; ++i) vals[i] = prev += vals[i];  // zigzag decoded above
    }
  }
}

// ---- encoding: byte planes of one column, per (width, transform) -----------------

// and_ / or_ of v[0..n), blocked so that -O2 vectorizes it (kFold lanes of
// accumulators stay in registers).
constexpr size_t kFold = 4;
void fold_and_or(const uint64_t* __restrict v, size_t n, uint64_t& and_, uint64_t& or_) {
  uint64_t a[kFold] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}}, o[kFold] = {};
  size_t i = 0;
  for (; i + kFold <= n; i += kFold) {
    for (size_t j = 0; j < kFold; ++j) a[j] &= v[i + j], o[j] |= v[i + j];
  }
  for (; i < n; ++i) and_ &= v[i], or_ |= v[i];
  for (size_t j = 0; j < kFold; ++j) and_ &= a[j], or_ |= o[j];
}

inline uint64_t zz(uint64_t d) { return (d << 1) ^ (0 - (d >> 63)); }  // zigzag, vectorizable

// The same over the zigzag deltas of v (from `prev`).
void fold_delta_and_or(const uint64_t* __restrict v, size_t n, uint64_t prev, uint64_t& and_,
                       uint64_t& or_) {
  and_ = or_ = zz(v[0] - prev);
  uint64_t a[kFold] = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}}, o[kFold] = {};
  size_t i = 1;
  for (; i + kFold <= n; i += kFold) {
    for (size_t j = 0; j < kFold; ++j) {
      const uint64_t d = zz(v[i + j] - v[i + j - 1]);
      a[j] &= d, o[j] |= d;
    }
  }
  for (; i < n; ++i) and_ &= zz(v[i] - v[i - 1]), or_ |= zz(v[i] - v[i - 1]);
  for (size_t j = 0; j < kFold; ++j) and_ &= a[j], or_ |= o[j];
}

// Writes the `width` byte planes of (transform(v[i]) - base) to `planes`,
// through `tmp` (n values). Blocked loops: -O2 vectorizes them.
void scatter_column(const uint64_t* __restrict v, size_t n, int width, bool delta, uint64_t base,
                    uint64_t prev, uint64_t* __restrict tmp, uint8_t* __restrict planes) {
  const size_t blocked = n - n % kBlock;
  if (delta) {
    tmp[0] = zz(v[0] - prev) - base;
    size_t i = 1;
    for (; i + kBlock <= n; i += kBlock) {
      for (size_t j = 0; j < kBlock; ++j) tmp[i + j] = zz(v[i + j] - v[i + j - 1]) - base;
    }
    for (; i < n; ++i) tmp[i] = zz(v[i] - v[i - 1]) - base;
  } else {
    for (size_t i = 0; i < blocked; i += kBlock) {
      for (size_t j = 0; j < kBlock; ++j) tmp[i + j] = v[i + j] - base;
    }
    for (size_t i = blocked; i < n; ++i) tmp[i] = v[i] - base;
  }
  for (int p = 0; p < width; ++p) {
    uint8_t* __restrict plane = planes + static_cast<size_t>(p) * n;
    const int shift = 8 * p;
    for (size_t i = 0; i < blocked; i += kBlock) {
      for (size_t j = 0; j < kBlock; ++j) plane[i + j] = static_cast<uint8_t>(tmp[i + j] >> shift);
    }
    for (size_t i = blocked; i < n; ++i) plane[i] = static_cast<uint8_t>(tmp[i] >> shift);
  }
}

}  // namespace

ChunkCodec::ChunkCodec(int zstd_level) : level_(zstd_level) {}

ChunkCodec::~ChunkCodec() {
  ZSTD_freeCCtx(cctx_);
  ZSTD_freeDCtx(dctx_);
}

// ---- encoding -------------------------------------------------------------------

void ChunkCodec::encode(std::string& out, uint32_t thread, const Event* ev, size_t n) {
  if (n == 0 || n > kMaxChunkEvents) {
    throw std::logic_error("ChunkCodec::encode: a chunk holds 1.." +
                           std::to_string(kMaxChunkEvents) + " events");
  }
  put_varint(out, thread);
  put_varint(out, n);

  // Transpose to columns first: every later pass is over contiguous values.
  if (columns_.size() < (kNumColumns + 1) * n) columns_.resize((kNumColumns + 1) * n);
  uint64_t* col[kNumColumns];
  for (int c = 0; c < kNumColumns; ++c) col[c] = columns_.data() + c * n;
  for (size_t i = 0; i < n; ++i) {
    const Event& e = ev[i];
    col[kColT][i] = e.t_ns;
    col[kColKind][i] = static_cast<uint64_t>(e.kind);
    col[kColSub][i] = e.sub;
    col[kColRank][i] = e.rank;
    col[kColNode][i] = e.node;
    col[kColKey][i] = e.key;
    col[kColArg][i] = e.arg;
    col[kColOwner][i] = e.owner;
    col[kColActor][i] = e.actor;
  }
  if (raw_.size() < kNumColumns * 8 * n) raw_.resize(kNumColumns * 8 * n);
  size_t raw_size = 0;
  for (int c = 0; c < kNumColumns; ++c) {
    uint64_t* v = col[c];
    // Keep the transform whose range needs fewer bytes (raw on ties). Time
    // only ever goes well with deltas; 1- and 2-byte fields fit raw.
    const bool try_raw = c != kColT, try_delta = kFieldBytes[c] >= 4;
    // Frame of reference from AND / OR (vectorizable, unlike unsigned
    // min / max): every value v has AND <= v <= OR, so v - AND fits the
    // bytes of OR - AND. It can cost a byte where max - min would not, at a
    // power-of-two boundary; zstd takes most of that back.
    const uint64_t first_prev = v[0];  // delta columns start from their first value
    uint64_t r_and = ~uint64_t{0}, r_or = 0, d_and = ~uint64_t{0}, d_or = 0;
    if (try_raw) fold_and_or(v, n, r_and, r_or);
    if (try_delta) fold_delta_and_or(v, n, first_prev, d_and, d_or);
    const int wraw = try_raw ? width_of(r_or - r_and) : 9;
    const int wdelta = try_delta ? width_of(d_or - d_and) : 9;
    const bool delta = wdelta < wraw;
    const int w = delta ? wdelta : wraw;
    const uint64_t base = delta ? d_and : r_and;
    out.push_back(static_cast<char>(w | (delta ? 0x10 : 0)));
    put_varint(out, base);
    if (delta) put_varint(out, first_prev);
    if (w == 0) continue;
    scatter_column(v, n, w, delta, base, first_prev, columns_.data() + kNumColumns * n,
                   raw_.data() + raw_size);
    raw_size += static_cast<size_t>(w) * n;
  }
  put_varint(out, raw_size);
  if (raw_size == 0) return;
  if (!cctx_) cctx_ = ZSTD_createCCtx();
  frame_.resize(ZSTD_compressBound(raw_size));
  size_t z = ZSTD_compressCCtx(cctx_, frame_.data(), frame_.size(), raw_.data(), raw_size, level_);
  if (ZSTD_isError(z)) {
    throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(z));
  }
  out.append(frame_.data(), z);
}

// ---- decoding -------------------------------------------------------------------

const char* ChunkCodec::parse_header(const uint8_t* data, size_t size, ChunkHeader& h) {
  ByteCursor c{data, data + size};
  uint64_t thread, count;
  if (!c.get_varint(thread) || !c.get_varint(count)) {
    return "event chunk header cut short";
  }
  if (thread > UINT32_MAX) return "impossible thread index";
  if (count == 0 || count > kMaxChunkEvents) return "impossible event count";
  h.thread = static_cast<uint32_t>(thread);
  h.count = static_cast<uint32_t>(count);
  uint64_t widths = 0;
  for (ColumnDesc& col : h.columns) {
    uint8_t code;
    if (!c.get_u8(code) || !c.get_varint(col.base)) return "event chunk header cut short";
    col.width = code & 0x0f;
    col.delta = (code & 0x10) != 0;
    col.start = 0;
    if (col.delta && !c.get_varint(col.start)) return "event chunk header cut short";
    if (col.width > 8 || (code & 0xe0)) return "bad column encoding";
    widths += col.width;
  }
  if (!c.get_varint(h.raw_size)) return "event chunk header cut short";
  if (h.raw_size != count * widths) return "decompressed size mismatch";
  h.frame = h.raw_size ? c.p : nullptr;
  h.frame_size = c.left();
  if ((h.raw_size == 0) != (h.frame_size == 0)) return "decompressed size mismatch";
  return nullptr;
}

uint64_t ChunkCodec::first_time_hint(const ChunkHeader& h) {
  const ColumnDesc& t = h.columns[kColT];
  return t.delta ? t.start : t.base;
}

const char* ChunkCodec::decode(const ChunkHeader& h, uint64_t string_count, Event* out,
                               bool& sorted) {
  const size_t n = h.count;
  if (h.raw_size) {
    // Sizes are checked against the header before anything is allocated:
    // raw_size = count * widths <= kMaxChunkEvents * 72 (parse_header).
    if (ZSTD_getFrameContentSize(h.frame, h.frame_size) != h.raw_size) {
      return "decompressed size mismatch";
    }
    if (ZSTD_findFrameCompressedSize(h.frame, h.frame_size) != h.frame_size) {
      return "bad compressed data";
    }
    if (!dctx_) dctx_ = ZSTD_createDCtx();
    if (raw_.size() < h.raw_size) raw_.resize(h.raw_size);
    size_t got = ZSTD_decompressDCtx(dctx_, raw_.data(), h.raw_size, h.frame, h.frame_size);
    if (ZSTD_isError(got)) return "bad compressed data";
    if (got != h.raw_size) return "decompressed size mismatch";
  }

  // The narrow columns (kind, sub, rank, owner, actor) are almost always raw,
  // one byte or none per value, with a base that cannot overflow the field:
  // then the event pass reads their bytes straight from the planes.
  const uint8_t* plane_of[kNumColumns];
  bool narrow_bytes = true;
  {
    const uint8_t* planes = raw_.data();
    for (int c = 0; c < kNumColumns; ++c) {
      const ColumnDesc& cd = h.columns[c];
      plane_of[c] = planes;
      planes += static_cast<size_t>(cd.width) * n;
      if (kFieldBytes[c] < 8) {
        const uint64_t max = (uint64_t{1} << (8 * kFieldBytes[c])) - 1;
        // base + any byte must fit the field (base alone when width is 0).
        narrow_bytes &= !cd.delta && cd.width <= 1 && cd.base <= max - (cd.width ? 255 : 0);
        if (cd.width == 0) {
          if (zeros_.size() < n) zeros_.resize(n);
          plane_of[c] = zeros_.data();
        }
      }
    }
  }
  if (columns_.size() < kNumColumns * n) columns_.resize(kNumColumns * n);
  uint64_t* col[kNumColumns];
  // With narrow_bytes, the wide columns are finished in the event pass: a
  // delta column's values are its decoded deltas, summed there (value i of
  // wide column c is sum[c] = (sum[c] & summed[c]) + col[c][i & mask[c]]),
  // and a column of one stored value throughout (width 0: often key or arg,
  // or a counter's constant step) is read from that value, never filled in.
  uint64_t constant[kNumColumns], sum[kNumColumns], summed[kNumColumns];
  size_t mask[kNumColumns];
  for (int c = 0; c < kNumColumns; ++c) {
    const ColumnDesc& cd = h.columns[c];
    col[c] = columns_.data() + c * n;
    mask[c] = ~size_t{0};
    sum[c] = cd.start;
    summed[c] = cd.delta ? ~uint64_t{0} : 0;
    if (narrow_bytes && kFieldBytes[c] < 8) continue;
    if (narrow_bytes && cd.width == 0) {
      constant[c] = cd.delta ? from_zigzag(cd.base) : cd.base;
      col[c] = &constant[c];
      mask[c] = 0;
      continue;
    }
    gather_column(plane_of[c], cd.width, n, cd.base, cd.delta, !narrow_bytes, cd.start, col[c]);
  }

  // One pass writes whole events and checks ranges, kinds and string ids.
  uint64_t overflow = 0;
  uint8_t bad_kind = 0, bad_string = 0;
  bool up = true;
  auto check = [&](uint64_t t, uint64_t& prev_t, uint64_t arg, uint8_t k) {
    up &= t >= prev_t;
    prev_t = t;
    bad_kind |= static_cast<uint8_t>(k - 1) >= static_cast<uint8_t>(EventKind::kCount) - 1;
    bad_string |= kKinds.is_string[k] & (arg >= string_count);
  };
  if (narrow_bytes) {
    const uint64_t *t = col[kColT], *node = col[kColNode], *key = col[kColKey], *arg = col[kColArg];
    const size_t t_mask = mask[kColT], node_mask = mask[kColNode], key_mask = mask[kColKey],
                 arg_mask = mask[kColArg];
    const uint64_t t_summed = summed[kColT], node_summed = summed[kColNode],
                   key_summed = summed[kColKey], arg_summed = summed[kColArg];
    uint64_t t_sum = sum[kColT], node_sum = sum[kColNode], key_sum = sum[kColKey],
             arg_sum = sum[kColArg];
    const uint8_t *kind = plane_of[kColKind], *sub = plane_of[kColSub], *rank = plane_of[kColRank],
                  *owner = plane_of[kColOwner], *actor = plane_of[kColActor];
    const auto kind0 = static_cast<uint8_t>(h.columns[kColKind].base);
    const auto sub0 = static_cast<uint8_t>(h.columns[kColSub].base);
    const auto rank0 = static_cast<uint16_t>(h.columns[kColRank].base);
    const auto owner0 = static_cast<uint32_t>(h.columns[kColOwner].base);
    const auto actor0 = static_cast<uint32_t>(h.columns[kColActor].base);
    uint64_t prev_t = (t_sum & t_summed) + t[0];
    for (size_t i = 0; i < n; ++i) {
      Event& e = out[i];
      t_sum = (t_sum & t_summed) + t[i & t_mask];
      node_sum = (node_sum & node_summed) + node[i & node_mask];
      key_sum = (key_sum & key_summed) + key[i & key_mask];
      arg_sum = (arg_sum & arg_summed) + arg[i & arg_mask];
      e.t_ns = t_sum;
      e.node = node_sum;
      e.key = key_sum;
      e.arg = arg_sum;
      e.owner = owner0 + owner[i];
      e.actor = actor0 + actor[i];
      const auto k = static_cast<uint8_t>(kind0 + kind[i]);
      e.kind = static_cast<EventKind>(k);
      e.sub = static_cast<uint8_t>(sub0 + sub[i]);
      e.rank = static_cast<uint16_t>(rank0 + rank[i]);
      e.thread = h.thread;
      check(t_sum, prev_t, arg_sum, k);
    }
  } else {
    const uint64_t *t = col[kColT], *node = col[kColNode], *key = col[kColKey], *arg = col[kColArg];
    const uint64_t *kind = col[kColKind], *sub = col[kColSub], *rank = col[kColRank],
                   *owner = col[kColOwner], *actor = col[kColActor];
    uint64_t prev_t = t[0];
    for (size_t i = 0; i < n; ++i) {
      Event& e = out[i];
      e.t_ns = t[i];
      e.node = node[i];
      e.key = key[i];
      e.arg = arg[i];
      e.owner = static_cast<uint32_t>(owner[i]);
      e.actor = static_cast<uint32_t>(actor[i]);
      e.kind = static_cast<EventKind>(kind[i]);
      e.sub = static_cast<uint8_t>(sub[i]);
      e.rank = static_cast<uint16_t>(rank[i]);
      e.thread = h.thread;
      overflow |= ((kind[i] | sub[i]) >> 8) | (rank[i] >> 16) | ((owner[i] | actor[i]) >> 32);
      check(t[i], prev_t, arg[i], static_cast<uint8_t>(kind[i]));
    }
  }
  sorted = up;
  if (overflow) return "value out of range";
  if (bad_kind) return "impossible event kind";
  if (bad_string) return "string id out of range";
  return nullptr;
}

}  // namespace hookscope::trace
