#include "trace/emit.h"
#include "trace/strings.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <new>
#include <stdexcept>
#include <vector>

#include "trace/fork.h"
#include "trace/recorder.h"

namespace hookscope::trace {
namespace detail {
std::atomic<bool> g_recording{false};
}  // namespace detail

namespace {

struct ThreadState;
// Plain pointer to this thread's state: reading it needs no TLS-init check on
// the hot path (the state itself is a thread_local with a constructor).
thread_local ThreadState* tl_fast = nullptr;

// Guards the attached sink and the registry of thread states.
std::mutex g_mutex;
ChunkSink* g_sink = nullptr;
std::vector<ThreadState*> g_threads;
std::atomic<uint64_t> g_generation{1};
std::atomic<uint32_t> g_next_thread{0};

// Note [Live chunks reach the file]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// A thread hands its chunk to the sink when it is full (or at finish, or
// flush_calling_thread). A process can die at any moment (a rank killed
// with SIGKILL: the mission's story), and a thread may stop emitting for
// good with its chunk half full: one blocked in a collective, or all of a
// program that runs for a few ms. Their events must reach the file all the
// same: a file writer's thread, every kLiveInterval (writer.cpp), copies
// what each thread has emitted since its last hand-over
// (take_live_events) and writes it like any chunk, so a killed process
// loses at most that interval of each thread's events (write() survives
// SIGKILL: the page cache has it).
// The emitting thread stays lock-free: after storing an event it releases
// the chunk's count into Chunk::published (a plain store on x86); the
// writer acquires it and copies only events below it, which their thread
// never writes again. Everything else is under g_mutex: the writer holds it
// while it copies, and marks the copied prefix in Chunk::taken; a chunk
// changes hands only under g_mutex (hand_over), dropping that prefix, so
// no event reaches a sink twice and a thread's events keep their order.
// The writer only try_locks g_mutex: a thread may hold it while it waits
// for room in the writer's queue (back-pressure), which that writer makes.

struct ThreadState {
  std::unique_ptr<Chunk> chunk;
  uint64_t generation = 0;
  uint32_t index;
  uint16_t rank = 0;

  ThreadState() : index(g_next_thread.fetch_add(1)) {
    std::lock_guard<std::mutex> lock(g_mutex);
    g_threads.push_back(this);
  }
  ~ThreadState();
};

// Note [Live chunks reach the file]: gives `chunk` to `sink` without the
// events a sink already has (Chunk::taken); an empty one is recycled.
// Called with g_mutex held.
void hand_over(ChunkSink& sink, std::unique_ptr<Chunk> chunk) {
  if (chunk->taken > 0) {
    std::memmove(chunk->events, chunk->events + chunk->taken,
                 (chunk->count - chunk->taken) * sizeof(Event));
    chunk->count -= chunk->taken;
    chunk->taken = 0;
    chunk->published = chunk->count;
  }
  if (chunk->count == 0) {
    recycle_chunk(std::move(chunk));
    return;
  }
  sink.on_chunk(std::move(chunk));
}

ThreadState::~ThreadState() {
  tl_fast = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_sink && chunk && chunk->count > 0 && generation == g_generation.load()) {
    hand_over(*g_sink, std::move(chunk));
  }
  g_threads.erase(std::find(g_threads.begin(), g_threads.end(), this));
}

thread_local ThreadState tl_state;

ThreadState& this_thread_state() {
  ThreadState* ts = tl_fast;
  if (__builtin_expect(ts == nullptr, 0)) {
    ts = &tl_state;
    tl_fast = ts;
  }
  return *ts;
}

// Note [Chunks are reused]
// ~~~~~~~~~~~~~~~~~~~~~~~~
// A chunk's events are written before they are read, so they are not
// zero-filled (192 KiB per chunk would be a noticeable share of the cost).
// A chunk the file writer is done with comes back here (recycle_chunk) and
// the next refill takes it: a fresh 192 KiB allocation is pages the kernel
// must fault in on first write and, from glibc's heap, a consolidation of
// its small-chunk free lists first, which a program's tensors keep long
// (the torch bridge's cost, bench/torch_bridge_overhead.py). A few are kept;
// more go back to the allocator.
// The pool is never destroyed: a thread may hand a chunk back while the
// process exits, and what it holds stays reachable (no leak reported).
constexpr size_t kSpareChunks = 4;
struct SparePool {
  std::mutex mutex;
  std::vector<Chunk*> chunks;
};
SparePool& spare() {
  static SparePool* pool = new SparePool;
  return *pool;
}

std::unique_ptr<Chunk> new_chunk(uint32_t thread) {
  Chunk* c = nullptr;
  {
    SparePool& pool = spare();
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.chunks.empty()) {
      c = pool.chunks.back();
      pool.chunks.pop_back();
    }
  }
  if (c == nullptr) c = static_cast<Chunk*>(::operator new(sizeof(Chunk)));
  c->thread = thread;
  c->count = 0;
  c->published = 0;
  c->taken = 0;
  return std::unique_ptr<Chunk>(c);
}

