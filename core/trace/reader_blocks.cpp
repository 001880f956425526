#include "trace/reader_blocks.h"

#include "trace/fuzzing.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <stdexcept>

namespace hookscope::trace {
namespace detail {

namespace {

// Set by the fuzz targets only (Note [Fuzzing skips checksums]); read by
// every decoding thread, set before the first read.
std::atomic<bool> g_skip_checksums{false};

bool skip_checksums() { return g_skip_checksums.load(std::memory_order_relaxed); }

std::string version_string(uint16_t major, uint16_t minor) {
  return "v" + std::to_string(major) + "." + std::to_string(minor);
}

}  // namespace

size_t parse_file_start(const uint8_t* data, size_t size, uint64_t file_size,
                        const std::string& source, TraceHeader& header) {
  if (file_size == 0) throw TraceFormatError(source, 0, "empty file, not a hookscope trace");
  const size_t magic_seen = std::min(size, sizeof(kFileMagic));
  if (std::memcmp(data, kFileMagic, magic_seen) != 0) {
    throw TraceFormatError(source, 0,
                           "not a hookscope trace (bad magic; .hstrace files start with "
                           "\"\\x89HSTRACE\")");
  }
  if (size < kPrefixBytes) {
    throw TraceFormatError(source, size, "file too short to hold a trace header (cut short)");
  }
  const auto major = load_le<uint16_t>(data + 8);
  const auto minor = load_le<uint16_t>(data + 10);
  if (major > kFormatMajor) {
    throw TraceFormatError(source, 8,
                           "made by a newer hookscope (" + version_string(major, minor) +
                               "), this one reads up to v" + std::to_string(kFormatMajor) +
                               ".x; open it with a newer hookscope");
  }
  if (major < kFormatMajor) {
    throw TraceFormatError(source, 8,
                           "made by an older hookscope (" + version_string(major, minor) +
                               "), a legacy format this one no longer reads (it reads v" +
                               std::to_string(kFormatMajor) +
                               ".x); open it with that hookscope or record it again");
  }
  header.version_major = major;
  header.version_minor = minor;

  BlockView block;
  std::string bad = check_block(data, size, kPrefixBytes, block);
  if (bad.empty() && block.type != static_cast<uint32_t>(BlockType::kHeader)) {
    bad = "the header block is missing";
  }
  if (bad.empty()) {
    // The header's CRC also covers the prefix (Note [Trace file format]).
    const uint8_t* head = data + kPrefixBytes;
    uint32_t crc = crc32(data, kPrefixBytes);
    crc = crc32(head, 8, crc);
    crc = crc32(block.payload, block.length, crc);
    if (crc != load_le<uint32_t>(head + 8) && !skip_checksums()) bad = "bad checksum in header";
  }
  if (!bad.empty()) {
    throw TraceFormatError(source, kPrefixBytes, bad);
  }
  if (!decode_header_payload(block.payload, block.length, header)) {
    throw TraceFormatError(source, kPrefixBytes + kBlockHeaderBytes, "malformed header");
  }
  return kPrefixBytes + kBlockHeaderBytes + block.length;
}

std::string check_block(const uint8_t* data, size_t size, size_t offset, BlockView& block) {
  if (size - offset < kBlockHeaderBytes) return "incomplete block (cut short)";
  const uint8_t* head = data + offset;
  block.type = load_le<uint32_t>(head);
  block.length = load_le<uint32_t>(head + 4);
  const std::string name(to_string(static_cast<BlockType>(block.type)));
  if (block.length > kMaxBlockBytes) return "impossible length of " + name;
  if (block.length > size - offset - kBlockHeaderBytes)
    return "incomplete " + name + " (cut short)";
  block.payload = head + kBlockHeaderBytes;
  uint32_t crc = crc32(head, 8);
  crc = crc32(block.payload, block.length, crc);
  if (block.type == static_cast<uint32_t>(BlockType::kHeader)) return "";  // checked by the caller
  if (crc != load_le<uint32_t>(head + 8) && !skip_checksums()) return "bad checksum in " + name;
  return "";
}

const char* parse_footer(const uint8_t* payload, size_t length, bool lenient, TraceIndex& index) {
  ByteCursor c{payload, payload + length};
  uint64_t n;
  if (!c.get_varint(index.total_events) || !c.get_varint(index.dropped_events) ||
      !c.get_varint(index.string_count) || !c.get_varint(n)) {
    return "malformed footer";
  }
  if (n > c.left() / 5) return "impossible chunk count in footer";  // >= 5 bytes per entry
  index.chunks.clear();
  index.chunks.reserve(n);
  uint64_t offset = 0, total = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t delta, thread, count, t_min, t_span;
    if (!c.get_varint(delta) || !c.get_varint(thread) || !c.get_varint(count) ||
        !c.get_varint(t_min) || !c.get_varint(t_span)) {
      return "malformed footer";
    }
    if (thread > UINT32_MAX || count == 0 || count > kMaxChunkEvents || delta == 0 ||
        offset + delta < offset) {
      return "malformed footer";
    }
    offset += delta;
    total += count;
    index.chunks.push_back({offset, static_cast<uint32_t>(thread), static_cast<uint32_t>(count),
                            t_min, t_min + t_span});
  }
  if (total != index.total_events) return "footer totals disagree with its index";
  if (!lenient && c.left() != 0) return "malformed footer";
  return nullptr;
}

bool check_trailer(const uint8_t* data, size_t size, size_t offset, uint64_t footer_offset) {
  if (size - offset != kTrailerBytes) return false;
  return load_le<uint64_t>(data + offset) == footer_offset &&
         std::memcmp(data + offset + 8, kTrailerMagic, sizeof(kTrailerMagic)) == 0;
}

}  // namespace detail

