#include "trace/writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <stdexcept>

#include "trace/emit.h"
#include "trace/file_format.h"
#include "trace/strings.h"

#ifndef HOOKSCOPE_VERSION
#define HOOKSCOPE_VERSION "unknown"
#endif

namespace hookscope::trace {

namespace {

constexpr uint32_t kStringsPerBlock = 4096;
// Note [Live chunks reach the file]: how often the writer copies the events
// the threads have not handed over yet; a killed process loses at most
// about this much of each thread's events (plus the time a write takes).
constexpr auto kLiveInterval = std::chrono::milliseconds(50);

void fill_header_defaults(TraceHeader& h) {
  h.version_major = kFormatMajor;
  h.version_minor = kFormatMinor;
  if (h.hookscope_version.empty()) h.hookscope_version = HOOKSCOPE_VERSION;
  if (h.host.empty()) {
    char name[256] = {};
    if (gethostname(name, sizeof(name) - 1) == 0) h.host = name;
  }
  if (h.pid == 0) h.pid = getpid();
  if (h.start_wall_ns == 0) {
    h.start_wall_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                          std::chrono::system_clock::now().time_since_epoch())
                          .count();
  }
  if (h.start_mono_ns == 0) h.start_mono_ns = now_ns();
  if (h.clock.empty()) h.clock = "steady_clock";
}

}  // namespace

TraceFileWriter::TraceFileWriter(const std::string& path, TraceHeader header, WriterOptions options)
    : path_(path),
      header_(std::move(header)),
      options_(std::move(options)),
      codec_(options_.zstd_level) {
  if (options_.queue_chunks == 0) options_.queue_chunks = 1;
  fill_header_defaults(header_);
  if (path.empty()) throw std::runtime_error("the trace file name is empty; give a path such as run.hstrace");
  // Note [Safe trace writes]: an existing regular file is replaced through a
  // temporary name; a new file, a FIFO, /dev/stdout, ... is written in place.
  struct stat st;
  const bool exists = ::stat(path.c_str(), &st) == 0;
  const bool in_place = exists && !S_ISREG(st.st_mode);
  write_path_ = in_place ? path : temporary_name(path, ::getpid());
  renamed_ = in_place;
  published_ = in_place;
  fd_ = ::open(write_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) {
    throw std::runtime_error("cannot create trace file '" + path + "' (written first as '" +
                             write_path_ + "'): " + std::strerror(errno) +
                             "; check that the directory exists and is writable");
  }
  buffer_ = encode_file_start(header_);
  flush_buffer();
  if (!failed_ && !exists && !(options_.publish_when && options_.new_file_waits)) {
    // A new file takes its name once its header is whole: a process killed
    // between open() and the header's write() leaves no unreadable trace.
    if (::rename(write_path_.c_str(), path_.c_str()) != 0) {
      fail("cannot rename '" + write_path_ + "' to '" + path_ + "': " + std::strerror(errno));
    } else {
      renamed_ = true;
      published_ = true;
      write_path_ = path_;
    }
  }
  if (failed_) {
    std::string err = error_;
    ::close(fd_);
    if (!renamed_ || !exists) ::unlink(write_path_.c_str());  // nothing of ours worth keeping
    throw std::runtime_error(err);
  }
  thread_ = std::thread([this] { run(); });
}

TraceFileWriter::~TraceFileWriter() { close_nothrow(); }

void TraceFileWriter::on_chunk(std::unique_ptr<Chunk> chunk) {
  if (!chunk || chunk->count == 0) return;
  std::unique_lock<std::mutex> lock(mutex_);
  if (closing_) {
    // Called from noexcept emission paths: never throw here; close() reports it.
    lost_after_close_ += chunk->count;
    return;
  }
  if (queue_.size() >= options_.queue_chunks) {
    if (options_.ring_buffer) {
      dropped_ += queue_.front()->count;
      queue_.pop_front();
    } else {
      const auto t0 = std::chrono::steady_clock::now();
      space_cv_.wait(lock, [&] { return queue_.size() < options_.queue_chunks || closing_; });
      stats_.blocked_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0)
              .count());
      if (closing_) {
        lost_after_close_ += chunk->count;
        return;
      }
    }
  }
  queue_.push_back(std::move(chunk));
  work_cv_.notify_one();
}

void TraceFileWriter::on_finish() { close_nothrow(); }

