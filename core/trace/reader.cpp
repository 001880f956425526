#include "trace/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <memory>
#include <stdexcept>
#include <thread>
#include <unordered_map>

#include "trace/file_columns.h"
#include "trace/reader_blocks.h"
#include "trace/writer.h"

namespace hookscope::trace {

namespace {

constexpr uint64_t kProgressEvery = 1u << 20;  // bytes
// With ReadOptions::threads = 0, traces of this many events or more are
// decoded by several threads.
constexpr uint64_t kParallelEvents = 1u << 20;

// Reads one trace in two passes. Pass 1 walks the blocks: checks every
// length and checksum, loads the string table, parses chunk headers (so the
// event count is known and checked before anything is allocated) and the
// footer. Pass 2 decodes the chunks into place. Damage found in either pass
// ends the valid prefix at that block (Note [Trace file format]).
class TraceReader {
 public:
  TraceReader(const uint8_t* data, size_t size, const std::string& source,
              const ReadOptions& options)
      : data_(data), size_(size), source_(source), options_(options) {}

  TraceData read() {
    out_.source = source_;
    out_.strings.assign(1, std::string());
    const size_t start = detail::parse_file_start(data_, size_, size_, source_, out_.header);
    lenient_ = out_.header.version_minor > kFormatMinor;
    max_events_ = options_.max_events
                      ? options_.max_events
                      : std::max<uint64_t>(kMaxChunkEvents, size_ * kMaxEventsPerFileByte);
    scan_blocks(start);
    decode_chunks();
    if (stopped_) {
      out_.truncation = "truncated at byte " + std::to_string(stop_offset_) + ": " + stop_reason_ +
                        (unfinished_ ? ended_at() : "") + "; " + std::to_string(out_.num_events()) +
                        " events recovered";
    }
    if (options_.progress) options_.progress(size_, size_);
    return std::move(out_);
  }

 private:
  using ChunkRef = detail::ChunkRef;

