/*
 * The calls src/io intercepts, one X-macro list per DFTracer category.
 *
 * One list drives everything that must agree: the pointers to the real
 * functions (io_real.c), the hook names (posix_hooks.c, stdio_hooks.c), the
 * interned event names (io_event.cc) and the GOT patch table of FUNCTION
 * mode (function_mode.cc). An event is named after the symbol the program
 * called (`open64`, `fopen64`), as DFTracer names them.
 *
 * A program built with _FORTIFY_SOURCE calls glibc's checked entry points
 * (`__read_chk`, `__open_2`, `__fread_chk`, ...): they are hooked too and
 * their events carry the plain name (`read`, `open`, `fread`).
 *
 * Not here: glibc's pre-2.33 `__xstat` family (a program built on this
 * glibc calls `stat` & co.; old binaries calling `__xstat` are not traced)
 * and munmap (it has no descriptor: a mapping cannot be tied to a file
 * without a table of addresses).
 */
#ifndef DFTRACER_IO_IO_CALLS_H_
#define DFTRACER_IO_IO_CALLS_H_

#define DFTIO_POSIX_CALLS(X)                                                                             \
  X(open) X(open64) X(openat) X(openat64) X(creat) X(creat64) X(close) X(read) X(write) X(pread)         \
  X(pread64) X(pwrite) X(pwrite64) X(readv) X(writev) X(lseek) X(lseek64) X(fsync) X(fdatasync)          \
  X(ftruncate) X(ftruncate64) X(stat) X(stat64) X(lstat) X(lstat64) X(fstat) X(fstat64) X(fstatat)       \
  X(fstatat64) X(statx) X(access) X(mkdir) X(rmdir) X(unlink) X(rename) X(mmap) X(mmap64) X(opendir)     \
  X(readdir) X(readdir64) X(closedir) X(dup) X(dup2) X(dup3) X(fcntl) X(fcntl64)                       \
  X(__read_chk) X(__pread_chk) X(__pread64_chk) X(__open_2) X(__open64_2) X(__openat_2) X(__openat64_2)

#define DFTIO_STDIO_CALLS(X)                                                                             \
  X(fopen) X(fopen64) X(fdopen) X(fclose) X(fread) X(fwrite) X(fseek) X(fseeko) X(fseeko64) X(ftell)     \
  X(ftello) X(ftello64) X(fgets) X(fputs) X(fflush) X(__fread_chk) X(__fgets_chk)

#define DFTIO_ALL_CALLS(X) DFTIO_POSIX_CALLS(X) DFTIO_STDIO_CALLS(X)

/* DFTIO_CALL_read, ...: the index of a call in the lists above. */
enum dftio_call {
#define DFTIO_ENUM(fn) DFTIO_CALL_##fn,
  DFTIO_ALL_CALLS(DFTIO_ENUM)
#undef DFTIO_ENUM
  DFTIO_CALL_COUNT
};

#define DFTIO_FIRST_STDIO_CALL DFTIO_CALL_fopen

/* glibc's fortified entry points, declared by its headers only under
 * _FORTIFY_SOURCE (which the hooks are built without). */
#ifndef __cplusplus
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>
#endif
#ifdef __cplusplus
extern "C" {
#endif
ssize_t __read_chk(int fd, void* buf, size_t n, size_t buflen);
ssize_t __pread_chk(int fd, void* buf, size_t n, off_t off, size_t buflen);
ssize_t __pread64_chk(int fd, void* buf, size_t n, off64_t off, size_t buflen);
int __open_2(const char* path, int flags);
int __open64_2(const char* path, int flags);
int __openat_2(int dirfd, const char* path, int flags);
int __openat64_2(int dirfd, const char* path, int flags);
size_t __fread_chk(void* buf, size_t buflen, size_t size, size_t n, FILE* f);
char* __fgets_chk(char* s, size_t size, int n, FILE* f);
#ifdef __cplusplus
}
#endif

#endif /* DFTRACER_IO_IO_CALLS_H_ */
