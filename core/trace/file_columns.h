#pragma once
// Column codec of event chunk blocks. See Note [Chunk columns].

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "trace/event.h"

struct ZSTD_CCtx_s;
struct ZSTD_DCtx_s;

namespace hookscope::trace {

// Note [Chunk columns]
// ~~~~~~~~~~~~~~~~~~~~
// An event chunk holds the events of one thread (Event::thread is stored once,
// in the chunk) as nine columns: t_ns, kind, sub, rank, node, key, arg, owner,
// actor. Each column is transformed (raw, or zigzag delta from the previous
// value, starting from `start`), offset by a `base` no greater than any
// value (frame of reference) and stored in the fewest whole bytes `width`
// that hold every value, as `width` byte planes (plane p holds byte p of
// every value, so high bytes that are mostly zero form long runs).
// The planes of all columns are then one zstd frame. This takes a training
// trace to a few bytes per event, and decoding is a few tight byte loops, no
// per-value branching. The exact payload layout is in docs/trace-format.md.
inline constexpr int kNumColumns = 9;

struct ColumnDesc {
  uint8_t width = 0;   // bytes per value, 0..8
  bool delta = false;  // zigzag delta transform
  uint64_t base = 0;   // added to every stored value
  uint64_t start = 0;  // delta: the value before the first
};

struct ChunkHeader {
  uint32_t thread = 0;
  uint32_t count = 0;
  ColumnDesc columns[kNumColumns];
  uint64_t raw_size = 0;           // bytes of byte planes (= count * sum of widths)
  const uint8_t* frame = nullptr;  // the zstd frame (nullptr when raw_size == 0)
  size_t frame_size = 0;
};

// Reusable buffers and zstd contexts of one encoder or decoder (not shared
// between threads).
class ChunkCodec {
 public:
  explicit ChunkCodec(int zstd_level = -1);
  ~ChunkCodec();
  ChunkCodec(const ChunkCodec&) = delete;
  ChunkCodec& operator=(const ChunkCodec&) = delete;

  // Appends the payload of an event chunk block with events[0..count) to
  // `out`; every event must have Event::thread == thread. 1 <= count <= kMaxChunkEvents.
  void encode(std::string& out, uint32_t thread, const Event* events, size_t count);

  // Parses and checks a chunk payload's header (not the zstd frame). Returns
  // the reason it is malformed, or nullptr.
  static const char* parse_header(const uint8_t* data, size_t size, ChunkHeader& h);

  // The time of a chunk's first event as its header tells it without
  // decoding: exact for chunks ChunkCodec::encode made (their t column is a
  // delta column starting at the first time), only a hint for others.
  static uint64_t first_time_hint(const ChunkHeader& h);

  // Decodes a parsed chunk into out[0..h.count). Checks the frame's sizes,
  // every value's range, kinds, and string ids (< string_count). Sets
  // `sorted` to whether t_ns never decreases within the chunk. Returns the
  // reason the chunk is bad, or nullptr.
  const char* decode(const ChunkHeader& h, uint64_t string_count, Event* out, bool& sorted);

 private:
  int level_;
  ZSTD_CCtx_s* cctx_ = nullptr;
  ZSTD_DCtx_s* dctx_ = nullptr;
  std::vector<uint64_t> columns_;  // column values (and scratch) of one chunk
  std::vector<uint8_t> raw_;       // byte planes; only ever grows
  std::vector<uint8_t> zeros_;     // the plane of a constant narrow column
  std::string frame_;
};

}  // namespace hookscope::trace
