/*
 * The traced open and close may issue their system call themselves instead
 * of calling glibc's wrapper (docs/performance.md, #14: -49 ns per traced
 * open+close pair on the reference VM). What the wrapper adds once the
 * process has a second thread (ours, the writer) is cancellation: two
 * atomic read-modify-writes of the thread's cancel state around the call,
 * so that pthread_cancel can end a thread blocked inside it.
 *
 * Skipping that is exact only where nobody can tell, so the direct call is
 * made only when all of these hold:
 *   - the real function is glibc's own (not another interposer's, which
 *     must keep seeing the call);
 *   - no pthread_cancel has been called since the hooks went in (it is
 *     hooked like the I/O calls; the first one turns the direct calls off
 *     for good, before the cancel is sent);
 *   - the path was a regular file or a directory when an earlier open in
 *     this session looked (fstat of its descriptor; path_kind below), and
 *     the descriptor being closed came from such an open: opening or
 *     closing those does not wait on another process, so a cancel that
 *     arrives during the call is acted on at the thread's next
 *     cancellation point, as if it had arrived just after -- an order the
 *     program could not rule out anyway. A FIFO, a device or a socket
 *     keeps glibc's wrapper.
 * The sanitizer builds keep the wrappers (their interceptors track
 * descriptors), as do architectures other than x86-64 and AArch64.
 */
#ifndef DFTRACER_IO_DIRECT_SYSCALL_H_
#define DFTRACER_IO_DIRECT_SYSCALL_H_

#include <errno.h>
#include <stdint.h>
#include <sys/syscall.h>

#include "io_runtime.h"

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define DFTIO_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define DFTIO_SANITIZED 1
#endif

#if (defined(__x86_64__) || defined(__aarch64__)) && !defined(DFTIO_SANITIZED)
#define DFTIO_DIRECT_SYSCALLS 1
#else
#define DFTIO_DIRECT_SYSCALLS 0
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* dftio_direct_calls (in dftio_hot, io_runtime.h): bit DFTIO_CALL_x set: the
 * traced `x` may issue its system call itself (the first two conditions
 * above; 0 when DFTIO_DIRECT_SYSCALLS is 0). */

/* After dftio_resolve_all: sets the bits of the calls whose real function
 * is glibc's own, unless a pthread_cancel was already seen. */
DFTIO_HIDDEN void dftio_allow_direct_calls(void);

static inline int dftio_direct_ok(enum dftio_call call) {
  return (__atomic_load_n(&dftio_direct_calls, __ATOMIC_RELAXED) >> call) & 1;
}

/* What an earlier open in this session found at a path (FileHashes keeps
 * it beside the path's FH state). */
enum dftio_path_kind {
  DFTIO_KIND_UNKNOWN = 0, /* not looked at yet: the next successful open looks */
  DFTIO_KIND_FILE = 1,    /* regular file or directory: direct calls allowed */
  DFTIO_KIND_SPECIAL = 2, /* FIFO, device, socket */
  DFTIO_KIND_UNKEPT = 3   /* the FH set is full (FileHashes::kNoRoom): never learned, never direct */
};

/* After an open of a traced path (`path`, relative to `dirfd`) of unknown
 * kind returned `fd`: looks (fstat, a raw system call: never one of our
 * hooks), records the answer for the path's later opens, keeps a
 * directory's name (dftio_remember_dir), and returns the kind. errno
 * unchanged. Cold. */
DFTIO_HIDDEN enum dftio_path_kind dftio_learn_path_kind(uint64_t hash, int fd, int dirfd, const char* path);

#if DFTIO_DIRECT_SYSCALLS
/* The system call and glibc's errno convention (-4095..-1 is an error). */
static inline long dftio_syscall4(long nr, long a, long b, long c, long d) {
#if defined(__x86_64__)
  long ret;
  register long r10 __asm__("r10") = d;
  __asm__ volatile("syscall" : "=a"(ret) : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
#else /* AArch64 */
  register long x8 __asm__("x8") = nr;
  register long x0 __asm__("x0") = a;
  register long x1 __asm__("x1") = b;
  register long x2 __asm__("x2") = c;
  register long x3 __asm__("x3") = d;
  __asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
  long ret = x0;
#endif
  if (__builtin_expect((unsigned long)ret > -4096UL, 0)) {
    errno = (int)-ret;
    return -1;
  }
  return ret;
}
/* open(path) is openat(AT_FDCWD, path) in the kernel, as in glibc; 64-bit
 * kernels imply O_LARGEFILE, so open64 is the same call. */
static inline int dftio_sys_openat(int dirfd, const char* path, int flags, mode_t mode) {
  return (int)dftio_syscall4(SYS_openat, dirfd, (long)path, flags, mode);
}
static inline int dftio_sys_close(int fd) { return (int)dftio_syscall4(SYS_close, fd, 0, 0, 0); }
#define DFTIO_DIRECT_OPEN(fn, plain, dirfd, path, flags, mode, fallback) \
  ((plain) && dftio_direct_ok(DFTIO_CALL_##fn) ? dftio_sys_openat((dirfd), (path), (flags), (mode)) : (fallback))
#define DFTIO_DIRECT_CLOSE(plain, fd, fallback) \
  ((plain) && dftio_direct_ok(DFTIO_CALL_close) ? dftio_sys_close(fd) : (fallback))
#else
#define DFTIO_DIRECT_OPEN(fn, plain, dirfd, path, flags, mode, fallback) (fallback)
#define DFTIO_DIRECT_CLOSE(plain, fd, fallback) (fallback)
#endif

#ifdef __cplusplus
}
#endif

#endif /* DFTRACER_IO_DIRECT_SYSCALL_H_ */