// Note [The writer never preempts]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// The writer wakes every kLiveInterval (Note [Live chunks reach the file])
// and when a chunk is queued. A thread that sleeps that much is, to Linux's
// fair scheduler, owed CPU: on a busy machine each wakeup preempted the
// thread that emits (a training step, bench/torch_bridge_overhead.py:
// involuntary switches per step up by one or two when recording), whose
// caches the writer's encoding then cooled. SCHED_BATCH keeps the writer's
// fair share (it is never starved: a killed process still loses at most
// about kLiveInterval plus a time slice) but takes away its wakeup
// preemption: it runs when a core is free or the running thread's slice
// ends. Where the policy cannot be set the writer runs as before.
namespace {
void run_as_batch() {
#ifdef SCHED_BATCH
  sched_param param{};
  param.sched_priority = 0;
  pthread_setschedparam(pthread_self(), SCHED_BATCH, &param);
#endif
}
}  // namespace

void TraceFileWriter::run() {
  run_as_batch();
  std::vector<std::unique_ptr<Chunk>> batch;
  auto next_live = std::chrono::steady_clock::now() + kLiveInterval;
  for (;;) {
    uint64_t dropped;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      work_cv_.wait_until(lock, next_live, [&] { return !queue_.empty() || closing_; });
      if (queue_.empty() && closing_) return;  // everything is written
    }
    // Note [Live chunks reach the file]: the registry lock first (so no
    // chunk changes hands until the live events are copied), then the
    // queue: what was queued precedes the copies.
    std::unique_lock<std::mutex> registry;
    const auto now = std::chrono::steady_clock::now();
    if (now >= next_live) {
      registry = try_lock_registry();
      // Busy (a thread hands a chunk over, or waits for room): soon again.
      next_live = now + (registry.owns_lock() ? kLiveInterval : kLiveInterval / 10);
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      // Take everything waiting: one write() per batch.
      while (!queue_.empty()) {
        batch.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      dropped = dropped_;
      space_cv_.notify_all();
    }
    if (registry.owns_lock()) {
      take_live_events(registry, *this, batch);
      registry.unlock();
    }
    if (batch.empty()) continue;
    for (const auto& chunk : batch) {
      append_strings();
      append_dropped(dropped);
      append_chunk(*chunk);
    }
    // Back for the next ones before the (slow) write (Note [Chunks are reused]).
    for (auto& chunk : batch) recycle_chunk(std::move(chunk));
    batch.clear();
    flush_buffer();
    if (!renamed_ && !failed_ && events_written_ > 0 && (wanted_ || !options_.publish_when)) {
      publish();
    }
    WriterStats s;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stats_.events_written = events_written_;
      stats_.chunks_written = index_.size();
      stats_.bytes_written = offset_;
      s = stats_;
    }
    if (options_.on_chunk_written) {
      try {
        options_.on_chunk_written(s);
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mutex_);  // keep writing; close() reports it
        if (error_.empty())
          error_ = std::string("WriterOptions::on_chunk_written threw: ") + e.what();
      }
    }
  }
}

void TraceFileWriter::append_strings() {
  // Every id a chunk uses was interned before its event was emitted, so
  // before the chunk was queued: shipping all strings up to now covers it.
  for (;;) {
    std::vector<std::string> fresh = strings_since(strings_shipped_, kStringsPerBlock);
    if (fresh.empty()) return;
    payload_.clear();
    put_varint(payload_, strings_shipped_);
    put_varint(payload_, fresh.size());
    for (const std::string& s : fresh) put_string(payload_, s);
    append_block(buffer_, static_cast<uint32_t>(BlockType::kStrings), payload_);
    strings_shipped_ += static_cast<uint32_t>(fresh.size());
  }
}

void TraceFileWriter::append_dropped(uint64_t dropped) {
  if (dropped == dropped_written_) return;
  payload_.clear();
  put_varint(payload_, dropped);
  append_block(buffer_, static_cast<uint32_t>(BlockType::kDropped), payload_);
  dropped_written_ = dropped;
}

void TraceFileWriter::append_chunk(const Chunk& chunk) {
  // A chunk is one thread's events; should a sink's caller mix threads, each
  // run of one thread becomes its own file chunk.
  uint32_t begin = 0;
  while (begin < chunk.count) {
    const uint32_t thread = chunk.events[begin].thread;
    uint32_t end = begin + 1;
    uint64_t t_min = chunk.events[begin].t_ns, t_max = t_min;
    while (end < chunk.count && chunk.events[end].thread == thread) {
      t_min = std::min(t_min, chunk.events[end].t_ns);
      t_max = std::max(t_max, chunk.events[end].t_ns);
      ++end;
    }
    payload_.clear();
    codec_.encode(payload_, thread, chunk.events + begin, end - begin);
    if (options_.publish_when && !wanted_) {
      for (uint32_t i = begin; i < end && !wanted_; ++i) wanted_ = options_.publish_when(chunk.events[i]);
    }
    index_.push_back({offset_ + buffer_.size(), thread, end - begin, t_min, t_max});
    append_block(buffer_, static_cast<uint32_t>(BlockType::kEvents), payload_);
    events_written_ += end - begin;
    begin = end;
  }
}

