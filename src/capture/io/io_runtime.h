/*
 * What the hooks share (C, because a hook must be declared exactly as libc
 * declares the call it replaces, exception specification included, which
 * C++ would not let us do for `read` and `stat` alike).
 *
 * The hot path of a hook on an untraced descriptor is one load from the
 * descriptor table and the real call. On a traced one: two clock reads, the
 * real call and one record into the thread's buffer through the core's
 * public API. No lock, no allocation, no formatting, no syscall besides the
 * wrapped one.
 */
#ifndef DFTRACER_IO_IO_RUNTIME_H_
#define DFTRACER_IO_IO_RUNTIME_H_

#ifndef _GNU_SOURCE
#error "define _GNU_SOURCE before any include: the real-function table needs the 64-bit and statx prototypes"
#endif
#include <dftracer/dftracer.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io_calls.h"

#ifdef __cplusplus
extern "C" {
#endif

#define DFTIO_HIDDEN __attribute__((visibility("hidden")))

/* fd -> fhash of the path it was opened with; 0 = not traced. One 64-bit
 * atomic word per descriptor: open stores, close exchanges with 0, every
 * other call loads. Descriptors below DFTIO_MAX_FD (nearly all) live in
 * this static table; higher ones (a raised RLIMIT_NOFILE) in pages of
 * fd_table.c, reached through the out-of-line dftio_high_fd_* calls. */
#ifndef DFTIO_MAX_FD /* a power of two; a test build makes it small to reach the pages */
#define DFTIO_MAX_FD 65536
#endif
DFTIO_HIDDEN extern uint64_t dftio_fd_hash[DFTIO_MAX_FD];
DFTIO_HIDDEN uint64_t dftio_high_fd_load(int fd);
DFTIO_HIDDEN void dftio_high_fd_store(int fd, uint64_t h);
DFTIO_HIDDEN uint64_t dftio_high_fd_exchange(int fd);
/* Forgets every descriptor from `first` to `last` (close_range, closefrom). */
DFTIO_HIDDEN void dftio_untrack_range(unsigned first, unsigned last);

/* The real functions, resolved once (io_real.c). */
struct dftio_real_calls {
#define DFTIO_REAL_MEMBER(fn) __typeof__(&fn) fn;
  DFTIO_ALL_CALLS(DFTIO_REAL_MEMBER)
#undef DFTIO_REAL_MEMBER
};

/* The globals every hook reads, in one struct (io_real.c) so that they share
 * a page and neighbouring cache lines whatever order link-time optimisation
 * gives variables: once a change let the 512 KiB descriptor table fall
 * between the switch and the real functions, a traced open+close pair
 * touched one more page and cache line right after its system call
 * (docs/performance.md, "I/O capture"). */
struct dftio_hot_state {
  int on;                       /* 1 once the hooks are live and I/O tracing is wanted (not DFTRACER_DISABLE_IO) */
  unsigned direct_calls;        /* direct_syscall.h */
  struct dftio_real_calls real; /* the real functions */
};
DFTIO_HIDDEN extern struct dftio_hot_state dftio_hot;
#define dftio_on (dftio_hot.on)
#define dftio_direct_calls (dftio_hot.direct_calls)
#define dftio_real (dftio_hot.real)

/* Set while this thread is inside the tracer (recording, hashing a path):
 * an I/O call made from there (the allocator mapping memory, a warning)
 * passes straight through instead of recursing. Initial-exec TLS: a
 * dynamic TLS access could itself allocate. */
DFTIO_HIDDEN extern __thread int dftio_busy __attribute__((tls_model("initial-exec")));

/* dftio_busy's values: 0 idle; 1 inside a hook's own work (hashing a path,
 * recording); DFTIO_BUSY_VFORK after a vfork (vfork_hook.c), in the child and
 * in the parent alike (they share it), until a hook finds out which it is;
 * DFTIO_BUSY_TRACER for good on the tracer's own threads. */
#define DFTIO_BUSY_VFORK 2
#define DFTIO_BUSY_TRACER 3
#if defined(__x86_64__)
#define DFTIO_VFORK_HOOK 1
#else
#define DFTIO_VFORK_HOOK 0
#endif
/* After a vfork: 1 (and the mark cleared) in the parent, 0 in the child. */
DFTIO_HIDDEN int dftio_vfork_over(void);
#if DFTIO_VFORK_HOOK
/* The vfork the trampoline jumps to; set before the hook goes in. */
DFTIO_HIDDEN extern pid_t (*dftio_real_vfork)(void);
#endif

/* Whether this thread may trace now: not inside the tracer, not a vfork child. */
static inline int dftio_idle(void) {
  int b = dftio_busy;
  if (__builtin_expect(b == 0, 1)) return 1;
  return b == DFTIO_BUSY_VFORK && dftio_vfork_over();
}

/* Whether a descriptor this thread closes is the program's descriptor of that
 * number: yes, also from a signal handler that interrupted a hook (busy 1:
 * the close happens all the same, only its event is lost); not on the
 * tracer's threads (descriptor tables of their own) nor in a vfork child. */
static inline int dftio_closes_programs_fds(void) {
  int b = dftio_busy;
  if (__builtin_expect(b == 0, 1)) return 1;
  if (b == DFTIO_BUSY_VFORK) return dftio_vfork_over();
  return b != DFTIO_BUSY_TRACER;
}

/* dft_set_tracer_thread_hook's hook: the tracer's own threads (writer,
 * signal thread) are never traced. */
DFTIO_HIDDEN void dftio_mark_tracer_thread(void);

static inline int dftio_recording(void) {
  return __atomic_load_n(&dftio_on, __ATOMIC_RELAXED) && dft_enabled_inline() && dftio_idle();
}

/* fhash of a traced descriptor, or 0 (untraced, or not recording now). */
static inline uint64_t dftio_fd_traced(int fd) {
  uint64_t h = (unsigned)fd < DFTIO_MAX_FD ? __atomic_load_n(&dftio_fd_hash[fd], __ATOMIC_RELAXED)
                                           : dftio_high_fd_load(fd);
  return h != 0 && dftio_recording() ? h : 0;
}

/* Per descriptor below DFTIO_MAX_FD: 1 when it came from an open of a path
 * known to be a regular file or a directory, so its close may be the direct
 * system call (direct_syscall.h). Every track writes it, before the hash;
 * it is read only while the descriptor is traced. */
DFTIO_HIDDEN extern uint8_t dftio_fd_plain[DFTIO_MAX_FD];

static inline void dftio_track_plain(int fd, uint64_t h, int plain) {
  if ((unsigned)fd < DFTIO_MAX_FD) {
    __atomic_store_n(&dftio_fd_plain[fd], (uint8_t)plain, __ATOMIC_RELAXED);
    __atomic_store_n(&dftio_fd_hash[fd], h, __ATOMIC_RELAXED);
  } else {
    dftio_high_fd_store(fd, h);
  }
}
static inline void dftio_track(int fd, uint64_t h) { dftio_track_plain(fd, h, 0); }
static inline int dftio_fd_is_plain(int fd) {
  return (unsigned)fd < DFTIO_MAX_FD && __atomic_load_n(&dftio_fd_plain[fd], __ATOMIC_RELAXED);
}

/* Forgets a descriptor (before the real close: a descriptor number reused by
 * another thread's open right after the close must keep its new entry).
 * Not from inside the tracer: our own threads are busy for good and keep
 * descriptor tables of their own (src/core/tracer_thread.h), where a number
 * is not the program's descriptor of that number. */
static inline uint64_t dftio_untrack(int fd) {
  if (!dftio_closes_programs_fds()) return 0;
  if ((unsigned)fd < DFTIO_MAX_FD) {
    /* A load and a plain store, not an exchange: a locked instruction on every
     * close (traced or not) cost more than the rest of the untraced path. Two
     * threads closing one descriptor at once (a bug of the program's) may then
     * both record the close. */
    uint64_t h = __atomic_load_n(&dftio_fd_hash[fd], __ATOMIC_RELAXED);
    if (h != 0) __atomic_store_n(&dftio_fd_hash[fd], 0, __ATOMIC_RELAXED);
    return h;
  }
  return dftio_high_fd_exchange(fd);
}

/* fhash of a path when I/O on it is to be traced now (recording, under
 * DFTRACER_DATA_DIR, not one of our own trace files, not /proc, /sys or
 * /dev), else 0. Writes the path's `FH` metadata record the first time a
 * session sees it. `dirfd` is AT_FDCWD for a plain path. errno unchanged. */
DFTIO_HIDDEN uint64_t dftio_path_hash(int dirfd, const char* path);
/* The same, for an open: also sets *kind to what an earlier open in this
 * session found at the path (enum dftio_path_kind, direct_syscall.h). */
DFTIO_HIDDEN uint64_t dftio_open_path_hash(int dirfd, const char* path, unsigned* kind);

/* After a traced open or opendir of the directory `path` (relative to
 * `dirfd`) with fhash `hash`: keeps the name it was opened by, so a path
 * relative to its descriptor, or an fchdir to it, is named as the program
 * names it (dir_names.h). Once per distinct directory; allocates then.
 * errno unchanged. */
DFTIO_HIDDEN void dftio_remember_dir(uint64_t hash, int dirfd, const char* path);
/* The name kept for the directory `fd` is traced with, or NULL. */
DFTIO_HIDDEN const char* dftio_dir_name(int fd);

/* After a chdir(`asked`) or fchdir (`asked`: its directory's kept name, or NULL) returning `r`: on
 * success, publishes the new working directory for dftio_path_hash -- as
 * the program named it when that names the same directory (a symlink below
 * DFTRACER_DATA_DIR stays in the name), else getcwd's. Returns `r`; errno
 * unchanged. Not a hot path (two stat or one getcwd; the first visit of a
 * directory allocates its string, kept for the process's life). */
DFTIO_HIDDEN int dftio_cwd_changed(int r, const char* asked);

/* The args of one event; `has` says which of fd, size, ret and offset to write. */
enum { DFTIO_HAS_FD = 1, DFTIO_HAS_SIZE = 2, DFTIO_HAS_RET = 4, DFTIO_HAS_OFFSET = 8 };
typedef struct dftio_args {
  uint64_t fhash;
  int64_t fd;
  int64_t size; /* bytes asked */
  int64_t ret;
  int64_t offset;
  unsigned has;
} dftio_args;

/* Records one complete event (cat POSIX or STDIO by the call). errno unchanged. */
DFTIO_HIDDEN void dftio_record(enum dftio_call call, uint64_t t0, uint64_t t1, const dftio_args* a);


/* Looks every real function up (PRELOAD: the next definition after ours;
 * FUNCTION: the one the program would call). Idempotent; not a hot path. */
DFTIO_HIDDEN void dftio_resolve_all(void);
/* signal_hooks.c: the real sigaction and signal behind the hooks that report
 * the core's SIGTERM/SIGINT handler as SIG_DFL. */
DFTIO_HIDDEN void dftio_resolve_signal_calls(void);
/* close_range_hooks.c: the real close_range and closefrom. */
DFTIO_HIDDEN void dftio_resolve_close_range_calls(void);
/* exit_hooks.c: the real _exit, _Exit and exec* behind the hooks that
 * finalize the trace before the process image ends. */
DFTIO_HIDDEN void dftio_resolve_exit_calls(void);
DFTIO_HIDDEN void* dftio_resolve(enum dftio_call call);
/* The real `name` into *slot, once (for the hooks outside io_calls.h:
 * pthread_cancel, sigaction, signal, close_range, closefrom); NULL if libc
 * has none. */
DFTIO_HIDDEN void* dftio_resolve_named(void** slot, const char* name);
DFTIO_HIDDEN const char* dftio_call_name(enum dftio_call call);
/* Interns the event names and arg keys (io_event.cc); before dftio_on. */
DFTIO_HIDDEN void dftio_intern_ids(void);

/* The real `fn`: resolved on first use when a hook runs before the library's
 * constructor (another library's constructor doing I/O under LD_PRELOAD). */
#define DFTIO_REAL(fn) \
  (__builtin_expect(dftio_real.fn != 0, 1) ? dftio_real.fn : (__typeof__(&fn))dftio_resolve(DFTIO_CALL_##fn))

/* Turns I/O tracing on from the session's settings (init mode, data dirs,
 * DFTRACER_DISABLE_IO). Returns 1 when on. Not a hot path. */
DFTIO_HIDDEN int dftio_start(void);

/* Replaces the directories whose I/O is traced (DFTRACER_DATA_DIR's syntax;
 * NULL or "" = every path), hooks running or not. Not a hot path. */
DFTIO_HIDDEN void dftio_set_data_dir(const char* dirs);

/* Pauses (paused != 0) or resumes this thread's I/O tracing; returns 1 when
 * it was paused. Only between a thread's hooks (never from the tracer's
 * own threads, where it does nothing). */
DFTIO_HIDDEN int dftio_pause_thread(int paused);

#ifdef __cplusplus
}
#endif

#endif /* DFTRACER_IO_IO_RUNTIME_H_ */
