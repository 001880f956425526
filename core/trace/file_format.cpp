#include "trace/file_format.h"

#include <array>
#include <limits>

namespace hookscope::trace {

std::string_view to_string(BlockType type) {
  switch (type) {
    case BlockType::kHeader: return "header";
    case BlockType::kStrings: return "string table block";
    case BlockType::kEvents: return "event chunk";
    case BlockType::kDropped: return "dropped-count block";
    case BlockType::kFooter: return "footer";
  }
  return "block";
}

TraceFormatError::TraceFormatError(const std::string& source, uint64_t offset,
                                   const std::string& reason)
    : std::runtime_error(source + ": " + reason + " at byte " + std::to_string(offset)),
      offset_(offset),
      reason_(reason) {}

// ---- CRC-32 -------------------------------------------------------------------

namespace {

using CrcTables = std::array<std::array<uint32_t, 256>, 8>;

constexpr CrcTables make_crc_tables() {
  CrcTables t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[0][i] = c;
  }
  for (uint32_t i = 0; i < 256; ++i) {
    for (int s = 1; s < 8; ++s) t[s][i] = (t[s - 1][i] >> 8) ^ t[0][t[s - 1][i] & 0xff];
  }
  return t;
}

constexpr CrcTables kCrcTables = make_crc_tables();

}  // namespace

uint32_t crc32(const void* data, size_t size, uint32_t crc) {
  const auto& t = kCrcTables;
  const auto* p = static_cast<const uint8_t*>(data);
  crc = ~crc;
  while (size >= 8) {
    uint32_t lo = load_le<uint32_t>(p) ^ crc;
    uint32_t hi = load_le<uint32_t>(p + 4);
    crc = t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^ t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
          t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^ t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
    p += 8;
    size -= 8;
  }
  while (size--) crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
  return ~crc;
}

// ---- blocks and header ----------------------------------------------------------

void append_block(std::string& out, uint32_t type, std::string_view payload,
                  std::string_view crc_prefix) {
  std::string head;
  put_u32(head, type);
  put_u32(head, static_cast<uint32_t>(payload.size()));
  uint32_t crc = crc32(crc_prefix.data(), crc_prefix.size());
  crc = crc32(head.data(), head.size(), crc);
  crc = crc32(payload.data(), payload.size(), crc);
  out += head;
  put_u32(out, crc);
  out.append(payload);
}

std::string encode_file_start(const TraceHeader& header) {
  std::string prefix(kFileMagic, sizeof(kFileMagic));
  put_u16(prefix, kFormatMajor);
  put_u16(prefix, kFormatMinor);

  std::string payload;
  put_string(payload, header.hookscope_version);
  put_varint(payload, zigzag(header.rank));
  put_varint(payload, zigzag(header.world_size));
  put_string(payload, header.host);
  put_varint(payload, zigzag(header.pid));
  put_varint(payload, zigzag(header.start_wall_ns));
  put_varint(payload, header.start_mono_ns);
  put_string(payload, header.clock);
  put_string(payload, header.scenario);

  std::string out = prefix;
  append_block(out, static_cast<uint32_t>(BlockType::kHeader), payload, prefix);
  return out;
}

namespace {
bool get_int32(ByteCursor& c, int32_t& v) {
  uint64_t u;
  if (!c.get_varint(u)) return false;
  int64_t s = unzigzag(u);
  if (s < std::numeric_limits<int32_t>::min() || s > std::numeric_limits<int32_t>::max()) {
    return false;
  }
  v = static_cast<int32_t>(s);
  return true;
}
}  // namespace

bool decode_header_payload(const uint8_t* data, size_t size, TraceHeader& h) {
  ByteCursor c{data, data + size};
  uint64_t pid, wall;
  bool ok = c.get_string(h.hookscope_version) && get_int32(c, h.rank) &&
            get_int32(c, h.world_size) && c.get_string(h.host) && c.get_varint(pid) &&
            c.get_varint(wall) && c.get_varint(h.start_mono_ns) && c.get_string(h.clock) &&
            c.get_string(h.scenario);
  if (!ok) return false;
  h.pid = unzigzag(pid);
  h.start_wall_ns = unzigzag(wall);
  // Version >= 1.1 fields would be parsed here, `if (h.version_minor >= 1)`;
  // bytes left over are fields of a newer minor version this reader skips.
  return true;
}

std::string encode_trailer(uint64_t footer_offset) {
  std::string out;
  put_u64(out, footer_offset);
  out.append(kTrailerMagic, sizeof(kTrailerMagic));
  return out;
}

}  // namespace hookscope::trace
