#include "trace/file_columns.h"

#include <zstd.h>

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "trace/file_format.h"

namespace hookscope::trace {

namespace {

enum Column { kColT, kColKind, kColSub, kColRank, kColNode, kColKey, kColArg, kColOwner, kColActor };

constexpr uint64_t kColumnMax[kNumColumns] = {
    UINT64_MAX, 0xff, 0xff, 0xffff, UINT64_MAX, UINT64_MAX, UINT64_MAX, 0xffffffffu, 0xffffffffu};

inline uint64_t get_field(const Event& e, int c) {
  switch (c) {
    case kColT: return e.t_ns;
    case kColKind: return static_cast<uint64_t>(e.kind);
    case kColSub: return e.sub;
    case kColRank: return e.rank;
    case kColNode: return e.node;
    case kColKey: return e.key;
    case kColArg: return e.arg;
    case kColOwner: return e.owner;
    default: return e.actor;
  }
}

// Stores column `c` of values vals[0..n) into the events (values already range checked).
void set_column(Event* out, size_t n, int c, const uint64_t* vals) {
  switch (c) {
    case kColT: for (size_t i = 0; i < n; ++i) out[i].t_ns = vals[i]; break;
    case kColKind: for (size_t i = 0; i < n; ++i) out[i].kind = static_cast<EventKind>(vals[i]); break;
    case kColSub: for (size_t i = 0; i < n; ++i) out[i].sub = static_cast<uint8_t>(vals[i]); break;
    case kColRank: for (size_t i = 0; i < n; ++i) out[i].rank = static_cast<uint16_t>(vals[i]); break;
    case kColNode: for (size_t i = 0; i < n; ++i) out[i].node = vals[i]; break;
    case kColKey: for (size_t i = 0; i < n; ++i) out[i].key = vals[i]; break;
    case kColArg: for (size_t i = 0; i < n; ++i) out[i].arg = vals[i]; break;
    case kColOwner: for (size_t i = 0; i < n; ++i) out[i].owner = static_cast<uint32_t>(vals[i]); break;
    default: for (size_t i = 0; i < n; ++i) out[i].actor = static_cast<uint32_t>(vals[i]); break;
  }
}

inline int width_of(uint64_t range) {
  return range == 0 ? 0 : (64 - __builtin_clzll(range) + 7) / 8;
}

// Kinds whose `arg` is a string id (Note [Event record]).
constexpr bool arg_is_string(EventKind k) {
  switch (k) {
    case EventKind::kNodeCreated:
    case EventKind::kNodeLabel:
    case EventKind::kOwnerCreated:
    case EventKind::kMarkedTwice:
    case EventKind::kUnusedParameter:
    case EventKind::kFailure:
    case EventKind::kRecoveryStep:
      return true;
    default:
      return false;
  }
}

struct StringKinds {
  bool is_string[256] = {};
  constexpr StringKinds() {
    for (int k = 0; k < 256; ++k) is_string[k] = arg_is_string(static_cast<EventKind>(k));
  }
};
constexpr StringKinds kStringKinds;

// vals[i] = the `w` byte planes at `planes` reassembled (plane p = byte p).
void gather_planes(const uint8_t* planes, int w, size_t n, uint64_t* vals) {
  if (w == 0) {
    std::fill(vals, vals + n, 0);
    return;
  }
  for (size_t i = 0; i < n; ++i) vals[i] = planes[i];
  for (int p = 1; p < w; ++p) {
    const uint8_t* plane = planes + static_cast<size_t>(p) * n;
    const int shift = 8 * p;
    for (size_t i = 0; i < n; ++i) vals[i] |= static_cast<uint64_t>(plane[i]) << shift;
  }
}

}  // namespace

ChunkCodec::ChunkCodec(int zstd_level) : level_(zstd_level) {}

ChunkCodec::~ChunkCodec() {
  ZSTD_freeCCtx(cctx_);
  ZSTD_freeDCtx(dctx_);
}

void ChunkCodec::encode(std::string& out, uint32_t thread, const Event* ev, size_t n) {
  if (n == 0 || n > kMaxChunkEvents) {
    throw std::logic_error("ChunkCodec::encode: a chunk holds 1.." +
                           std::to_string(kMaxChunkEvents) + " events");
  }
  const uint64_t t_first = ev[0].t_ns;
  put_varint(out, thread);
  put_varint(out, n);
  put_varint(out, t_first);

  values_.resize(n);
  raw_.clear();
  for (int c = 0; c < kNumColumns; ++c) {
    // Both transforms' ranges in one pass; keep the narrower (raw on ties).
    uint64_t rmin = UINT64_MAX, rmax = 0, dmin = UINT64_MAX, dmax = 0;
    uint64_t prev = c == kColT ? t_first : 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = get_field(ev[i], c);
      uint64_t d = zigzag(static_cast<int64_t>(v - prev));
      prev = v;
      rmin = std::min(rmin, v);
      rmax = std::max(rmax, v);
      dmin = std::min(dmin, d);
      dmax = std::max(dmax, d);
    }
    const int wraw = width_of(rmax - rmin), wdelta = width_of(dmax - dmin);
    const bool delta = wdelta < wraw;
    const int w = delta ? wdelta : wraw;
    const uint64_t base = delta ? dmin : rmin;
    out.push_back(static_cast<char>(w | (delta ? 0x10 : 0)));
    put_varint(out, base);

    prev = c == kColT ? t_first : 0;
    for (size_t i = 0; i < n; ++i) {
      uint64_t v = get_field(ev[i], c);
      values_[i] = (delta ? zigzag(static_cast<int64_t>(v - prev)) : v) - base;
      prev = v;
    }
    const size_t at = raw_.size();
    raw_.resize(at + n * static_cast<size_t>(w));
    for (int p = 0; p < w; ++p) {
      uint8_t* plane = raw_.data() + at + static_cast<size_t>(p) * n;
      for (size_t i = 0; i < n; ++i) plane[i] = static_cast<uint8_t>(values_[i] >> (8 * p));
    }
  }
  put_varint(out, raw_.size());
  if (raw_.empty()) return;
  if (!cctx_) cctx_ = ZSTD_createCCtx();
  frame_.resize(ZSTD_compressBound(raw_.size()));
  size_t z = ZSTD_compressCCtx(cctx_, frame_.data(), frame_.size(), raw_.data(), raw_.size(),
                               level_);
  if (ZSTD_isError(z)) {
    throw std::runtime_error(std::string("zstd compression failed: ") + ZSTD_getErrorName(z));
  }
  out.append(frame_.data(), z);
}

