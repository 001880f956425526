#pragma once
// A recording's process-wide state across fork() and early exits (the torch
// bridge's child processes, python/hookscope/_children.py). Kept out of
// emit.h: few callers need it.

namespace hookscope::trace {

// Note [Recording across fork]
// ~~~~~~~~~~~~~~~~~~~~~~~~~~~~
// fork() copies the recorder's state into the child but only the forking
// thread: the writer thread is gone, a lock may be held forever by a thread
// that no longer exists, and the file descriptor is the parent's. A child
// that used that state would hang joining the writer at exit or write into
// the parent's file. So the child, right after fork, calls
// abandon_after_fork(): every lock of emission and of the string table is
// made anew, the attached sink is forgotten without a call into it (the
// parent still owns it), the other threads' buffers are dropped and the
// events this thread had not handed over stay the parent's. The child may
// then attach a recorder of its own (the torch bridge records it to
// PREFIX.pid<pid>.hstrace).
void abandon_after_fork() noexcept;
// The string table's part of it (strings.cpp): its lock is made anew.
void strings_after_fork() noexcept;

// Hands the calling thread's partial chunk to the attached recorder now (it
// would otherwise wait until full, or a file writer's next copy of it, Note
// [Live chunks reach the file]): a recording's first events reach its file
// at once. No effect without a recorder.
void flush_calling_thread() noexcept;

}  // namespace hookscope::trace
