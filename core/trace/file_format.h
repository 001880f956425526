#pragma once
// The .hstrace file format, v1: constants and the small codecs shared by the
// writer, the reader and the fuzzer. See Note [Trace file format] and
// docs/trace-format.md (the normative description).

#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>

#include "trace/trace_data.h"

namespace hookscope::trace {

// Note [Trace file format]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A file is the 12-byte prefix (magic, version major.minor) followed by
// blocks. Every block is {u32 type, u32 length, u32 crc32, payload[length]};
// the CRC covers type, length and payload (for the header block also the
// prefix), so a block is either whole and intact or it is where reading
// stops. The header block comes first; then strings, event chunks and
// dropped-count blocks in the order the writer produced them (strings before
// the first chunk that uses them); a finished file ends with a footer block
// (the index) and a 16-byte trailer pointing at it. A file cut anywhere reads
// up to its last complete block, which is what makes a killed process leave a
// usable trace. All integers are little-endian. Event chunks hold the events
// of one thread, column-wise (Note [Chunk columns]), compressed with zstd.
// Versioning follows Tracy: a newer major is refused, an older one is named as
// legacy; a newer minor of the same major is read, skipping what it added
// (trailing header fields, blocks with kBlockSkippable set).

inline constexpr char kFileMagic[8] = {'\x89', 'H', 'S', 'T', 'R', 'A', 'C', 'E'};
inline constexpr char kTrailerMagic[8] = {'H', 'S', 'I', 'N', 'D', 'E', 'X', '\x1a'};
inline constexpr uint16_t kFormatMajor = 1;
inline constexpr uint16_t kFormatMinor = 2;  // 1.1: module hook kinds, saved-tensor events; 1.2: comm hooks
inline constexpr size_t kPrefixBytes = 12;       // magic + u16 major + u16 minor
inline constexpr size_t kBlockHeaderBytes = 12;  // type, length, crc
inline constexpr size_t kTrailerBytes = 16;      // u64 footer offset + magic
inline constexpr uint32_t kMaxBlockBytes = 64u << 20;
inline constexpr uint32_t kMaxChunkEvents = 65536;
// Reader safety limit: without ReadOptions::max_events a file may not decode
// to more than this many events per byte of file (real traces: < 1).
inline constexpr uint64_t kMaxEventsPerFileByte = 256;

// Block types. Types with kBlockSkippable set may be skipped by a reader that
// does not know them (added by a newer minor version); any other unknown type
// is damage.
enum class BlockType : uint32_t {
  kHeader = 1,
  kStrings = 2,
  kEvents = 3,
  kDropped = 4,
  kFooter = 5,
};
inline constexpr uint32_t kBlockSkippable = 0x100;
std::string_view to_string(BlockType type);  // "event chunk", ... ("block" when unknown)

static_assert(std::endian::native == std::endian::little,
              "the trace file codecs assume a little-endian host (Note [Event record])");

// Whether `arg` of an event of this kind is a string id (a StringId field
// in the table: Note [Typed events]); the reader checks those ids against the
// string table.
constexpr bool event_arg_is_string(EventKind k) {
#define HOOKSCOPE_ARG_IS_STRING(type, name, slot) \
  || (std::string_view(#type) == "StringId" && std::string_view(#slot) == "arg")
#define HOOKSCOPE_KIND_ARG_IS_STRING(Name, value, text) \
  case EventKind::k##Name: return false HOOKSCOPE_EVENT_FIELDS_##Name(HOOKSCOPE_ARG_IS_STRING, HOOKSCOPE_ARG_IS_STRING, HOOKSCOPE_ARG_IS_STRING);
  switch (k) {
    HOOKSCOPE_EVENT_KINDS(HOOKSCOPE_KIND_ARG_IS_STRING)
    default: return false;
  }
#undef HOOKSCOPE_KIND_ARG_IS_STRING
#undef HOOKSCOPE_ARG_IS_STRING
}
static_assert(event_arg_is_string(EventKind::kFailure) && !event_arg_is_string(EventKind::kMarkReady));
// The string an event of such a kind names, whatever its field is called, and
// setting it (the Model renumbers every trace's strings into its own).
inline uint64_t string_arg(const Event& e) { return e.arg; }
inline void set_string_arg(Event& e, uint64_t id) { e.arg = id; }

// A file that is not a readable trace. The message names the file, the byte
// offset and the reason, e.g. "t.hstrace: bad checksum in header at byte 12".
class TraceFormatError : public std::runtime_error {
 public:
  TraceFormatError(const std::string& source, uint64_t offset, const std::string& reason);
  uint64_t offset() const { return offset_; }
  const std::string& reason() const { return reason_; }

 private:
  uint64_t offset_;
  std::string reason_;
};

// CRC-32 (the ISO-HDLC / zlib polynomial 0xEDB88320), slice-by-8. `crc` is
// the value so far (0 to start), so a CRC can be computed over pieces.
uint32_t crc32(const void* data, size_t size, uint32_t crc = 0);

// ---- little helpers for encoders and decoders --------------------------------

inline void put_u16(std::string& out, uint16_t v) {
  out.append(reinterpret_cast<const char*>(&v), 2);
}
inline void put_u32(std::string& out, uint32_t v) {
  out.append(reinterpret_cast<const char*>(&v), 4);
}
inline void put_u64(std::string& out, uint64_t v) {
  out.append(reinterpret_cast<const char*>(&v), 8);
}
inline void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
inline uint64_t zigzag(int64_t v) {
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}
inline int64_t unzigzag(uint64_t v) {
  return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
}
inline void put_string(std::string& out, std::string_view s) {
  put_varint(out, s.size());
  out.append(s);
}

template <typename T>
T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

// Bounds-checked reader over one payload. Every get_* returns false (and
// leaves the cursor unspecified) instead of reading past the end.
struct ByteCursor {
  const uint8_t* p;
  const uint8_t* end;

  size_t left() const { return static_cast<size_t>(end - p); }
  bool get_u8(uint8_t& v) {
    if (p == end) return false;
    v = *p++;
    return true;
  }
  bool get_varint(uint64_t& v) {
    v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p == end) return false;
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return shift < 63 || b <= 1;  // no bits beyond 64
    }
    return false;
  }
  bool get_string(std::string& s) {
    uint64_t n;
    if (!get_varint(n) || n > left()) return false;
    s.assign(reinterpret_cast<const char*>(p), n);
    p += n;
    return true;
  }
};

// Appends one block {type, length, crc, payload} to `out`. `crc_prefix` is
// extra bytes the CRC covers before the block (the file prefix, for the
// header block).
void append_block(std::string& out, uint32_t type, std::string_view payload,
                  std::string_view crc_prefix = {});

// The file prefix and header block for `header`. The version written is
// kFormatMajor.kFormatMinor whatever `header` says.
std::string encode_file_start(const TraceHeader& header);
// Parses a header payload (fields as in docs/trace-format.md); false when it
// is malformed. Fields a newer minor version appended are ignored.
bool decode_header_payload(const uint8_t* data, size_t size, TraceHeader& header);

// The 16-byte trailer after the footer block.
std::string encode_trailer(uint64_t footer_offset);

}  // namespace hookscope::trace