std::vector<void (*)()>& start_callbacks() {
  static std::vector<void (*)()> callbacks;
  return callbacks;
}

// Hands a full chunk to the sink and starts a fresh one. Returns null when no
// recorder is attached any more.
Chunk* refill(ThreadState& ts) {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_sink) return nullptr;
  uint64_t gen = g_generation.load();
  if (ts.generation == gen && ts.chunk && ts.chunk->count > 0) {
    hand_over(*g_sink, std::move(ts.chunk));
  }
  ts.chunk = new_chunk(ts.index);
  ts.generation = gen;
  return ts.chunk.get();
}

}  // namespace

namespace detail {

void emit_slow(EventKind kind, uint8_t sub, uint64_t node, uint64_t key,
               uint64_t arg, uint32_t owner, uint32_t actor) noexcept {
  ThreadState& ts = this_thread_state();
  Chunk* c = ts.chunk.get();
  if (__builtin_expect(c == nullptr || c->count == kChunkEvents ||
                           ts.generation != g_generation.load(std::memory_order_relaxed),
                       0)) {
    c = refill(ts);
    if (c == nullptr) return;
  }
  Event& e = c->events[c->count++];
  const uint64_t t = now_ns();
  e.t_ns = t;
  e.node = node;
  e.key = key;
  e.arg = arg;
  e.owner = owner;
  e.actor = actor;
  e.kind = kind;
  e.sub = sub;
  e.rank = ts.rank;
  e.thread = ts.index;
  // Note [Live chunks reach the file]: the writer may copy it from now on.
  std::atomic_ref<uint32_t>(c->published).store(c->count, std::memory_order_release);
}

}  // namespace detail

void recycle_chunk(std::unique_ptr<Chunk> chunk) noexcept {
  if (!chunk) return;
  SparePool& pool = spare();
  std::lock_guard<std::mutex> lock(pool.mutex);
  if (pool.chunks.size() >= kSpareChunks) return;  // freed on return
  try {
    pool.chunks.reserve(kSpareChunks);
  } catch (const std::bad_alloc&) {
    return;
  }
  pool.chunks.push_back(chunk.release());
}

void set_recording(bool on) noexcept {
  std::lock_guard<std::mutex> lock(g_mutex);
  detail::g_recording.store(on && g_sink != nullptr);
}

void set_thread_rank(uint16_t rank) noexcept { this_thread_state().rank = rank; }
uint16_t thread_rank() noexcept { return this_thread_state().rank; }
uint32_t thread_index() noexcept { return this_thread_state().index; }

uint64_t now_ns() noexcept {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

void flush_calling_thread() noexcept {
  ThreadState& ts = this_thread_state();
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_sink && ts.chunk && ts.chunk->count > 0 && ts.generation == g_generation.load()) {
    hand_over(*g_sink, std::move(ts.chunk));
  }
}

std::unique_lock<std::mutex> try_lock_registry() noexcept {
  return std::unique_lock<std::mutex>(g_mutex, std::try_to_lock);
}

