#pragma once
// Recording straight to a .hstrace file (Note [Trace file format]): a chunk
// sink with a background writer thread and bounded memory.
//
//   trace::TraceHeader header;
//   header.scenario = "recovery --policy none";
//   trace::FileRecorder rec("run.hstrace", header);
//   rec.start();
//   ...                  // run the workload; trace::set_recording pauses/resumes
//   rec.finish();        // throws if the file could not be written

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "trace/file_columns.h"
#include "trace/recorder.h"
#include "trace/trace_data.h"

namespace hookscope::trace {

struct WriterStats {
  uint64_t events_written = 0;  // events in event chunks written to the file
  uint64_t chunks_written = 0;
  uint64_t bytes_written = 0;   // file size so far
  uint64_t dropped_events = 0;  // ring-buffer mode only
  uint64_t blocked_ns = 0;      // time emitting threads waited for room (back-pressure)
};

struct WriterOptions {
  // Chunks waiting for the writer thread (each up to about 200 KB; the
  // writer holds at most as many again while it encodes them). When the
  // queue is full, on_chunk blocks (back-pressure on the emitting threads),
  // so nothing is ever lost...
  size_t queue_chunks = 32;
  // ...unless the user asks for a ring buffer: then the oldest waiting chunk
  // is dropped instead. Drops are counted, written to the file, and read
  // back as TraceData::dropped_events.
  bool ring_buffer = false;
  // zstd level of event chunks. The default (a fast negative level) keeps
  // the writer thread ahead of the emitting threads and files at a few bytes
  // per event; higher levels shrink files a little and slow the writer.
  int zstd_level = -1;
  // Called on the writer thread after each batch of chunks reaches the file
  // (progress display). Must not emit events; an exception it throws is
  // reported by close().
  std::function<void(const WriterStats&)> on_chunk_written = nullptr;
  // Note [Safe trace writes]: when set, an existing trace is replaced only
  // once a written event satisfies it (the torch bridge: a backward or hook
  // event), and a recording without one leaves no file of its own.
  bool (*publish_when)(const Event&) = nullptr;
  // With publish_when: a new file waits for such an event too, instead of
  // taking its name with its header (a child process that records nothing
  // of interest leaves nothing behind).
  bool new_file_waits = false;
};

// Writes the chunks it receives to `path` on a background thread, in the
// order received: the string table shipped incrementally ahead of the
// chunks that use it, then the footer (index) at close().
class TraceFileWriter : public ChunkSink {
 public:
  // Note [Safe trace writes]
  // ~~~~~~~~~~~~~~~~~~~~~~~~
  // When `path` names an existing trace, the new one is written to
  // temporary_name(path) ("PATH.tmp-PID", same directory) and renamed to
  // `path` as soon as its first block of events is on disk (fdatasync), or
  // at close() if none came earlier. So an existing trace is replaced only
  // once the new recording has recorded something: a run that fails to
  // start, or is killed before its first block, leaves the old file as it
  // was (and a killed one its temporary, which `launch` renames for its dead
  // ranks); a run killed later leaves its new trace readable up to its last
  // block. A failed write (disk full, file-size limit) before the rename
  // removes the temporary. A new file is renamed to `path` as soon as its
  // header is written, and written in place from then on (there is nothing
  // to protect, and a process killed at once — a rank of a PyTorch program,
  // say — still leaves a readable trace under its own name, never one cut
  // inside its header). A path that is not a regular file (a FIFO,
  // /dev/stdout) is written in place from the start.
  // WriterOptions::publish_when raises the bar: the rename waits until an
  // event it accepts is on disk (new files too with new_file_waits), so a
  // program that ends before doing anything worth a trace (the torch bridge:
  // no backward, no hook) never replaces the trace of an earlier run.
  //
  // Writes the header. Header fields left empty/zero are filled in: hookscope
  // version, host, pid, start times. Throws std::runtime_error when the file
  // cannot be created.
  TraceFileWriter(const std::string& path, TraceHeader header, WriterOptions options = {});
  ~TraceFileWriter() override;  // close()s; errors are dropped, call close() to see them
  TraceFileWriter(const TraceFileWriter&) = delete;
  TraceFileWriter& operator=(const TraceFileWriter&) = delete;

  // ChunkSink: queue a chunk (blocks while the queue is full, unless ring buffer).
  void on_chunk(std::unique_ptr<Chunk> chunk) override;
  // ChunkSink: the recorder finished; close() without throwing.
  void on_finish() override;

  // Writes everything queued, the footer and the trailer, and closes the
  // file. Throws std::runtime_error when any write failed (disk full, ...)
  // or chunks arrived after close. Idempotent.
  void close();

  WriterStats stats() const;
  const std::string& path() const { return path_; }
  // Where process `pid` writes a trace for `path` until it is renamed.
  static std::string temporary_name(const std::string& path, long pid);
  // What every temporary_name(path, pid) starts with.
  static std::string temporary_prefix(const std::string& path);
  const TraceHeader& header() const { return header_; }
  // Empty unless writing failed.
  std::string error() const;
  // Whether the trace is (or, before close, already is) under its own name.
  bool published() const;

 private:
  struct IndexEntry {
    uint64_t offset;
    uint32_t thread;
    uint32_t count;
    uint64_t t_min, t_max;
  };

  void run();
  void close_nothrow();
  void append_strings();
  void append_dropped(uint64_t dropped);
  void append_chunk(const Chunk& chunk);
  void flush_buffer();
  void fail(const std::string& what);
  void publish();  // fdatasync, rename the temporary to path_

  std::string path_;
  std::string write_path_;  // temporary until renamed_
  bool renamed_ = false;    // writer thread (and the constructor, close() after the join)
  TraceHeader header_;
  WriterOptions options_;
  int fd_ = -1;

  // Guarded by mutex_.
  mutable std::mutex mutex_;
  std::condition_variable work_cv_, space_cv_;
  std::deque<std::unique_ptr<Chunk>> queue_;
  bool closing_ = false;
  bool closed_ = false;
  uint64_t dropped_ = 0;
  uint64_t lost_after_close_ = 0;
  WriterStats stats_;
  std::string error_;

  // Writer thread only (and close() after the join).
  ChunkCodec codec_;
  std::string buffer_, payload_;
  uint64_t offset_ = 0;           // bytes already in the file
  uint32_t strings_shipped_ = 1;  // id 0 (the empty string) is implicit
  uint64_t dropped_written_ = 0;
  uint64_t events_written_ = 0;
  std::vector<IndexEntry> index_;
  bool failed_ = false;
  bool wanted_ = false;  // an event satisfying options_.publish_when was written
  std::atomic<bool> published_{false};
  std::thread thread_;
};

// A Recorder attached to a TraceFileWriter: record a run straight to a file.
class FileRecorder {
 public:
  FileRecorder(const std::string& path, TraceHeader header = {}, WriterOptions options = {});
  ~FileRecorder();

  void start() { recorder_.start(); }
  // Pause / resume recording (trace::set_recording).
  void pause();
  void resume();
  // Flushes every thread's events, writes the footer and closes the file.
  // Throws std::runtime_error when the file could not be written.
  void finish();

  TraceFileWriter& writer() { return writer_; }

 private:
  TraceFileWriter writer_;
  Recorder recorder_;
};

}  // namespace hookscope::trace
