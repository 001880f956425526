#pragma once
// Emission points. See Note [Cost of emission].

#include <atomic>
#include <cstdint>

#include "trace/event.h"

namespace hookscope::trace {

// Note [Cost of emission]
// ~~~~~~~~~~~~~~~~~~~~~~~
// Every emission point in the runtime calls emit(). With no recorder attached
// (or recording paused) that is one relaxed load and one predictable branch;
// the slow path is out of line. With a recorder it reads the monotonic clock
// and stores one Event into a buffer owned by the calling thread; only when
// that buffer (a Chunk) is full does it take a lock to hand the chunk over.
// Attaching and detaching a recorder (Recorder::start/finish) must happen
// while no other thread emits; pausing and resuming (set_recording) is safe at
// any time.
namespace detail {
extern std::atomic<bool> g_recording;
void emit_slow(EventKind kind, uint8_t sub, uint64_t node, uint64_t key,
               uint64_t arg, uint32_t owner, uint32_t actor) noexcept;
}  // namespace detail

inline bool recording() noexcept {
  return detail::g_recording.load(std::memory_order_relaxed);
}

inline void emit(EventKind kind, uint8_t sub = 0, uint64_t node = 0,
                 uint64_t key = 0, uint64_t arg = 0, uint32_t owner = 0,
                 uint32_t actor = 0) noexcept {
  if (__builtin_expect(recording(), 0)) {
    detail::emit_slow(kind, sub, node, key, arg, owner, actor);
  }
}

// The typed form every writer uses: emit(ev::MarkReady{...}) (Note [Typed
// events]); packs the record only when something records.
template <class View, EventKind = View::kKind>
inline void emit(const View& view) noexcept {
  if (__builtin_expect(recording(), 0)) {
    const Event r = to_event(view);
    detail::emit_slow(r.kind, r.sub, r.node, r.key, r.arg, r.owner, r.actor);
  }
}

// Pause / resume an attached recorder. No effect without one.
void set_recording(bool on) noexcept;

// The rank stamped on events emitted by this thread (ranks run as threads in
// one process in tests and in the default scenario mode).
void set_thread_rank(uint16_t rank) noexcept;
uint16_t thread_rank() noexcept;

// Registers a function that Recorder::start runs right after attaching, to
// emit a snapshot of state that predates the recording (live hook owners).
void add_start_callback(void (*fn)());

// Changes each time a recorder attaches or detaches: tells per-process
// counters that a new recording began (Note [Reducer labels per recording]).
uint64_t recorder_generation() noexcept;

// Small dense per-process index of the calling thread (0 = first thread seen).
uint32_t thread_index() noexcept;

// Monotonic clock in nanoseconds, the one events are stamped with.
uint64_t now_ns() noexcept;

}  // namespace hookscope::trace
