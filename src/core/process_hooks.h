// Process hooks: what the process does to the tracing session from outside
// the program's own calls. Installed once, at the first session start:
//   atexit          finalize, so a normal exit leaves a complete file;
//   SIGTERM/SIGINT  finalize, then die of the signal as before (also
//                   SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGABRT and the
//                   faults SIGSEGV, SIGBUS, SIGFPE, SIGILL; only where
//                   the signal would kill the process anyway: an
//                   application's own handler is left alone); the handler
//                   only wakes a signal thread, which finalizes outside
//                   signal context and re-raises;
//   fork            the child abandons the parent's events and, if tracing
//                   was on, starts its own file;
//   _exit, exec*    (through the I/O library's hooks, which call
//                   dft_finalize_before_exit, dft_suspend_for_exec) finalize
//                   before the image ends, and remove a file with nothing
//                   recorded in it; a failed exec starts tracing again;
//   setuid & co.,   (dft_stop_tracing_threads) finalize and end the
//   unshare, setns  tracer's threads: the process runs on untraced.
// The Session methods these call (prepare_fork, after_fork_in_parent,
// after_fork_in_child) are defined in process_hooks.cc
// too, so everything about signals, exit and fork is in one file.
#ifndef DFTRACER_SRC_CORE_PROCESS_HOOKS_H_
#define DFTRACER_SRC_CORE_PROCESS_HOOKS_H_

namespace dftracer {

// Idempotent; thread-safe.
void install_process_hooks();

// Before _exit/_Exit (the I/O library's hooks): finalizes the trace, also
// when called from a signal handler; returns once the file is complete, or
// after a deadline. A file with nothing recorded is removed.
void finalize_before_exit();

// Before a change of credentials or namespaces: finalizes the trace (a file
// with nothing recorded is removed) and ends every thread of the tracer's,
// so the process runs on single-threaded and untraced.
void stop_tracing_threads();

// The writer, as it drains and writes (a waiting signal handler waits on
// while it moves), and once the file's `end` and index are written.
void note_writer_progress();
void note_trace_file_complete();

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_PROCESS_HOOKS_H_