  // Note [Live chunks reach the file] (emit.cpp): a killed process's trace
  // holds its events up to about its death; say when that was, by its
  // last event: seconds into the recording and the wall clock.
  std::string ended_at() const {
    const size_t n = out_.num_events();
    if (n == 0) return ": the process was killed or crashed before its first event reached the file";
    const uint64_t last = out_.events.empty() ? out_.packed.t_ns(n - 1) : out_.events.back().t_ns;
    const TraceHeader& h = out_.header;
    const double since = last >= h.start_mono_ns ? static_cast<double>(last - h.start_mono_ns) * 1e-9 : 0.0;
    char t[32];
    std::snprintf(t, sizeof t, "%.3f", since);
    std::string when = std::string(": the process was killed or crashed at about t=") + t +
                       " s into the recording";
    if (h.start_wall_ns > 0 && last >= h.start_mono_ns) {
      const uint64_t wall_ns = h.start_wall_ns + (last - h.start_mono_ns);
      const time_t secs = static_cast<time_t>(wall_ns / 1'000'000'000);
      struct tm tm {};
      char clock[32];
      if (::gmtime_r(&secs, &tm) && std::strftime(clock, sizeof clock, "%Y-%m-%d %H:%M:%S", &tm)) {
        char ms[8];
        std::snprintf(ms, sizeof ms, ".%03u", static_cast<unsigned>(wall_ns / 1'000'000 % 1000));
        when += std::string(" (") + clock + ms + " UTC)";
      }
    }
    return when + ", its last event";
  }

  void stop(uint64_t offset, std::string reason) {
    stopped_ = true;
    stop_offset_ = offset;
    stop_reason_ = std::move(reason);
  }

  void scan_blocks(size_t offset) {
    uint64_t total = 0;
    for (;;) {
      if (offset == size_) {
        unfinished_ = true;
        stop(offset, "the recording ended without its footer");
        return;
      }
      detail::BlockView block;
      std::string bad = detail::check_block(data_, size_, offset, block);
      if (bad.ends_with("(cut short)")) {  // the write of its last block was cut
        unfinished_ = true;
        bad.resize(bad.size() - std::string_view(" (cut short)").size());
        return stop(offset, "the recording ended without its footer, in an " + bad);
      }
      if (!bad.empty()) return stop(offset, std::move(bad));
      const size_t end = offset + kBlockHeaderBytes + block.length;
      switch (static_cast<BlockType>(block.type)) {
        case BlockType::kStrings:
          if (const char* why = read_strings(block)) return stop(offset, why);
          break;
        case BlockType::kDropped: {
          ByteCursor c{block.payload, block.payload + block.length};
          uint64_t dropped;
          if (!c.get_varint(dropped) || (!lenient_ && c.left() != 0)) {
            return stop(offset, "malformed dropped-count block");
          }
          if (dropped < out_.dropped_events) return stop(offset, "dropped count went down");
          out_.dropped_events = dropped;
          break;
        }
        case BlockType::kEvents: {
          ChunkRef ref{offset, end, {}, out_.strings.size(), out_.dropped_events};
          if (const char* why = ChunkCodec::parse_header(block.payload, block.length, ref.header)) {
            return stop(offset, std::string(why) + " in event chunk");
          }
          total += ref.header.count;
          if (total > max_events_) {
            return stop(offset, options_.max_events
                                    ? "more events than ReadOptions::max_events allows"
                                    : "more events than a file of this size can hold");
          }
          chunks_.push_back(ref);
          break;
        }
        case BlockType::kFooter: return read_footer(block, offset, end);
        case BlockType::kHeader: return stop(offset, "a second header block");
        default:
          if (!(block.type & kBlockSkippable)) {
            return stop(offset, "unknown block type " + std::to_string(block.type));
          }
          break;  // added by a newer minor version: skip
      }
      offset = end;
    }
  }

  const char* read_strings(const detail::BlockView& block) {
    ByteCursor c{block.payload, block.payload + block.length};
    uint64_t first, count;
    if (!c.get_varint(first) || !c.get_varint(count)) return "malformed string table block";
    if (first != out_.strings.size()) return "string ids out of sequence in string table block";
    if (count > c.left() || count > UINT32_MAX - first) {
      return "impossible string count in string table block";
    }
    out_.strings.reserve(out_.strings.size() + count);
    for (uint64_t i = 0; i < count; ++i) {
      std::string s;
      if (!c.get_string(s)) return "malformed string table block";
      out_.strings.push_back(std::move(s));
    }
    if (!lenient_ && c.left() != 0) return "malformed string table block";
    return nullptr;
  }

  // The footer must agree with the chunks read and be followed by the trailer.
  void read_footer(const detail::BlockView& block, size_t offset, size_t end) {
    TraceIndex index;
    if (const char* why = detail::parse_footer(block.payload, block.length, lenient_, index)) {
      return stop(offset, why);
    }
    bool agrees = index.chunks.size() == chunks_.size() &&
                  index.dropped_events == out_.dropped_events &&
                  index.string_count == out_.strings.size();
    for (size_t i = 0; agrees && i < chunks_.size(); ++i) {
      agrees = index.chunks[i].offset == chunks_[i].offset &&
               index.chunks[i].thread == chunks_[i].header.thread &&
               index.chunks[i].count == chunks_[i].header.count;
    }
    if (!agrees) return stop(offset, "footer disagrees with the blocks before it");
    if (!detail::check_trailer(data_, size_, end, offset)) {
      stop(end, size_ - end < kTrailerBytes ? "incomplete trailer (cut short)"
                                            : "bad trailer after the footer");
    }
  }

  // Pass 2. Chunks of several writer threads are merged while decoded (Note
  // [Decoding straight into merged order]), by ReadOptions::threads threads.
  // Otherwise, and when that gives up, chunks decode independently, each
  // into its place, by as many threads; then, in file order, the first bad
  // chunk ends the valid prefix, and the threads' events are merged.
  void decode_chunks() {
    if (options_.packed) {
      // Merged straight into the packed store; else the way below, then packed.
      if (!chunks_.empty() && try_decode_packed()) return;
      decode_events();
      out_.packed = PackedEvents::pack(out_.events);
      std::vector<Event>().swap(out_.events);
      return;
    }
    decode_events();
  }

  // Progress while decode_merged runs: the bytes of chunks decoded so far,
  // past the first chunk's offset, every kProgressEvery bytes.
  std::function<void(uint64_t)> merge_progress() {
    return [this, next = uint64_t{kProgressEvery}, first = chunks_[0].offset](uint64_t decoded) mutable {
      if (options_.progress && first + decoded >= next) {
        options_.progress(first + decoded, size_);
        next = first + decoded + kProgressEvery;
      }
    };
  }

  bool try_decode_packed() {
    uint64_t total = 0;
    for (const ChunkRef& c : chunks_) total += c.header.count;
    return detail::decode_merged(chunks_, decode_threads(total), out_.packed, merge_progress());
  }

  void decode_events() {
    const size_t n = chunks_.size();
    std::vector<size_t> pos(n);
    uint64_t total = 0;
    for (size_t i = 0; i < n; ++i) {
      pos[i] = total;
      total += chunks_[i].header.count;
    }
    bool several_writers = false;
    for (const ChunkRef& c : chunks_) several_writers |= c.header.thread != chunks_[0].header.thread;
    const unsigned threads = decode_threads(total);
    detail::reserve_events(out_.events, total);  // bounded by max_events_, checked in pass 1
    if (several_writers) {
      if (detail::decode_merged(chunks_, threads, out_.events, merge_progress())) return;
    }
    if (threads > 1 && total >= kParallelEvents) {  // only big arrays are worth the threads
      detail::run_parallel(threads, [&](unsigned t) {
        detail::prefault_events(out_.events, total / threads * t,
                                t + 1 == threads ? total : total / threads * (t + 1));
      });
    }
    out_.events.resize(total);

    std::vector<const char*> error(n, nullptr);
    std::vector<uint8_t> sorted(n, 1);
    std::atomic<size_t> next{0};
    std::atomic<bool> failed{false};
    detail::run_parallel(
        threads,
        [&](unsigned t) {
          ChunkCodec codec;
          uint64_t next_progress = kProgressEvery;
          // Chunks are claimed in order: once one fails, every earlier one is
          // already claimed, and later ones are not needed.
          while (!failed.load(std::memory_order_relaxed)) {
            const size_t i = next.fetch_add(1);
            if (i >= n) break;
            bool s = true;
            error[i] = codec.decode(chunks_[i].header, chunks_[i].strings_before,
                                    out_.events.data() + pos[i], s);
            sorted[i] = s;
            if (error[i]) failed.store(true);
            if (t == 0 && options_.progress && chunks_[i].end >= next_progress) {
              options_.progress(chunks_[i].end, size_);
              next_progress = chunks_[i].end + kProgressEvery;
            }
          }
        },
        &failed);

    std::unordered_map<uint32_t, uint64_t> last_t;  // per thread
    bool all_sorted = true;
    for (size_t i = 0; i < n; ++i) {
      const ChunkRef& c = chunks_[i];
      if (error[i]) {
        // Keep only what precedes the bad chunk (strings and drop counts too).
        stop(c.offset, std::string(error[i]) + " in event chunk");
        out_.events.resize(pos[i]);
        out_.strings.resize(c.strings_before);
        out_.dropped_events = c.dropped_before;
        break;
      }
      const Event* ev = out_.events.data() + pos[i];
      auto [it, fresh] = last_t.try_emplace(c.header.thread, 0);
      const bool ok = sorted[i] && (fresh || ev[0].t_ns >= it->second);
      if (!ok && !out_.clock_went_back) {  // find the first event whose clock went back
        uint64_t prev = fresh ? 0 : it->second;
        for (uint32_t k = 0; k < c.header.count; ++k) {
          if (ev[k].t_ns < prev) {
            out_.clock_went_back = true;
            out_.clock_back_thread = c.header.thread;
            out_.clock_back_t_ns = ev[k].t_ns;
            break;
          }
          prev = ev[k].t_ns;
        }
      }
      all_sorted &= ok;
      it->second = ev[c.header.count - 1].t_ns;
    }
    detail::merge_thread_runs(out_.events, all_sorted, last_t.size());
  }

  unsigned decode_threads(uint64_t events) const {
    if (options_.threads) {  // no more than there are chunks
      return static_cast<unsigned>(std::clamp<uint64_t>(options_.threads, 1, chunks_.size()));
    }
    if (events < kParallelEvents) return 1;
    return std::clamp(std::thread::hardware_concurrency(), 1u, 8u);
  }

  const uint8_t* data_;
  size_t size_;
  const std::string& source_;
  const ReadOptions& options_;
  TraceData out_;
  std::vector<ChunkRef> chunks_;
  bool lenient_ = false;
  uint64_t max_events_ = 0;
  bool stopped_ = false;
  bool unfinished_ = false;  // no footer: the process died or is still writing
  uint64_t stop_offset_ = 0;
  std::string stop_reason_;
};

}  // namespace

TraceData read_trace_buffer(const void* data, size_t size, const std::string& source,
                            const ReadOptions& options) {
  static const uint8_t kEmpty = 0;
  const auto* bytes = data ? static_cast<const uint8_t*>(data) : &kEmpty;
  return TraceReader(bytes, size, source, options).read();
}

namespace {

// Note [Safe trace writes]: a recording killed before it replaced an older
// trace of its path left its events under temporary_name(path, pid). Says
// so when one is newer than the trace itself (a rank killed at start-up:
// its trace would otherwise read as the previous run's, whole).
std::string newer_temporary(const std::string& path, const struct stat& st) {
  namespace fs = std::filesystem;
  const std::string prefix = fs::path(TraceFileWriter::temporary_prefix(path)).filename().string();
  std::error_code ec;
  fs::path dir = fs::path(path).parent_path();
  if (dir.empty()) dir = ".";
  std::string found;
  // Not older than `path`: file times tick in milliseconds (the kernel's
  // coarse clock), so a temporary made right after may carry the same time.
  struct timespec newest = st.st_mtim;
  if (newest.tv_nsec > 0) {
    --newest.tv_nsec;
  } else {
    --newest.tv_sec;
    newest.tv_nsec = 999'999'999;
  }
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0 ||
        name.find_first_not_of("0123456789", prefix.size()) != std::string::npos) {
      continue;
    }
    struct stat t;
    if (::stat(it->path().c_str(), &t) != 0 || !S_ISREG(t.st_mode)) continue;
    if (t.st_mtim.tv_sec > newest.tv_sec ||
        (t.st_mtim.tv_sec == newest.tv_sec && t.st_mtim.tv_nsec > newest.tv_nsec)) {
      newest = t.st_mtim;
      found = fs::path(path).parent_path().empty() ? name : it->path().string();
    }
  }
  if (found.empty()) return "";
  return "a newer recording of this trace was killed or crashed before it replaced it (this file is "
         "an earlier run's); its events are in '" + found + "': open that file";
}

}  // namespace

TraceData read_trace(const std::string& path, const ReadOptions& options) {
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
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    throw std::runtime_error("cannot read trace file '" + path +
                             "': not a regular file (a FIFO, device or directory); give a trace file");
  }
  // Read what is there now; a file still being written is read up to here.
  const auto size = static_cast<size_t>(st.st_size);
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size ? size : 1]);
  size_t got = 0;
  while (got < size) {
    ssize_t r = ::read(fd, buf.get() + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      throw std::runtime_error("cannot read trace file '" + path + "': " + std::strerror(errno));
    }
    if (r == 0) break;  // it shrank meanwhile: read what we have
    got += static_cast<size_t>(r);
  }
  return read_trace_buffer(buf.get(), got, path, options);
}

std::string superseded_by_temporary(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return "";
  return newer_temporary(path, st);
}

}  // namespace hookscope::trace
