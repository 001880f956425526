#pragma once
// Per-thread event buffers and the sinks that receive them.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "trace/event.h"
#include "trace/trace_data.h"

namespace hookscope::trace {

constexpr size_t kChunkEvents = 4096;

// A run of events emitted by one thread, in emission order.
struct Chunk {
  uint32_t thread = 0;
  uint32_t count = 0;
  // Note [Live chunks reach the file] (emit.cpp): while its thread fills
  // it, `published` is the count it has released (std::atomic_ref: a Chunk
  // stays copyable) and `taken` how many of those a sink already has as a
  // copy. A chunk handed to a sink holds none already taken.
  uint32_t published = 0;
  uint32_t taken = 0;
  Event events[kChunkEvents];
};

// Gives a chunk a sink is done with back for the next one (Note [Chunks are
// reused], emit.cpp); a sink may also just free it.
void recycle_chunk(std::unique_ptr<Chunk> chunk) noexcept;

// Receives full (and, at finish, partial) chunks. on_chunk may block to apply
// back-pressure. It is called with the recorder's registry lock held, so it
// must not emit events or attach/detach recorders, and while it blocks other
// threads that hand over chunks wait too (a file writer's own thread never
// takes that lock, so back-pressure cannot deadlock).
class ChunkSink {
 public:
  virtual ~ChunkSink() = default;
  virtual void on_chunk(std::unique_ptr<Chunk> chunk) = 0;
  virtual void on_finish() {}
};

// Attaches a sink to the process's emission points. At most one Recorder is
// attached at a time; see Note [Cost of emission] for the threading rules.
class Recorder {
 public:
  explicit Recorder(ChunkSink& sink);
  ~Recorder();  // finishes if still attached
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  void start();   // attach and begin recording; throws if another is attached
  void finish();  // flush every thread's partial chunk, detach, sink.on_finish()
  bool attached() const { return attached_; }

 private:
  ChunkSink& sink_;
  bool attached_ = false;
};

// Keeps every event in memory; events() merges the threads into one stream.
class MemoryRecorder : public ChunkSink {
 public:
  MemoryRecorder();
  ~MemoryRecorder() override;
  void start() { recorder_.start(); }
  void finish() { recorder_.finish(); }

  // The merged stream, ordered by (t_ns, thread), per-thread order kept.
  // Call after finish().
  std::vector<Event> events() const;
  // What a trace file of this recording would hold: finishes recording (if
  // still attached) and hands over the merged events with the process's
  // string table; source "memory". The recorder is empty afterwards.
  TraceData take_trace();

  void on_chunk(std::unique_ptr<Chunk> chunk) override;

 private:
  mutable std::mutex mutex_;
  std::vector<std::unique_ptr<Chunk>> chunks_;
  Recorder recorder_;
};

// Note [Live chunks reach the file] (emit.cpp): the events each thread has
// emitted since its last hand-over, copied into fresh chunks appended to
// `out`, when `sink` is the attached one. `registry` must hold the lock
// try_lock_registry() gives; with it held no chunk changes hands, so what
// a sink received before comes before these copies.
std::unique_lock<std::mutex> try_lock_registry() noexcept;
void take_live_events(const std::unique_lock<std::mutex>& registry, const ChunkSink& sink,
                      std::vector<std::unique_ptr<Chunk>>& out) noexcept;

// Merge helper shared by the memory recorder and the trace reader.
std::vector<Event> merge_chunks(const std::vector<const Chunk*>& chunks);

}  // namespace hookscope::trace
