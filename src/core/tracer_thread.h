// The tracer's own threads (the writer, the signal thread) and the program's
// descriptor table.
//
// Linux takes a slower path on every descriptor call (read, write, fstat,
// ...) once a second thread shares the process's descriptor table: the
// kernel must then count a reference on the file for the call's duration,
// and a read or write also takes the file's position lock. A program that
// ran one thread pays that, about 56 ns per read() on our test VM, only
// because our writer thread exists. So each of our threads gives itself a
// table of its own (unshare(CLONE_FILES)) and closes its copies of the
// program's descriptors, all of them: 0-2 too (a copy of the program's
// stdout or stderr pipe would keep the reader waiting for an EOF after the
// program closed it -- a daemon started with captured output would hang its
// starter), except the ones it was asked to keep (the writer: the trace
// file and its index). 0-2 then name /dev/null there, so nothing can land in
// a file of ours by number, and the tracer's diagnostics from these threads
// go to the program's stderr of the moment (program_stderr()).
// The program's table is then the program's alone again: the program's
// descriptor calls take the kernel's single-owner path, and closing, say,
// every descriptor >= 3 (as daemons do) no longer closes our trace file
// under us, or hands its number to a file of the program's that our writer
// would then write into.
#ifndef DFTRACER_SRC_CORE_TRACER_THREAD_H_
#define DFTRACER_SRC_CORE_TRACER_THREAD_H_

#include <vector>

namespace dftracer {

// Called first on each tracer thread: runs the I/O library's hook (the
// thread's I/O is never traced: its descriptor numbers are not the
// program's), then takes a private descriptor table keeping `keep` and 0-2.
// True when the thread now has a table of its own; false (nothing changed)
// where unshare() is refused (seccomp profiles such as Docker's default
// refuse it without CAP_SYS_ADMIN), under ThreadSanitizer (which models
// descriptors per process and would report our copies as races), or with
// DFTRACER_PRIVATE_FDS=0.
bool become_tracer_thread(const std::vector<int>& keep);

// True on a tracer thread that has a descriptor table of its own.
bool in_private_table();

// Once every thread of the tracer's has been joined: returns when the kernel
// has taken them all out of the process (pthread_join returns a moment
// before; a new user namespace wants the process single-threaded), at most
// 200 ms a thread. In a forked child, forget_tracer_threads() first: the
// parent's threads were never the child's.
void wait_until_tracer_threads_gone();
void forget_tracer_threads();

// Whether every live tracer thread has the calling thread's capability
// sets: glibc's setuid & co. then succeed or fail on them as on the caller
// (no abort of the process for a thread that refused).
bool tracer_threads_share_capabilities();

// On such a thread: a descriptor of this thread's table for the program's
// stderr as it is now (pidfd_getfd(2), else /proc/<pid>/fd/2), to write one
// message to and close; -1 when it cannot be had (the message is dropped).
int program_stderr();

// Closes descriptor `fd` in the calling thread's table with the raw system
// call, past the I/O hooks: a hook would forget what the program's
// descriptor of that number is (the hooks' table is per process).
void close_descriptor_raw(int fd);

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_TRACER_THREAD_H_