void TraceFileWriter::flush_buffer() {
  if (failed_) {
    buffer_.clear();
    return;
  }
  const char* p = buffer_.data();
  size_t left = buffer_.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : ENOSPC;
      fail("writing trace file '" + path_ + "' failed: " + std::strerror(err) +
           (renamed_ ? "; the file holds the events up to byte " + std::to_string(offset_)
                     : std::string("; nothing was recorded and an existing file of that name "
                                   "is unchanged")));
      buffer_.clear();
      return;
    }
    p += n;
    left -= static_cast<size_t>(n);
    offset_ += static_cast<uint64_t>(n);
  }
  buffer_.clear();
}

std::string TraceFileWriter::temporary_name(const std::string& path, long pid) {
  return temporary_prefix(path) + std::to_string(pid);
}

std::string TraceFileWriter::temporary_prefix(const std::string& path) { return path + ".tmp-"; }

void TraceFileWriter::publish() {
  if (::fdatasync(fd_) != 0 && errno != EINVAL) {
    fail("writing trace file '" + path_ + "' failed: " + std::strerror(errno));
    return;
  }
  if (::rename(write_path_.c_str(), path_.c_str()) != 0) {
    fail("cannot rename '" + write_path_ + "' to '" + path_ + "': " + std::strerror(errno));
    return;
  }
  renamed_ = true;
  published_ = true;
}

bool TraceFileWriter::published() const { return published_; }

void TraceFileWriter::fail(const std::string& what) {
  failed_ = true;
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.empty()) error_ = what;
}

void TraceFileWriter::close_nothrow() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closing_) return;
    closing_ = true;
  }
  work_cv_.notify_all();
  space_cv_.notify_all();
  if (thread_.joinable()) thread_.join();

  append_strings();
  uint64_t dropped;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    dropped = dropped_;
  }
  append_dropped(dropped);

  // Footer: totals, then one index entry per event chunk (docs/trace-format.md).
  payload_.clear();
  put_varint(payload_, events_written_);
  put_varint(payload_, dropped);
  put_varint(payload_, strings_shipped_);
  put_varint(payload_, index_.size());
  uint64_t prev_offset = 0;
  for (const IndexEntry& e : index_) {
    put_varint(payload_, e.offset - prev_offset);
    put_varint(payload_, e.thread);
    put_varint(payload_, e.count);
    put_varint(payload_, e.t_min);
    put_varint(payload_, e.t_max - e.t_min);
    prev_offset = e.offset;
  }
  const uint64_t footer_offset = offset_ + buffer_.size();
  append_block(buffer_, static_cast<uint32_t>(BlockType::kFooter), payload_);
  buffer_ += encode_trailer(footer_offset);
  flush_buffer();
  if (!renamed_ && !failed_ && (wanted_ || !options_.publish_when)) publish();
  if (::close(fd_) != 0 && !failed_) {
    fail("closing trace file '" + path_ + "' failed: " + std::strerror(errno));
  }
  fd_ = -1;
  // Nothing reached the file durably: the temporary goes, an old trace stays.
  if (!renamed_) ::unlink(write_path_.c_str());

  std::lock_guard<std::mutex> lock(mutex_);
  stats_.events_written = events_written_;
  stats_.chunks_written = index_.size();
  stats_.bytes_written = offset_;
  stats_.dropped_events = dropped;
  closed_ = true;
}

void TraceFileWriter::close() {
  close_nothrow();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.empty()) throw std::runtime_error(error_);
  if (lost_after_close_ > 0) {
    throw std::runtime_error(std::to_string(lost_after_close_) + " events reached trace file '" +
                             path_ +
                             "' after it was closed and are not in it; finish() the recorder "
                             "before closing its writer");
  }
}

WriterStats TraceFileWriter::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  WriterStats s = stats_;
  s.dropped_events = dropped_;
  return s;
}

std::string TraceFileWriter::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

// ---- FileRecorder -------------------------------------------------------------

FileRecorder::FileRecorder(const std::string& path, TraceHeader header, WriterOptions options)
    : writer_(path, std::move(header), std::move(options)), recorder_(writer_) {}

FileRecorder::~FileRecorder() { recorder_.finish(); }

void FileRecorder::pause() { set_recording(false); }
void FileRecorder::resume() { set_recording(true); }

void FileRecorder::finish() {
  recorder_.finish();
  writer_.close();
}

}  // namespace hookscope::trace