void take_live_events(const std::unique_lock<std::mutex>& registry, const ChunkSink& sink,
                      std::vector<std::unique_ptr<Chunk>>& out) noexcept {
  if (!registry.owns_lock() || registry.mutex() != &g_mutex || g_sink != &sink) return;
  const uint64_t gen = g_generation.load();
  for (ThreadState* ts : g_threads) {
    Chunk* c = ts->chunk.get();
    if (c == nullptr || ts->generation != gen) continue;
    const uint32_t published = std::atomic_ref<uint32_t>(c->published).load(std::memory_order_acquire);
    if (published <= c->taken) continue;
    std::unique_ptr<Chunk> copy;
    try {
      out.reserve(out.size() + 1);
      copy = new_chunk(ts->index);
    } catch (const std::bad_alloc&) {
      return;  // the chunk itself still reaches the sink when handed over
    }
    copy->count = published - c->taken;
    std::memcpy(copy->events, c->events + c->taken, copy->count * sizeof(Event));
    copy->published = copy->count;
    c->taken = published;
    out.push_back(std::move(copy));
  }
}

void abandon_after_fork() noexcept {
  // Note [Recording across fork] (fork.h). Only this thread runs: no lock is needed,
  // and the old ones may never be unlocked.
  new (&g_mutex) std::mutex();
  new (&spare().mutex) std::mutex();
  strings_after_fork();
  ThreadState* me = &this_thread_state();
  detail::g_recording.store(false);
  g_sink = nullptr;
  g_generation.fetch_add(1);
  // The other threads' states belong to threads that do not exist here
  // (their thread_local storage is never destroyed in this process).
  for (ThreadState* ts : g_threads) ts->chunk.reset();
  g_threads.assign(1, me);
}

// ---- Recorder ---------------------------------------------------------------

Recorder::Recorder(ChunkSink& sink) : sink_(sink) {}

Recorder::~Recorder() {
  if (attached_) finish();
}

uint64_t recorder_generation() noexcept {
  return g_generation.load();
}

void add_start_callback(void (*fn)()) {
  std::lock_guard<std::mutex> lock(g_mutex);
  start_callbacks().push_back(fn);
}

void Recorder::start() {
  std::vector<void (*)()> callbacks;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_sink != nullptr) {
      throw std::logic_error(
          "a trace recorder is already attached to this process; finish() it before "
          "starting another");
    }
    g_sink = &sink_;
    g_generation.fetch_add(1);
    attached_ = true;
    detail::g_recording.store(true);
    callbacks = start_callbacks();
  }
  for (auto fn : callbacks) fn();  // they emit, which takes g_mutex
}

void Recorder::finish() {
  if (!attached_) return;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    detail::g_recording.store(false);
    uint64_t gen = g_generation.load();
    for (ThreadState* ts : g_threads) {
      if (ts->chunk && ts->generation == gen && ts->chunk->count > 0) {
        hand_over(sink_, std::move(ts->chunk));
      }
      ts->chunk.reset();
    }
    g_generation.fetch_add(1);
    g_sink = nullptr;
    attached_ = false;
  }
  sink_.on_finish();
}

// ---- MemoryRecorder ---------------------------------------------------------

MemoryRecorder::MemoryRecorder() : recorder_(*this) {}
MemoryRecorder::~MemoryRecorder() { recorder_.finish(); }

void MemoryRecorder::on_chunk(std::unique_ptr<Chunk> chunk) {
  std::lock_guard<std::mutex> lock(mutex_);
  chunks_.push_back(std::move(chunk));
}

std::vector<Event> MemoryRecorder::events() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<const Chunk*> view;
  view.reserve(chunks_.size());
  for (const auto& c : chunks_) view.push_back(c.get());
  return merge_chunks(view);
}

TraceData MemoryRecorder::take_trace() {
  recorder_.finish();
  TraceData t;
  t.events = events();
  t.strings = strings_since(0);
  t.source = "memory";
  std::lock_guard<std::mutex> lock(mutex_);
  chunks_.clear();
  return t;
}

std::vector<Event> merge_chunks(const std::vector<const Chunk*>& chunks) {
  size_t total = 0;
  for (const Chunk* c : chunks) total += c->count;
  std::vector<Event> out;
  out.reserve(total);
  for (const Chunk* c : chunks) out.insert(out.end(), c->events, c->events + c->count);
  std::stable_sort(out.begin(), out.end(), [](const Event& a, const Event& b) {
    return a.t_ns != b.t_ns ? a.t_ns < b.t_ns : a.thread < b.thread;
  });
  return out;
}

}  // namespace hookscope::trace