void skip_checksums_for_fuzzing() { detail::g_skip_checksums.store(true, std::memory_order_relaxed); }

// ---- read_trace_index ------------------------------------------------------------

namespace {

// The footer of data[0..size) whose last `tail_size` bytes (at file offset
// size - tail_size) are in `tail`. nullopt when absent or damaged.
std::optional<TraceIndex> footer_from_tail(const uint8_t* tail, size_t tail_size, uint64_t size,
                                           TraceIndex index) {
  if (tail_size < kTrailerBytes + kBlockHeaderBytes) return std::nullopt;
  const uint64_t tail_offset = size - tail_size;
  const uint64_t footer_offset = load_le<uint64_t>(tail + tail_size - kTrailerBytes);
  if (footer_offset < tail_offset || footer_offset > size - kTrailerBytes) return std::nullopt;
  const size_t at = static_cast<size_t>(footer_offset - tail_offset);
  detail::BlockView block;
  if (!detail::check_block(tail, tail_size - kTrailerBytes, at, block).empty() ||
      block.type != static_cast<uint32_t>(BlockType::kFooter) ||
      at + kBlockHeaderBytes + block.length != tail_size - kTrailerBytes ||
      !detail::check_trailer(tail, tail_size, tail_size - kTrailerBytes, footer_offset)) {
    return std::nullopt;
  }
  const bool lenient = index.header.version_minor > kFormatMinor;
  if (detail::parse_footer(block.payload, block.length, lenient, index) != nullptr) {
    return std::nullopt;
  }
  for (const TraceIndexEntry& e : index.chunks) {
    if (e.offset >= footer_offset) return std::nullopt;
  }
  return index;
}

constexpr size_t kMaxTail = kMaxBlockBytes + kBlockHeaderBytes + kTrailerBytes;

}  // namespace

std::optional<TraceIndex> read_trace_index_buffer(const void* data, size_t size,
                                                  const std::string& source) {
  const auto* bytes = static_cast<const uint8_t*>(data);
  TraceIndex index;
  const size_t start = detail::parse_file_start(bytes, size, size, source, index.header);
  const size_t tail = std::min(size - start, kMaxTail);
  return footer_from_tail(bytes + size - tail, tail, size, std::move(index));
}

std::optional<TraceIndex> read_trace_index(const std::string& path) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused below).
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    throw std::runtime_error("cannot open trace file '" + path + "': " + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    throw std::runtime_error("cannot stat trace file '" + path + "': " + std::strerror(errno));
  }
  if (!S_ISREG(st.st_mode)) {
    throw std::runtime_error("cannot read trace file '" + path +
                             "': not a regular file (a FIFO, device or directory); give a trace file");
  }
  const auto size = static_cast<uint64_t>(st.st_size);
  auto read_range = [&](uint64_t offset, size_t n) {
    std::unique_ptr<uint8_t[]> buf(new uint8_t[n]);
    size_t got = 0;
    while (got < n) {
      ssize_t r = ::pread(fd, buf.get() + got, n - got, static_cast<off_t>(offset + got));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        throw std::runtime_error("cannot read trace file '" + path + "': " +
                                 (r == 0 ? std::string("it shrank while being read")
                                         : std::string(std::strerror(errno))));
      }
      got += static_cast<size_t>(r);
    }
    return buf;
  };
  // The header block's length is in its block header: read that much first.
  const size_t first =
      static_cast<size_t>(std::min<uint64_t>(size, kPrefixBytes + kBlockHeaderBytes));
  auto head = read_range(0, first);
  size_t head_size = first;
  if (first == kPrefixBytes + kBlockHeaderBytes) {
    const uint32_t len = load_le<uint32_t>(head.get() + kPrefixBytes + 4);
    if (len <= kMaxBlockBytes) {
      head_size = static_cast<size_t>(std::min<uint64_t>(size, first + len));
      head = read_range(0, head_size);
    }
  }
  TraceIndex index;
  const size_t start = detail::parse_file_start(head.get(), head_size, size, path, index.header);
  if (size - start < kTrailerBytes + kBlockHeaderBytes) return std::nullopt;
  auto trailer = read_range(size - kTrailerBytes, kTrailerBytes);
  const uint64_t footer_offset = load_le<uint64_t>(trailer.get());
  if (footer_offset < start || size - footer_offset > kMaxTail) return std::nullopt;
  const size_t tail = static_cast<size_t>(size - footer_offset);
  auto tail_bytes = read_range(footer_offset, tail);
  return footer_from_tail(tail_bytes.get(), tail, size, std::move(index));
}

}  // namespace hookscope::trace