const char* ChunkCodec::parse_header(const uint8_t* data, size_t size, ChunkHeader& h) {
  ByteCursor c{data, data + size};
  uint64_t thread, count;
  if (!c.get_varint(thread) || !c.get_varint(count) || !c.get_varint(h.t_first)) {
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

const char* ChunkCodec::decode(const ChunkHeader& h, uint64_t string_count, Event* out,
                               bool& sorted) {
  const size_t n = h.count;
  if (h.raw_size) {
    // Sizes are checked against the header before anything is allocated;
    // raw_size <= kMaxChunkEvents * 9 * 8 by parse_header.
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
  if (values_.size() < n) values_.resize(n);
  uint64_t* vals = values_.data();
  const uint8_t* planes = raw_.data();
  sorted = true;
  for (int c = 0; c < kNumColumns; ++c) {
    const ColumnDesc& col = h.columns[c];
    gather_planes(planes, col.width, n, vals);
    planes += static_cast<size_t>(col.width) * n;
    uint64_t overflow = 0;
    const uint64_t mask = ~kColumnMax[c];
    if (col.delta) {
      uint64_t prev = c == kColT ? h.t_first : 0;
      bool up = true;
      for (size_t i = 0; i < n; ++i) {
        uint64_t v = prev + static_cast<uint64_t>(unzigzag(vals[i] + col.base));
        up &= v >= prev;
        vals[i] = prev = v;
        overflow |= v & mask;
      }
      if (c == kColT) sorted = up;
    } else {
      uint64_t prev = 0;
      bool up = true;
      for (size_t i = 0; i < n; ++i) {
        uint64_t v = vals[i] + col.base;
        up &= v >= prev;
        vals[i] = prev = v;
        overflow |= v & mask;
      }
      if (c == kColT) sorted = up;
    }
    if (overflow) return "value out of range";
    if (c == kColT && vals[0] != h.t_first) return "first timestamp mismatch";
    set_column(out, n, c, vals);
  }
  bool bad_kind = false, bad_string = false;
  for (size_t i = 0; i < n; ++i) {
    Event& e = out[i];
    e.thread = h.thread;
    const auto k = static_cast<uint8_t>(e.kind);
    bad_kind |= k == 0 || k >= static_cast<uint8_t>(EventKind::kCount);
    bad_string |= kStringKinds.is_string[k] && e.arg >= string_count;
  }
  if (bad_kind) return "impossible event kind";
  if (bad_string) return "string id out of range";
  return nullptr;
}

}  // namespace hookscope::trace
