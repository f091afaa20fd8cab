/*
 * The calls src/capture/io intercepts, one X-macro list per DFTracer category.
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
 * glibc's `__xstat` family (what `stat` & co. compiled to before glibc
 * 2.33; old binaries and prebuilt libraries still call them, and glibc
 * still exports them) is hooked under its own names, as DFTracer names
 * those events (`__xstat`, `__fxstat64`, ...).
 *
 * munmap has no descriptor: it is traced when it unmaps a mapping that a
 * traced mmap made (mapping_table.c remembers those by address).
 */
#ifndef DFTRACER_IO_IO_CALLS_H_
#define DFTRACER_IO_IO_CALLS_H_

#define DFTIO_POSIX_CALLS(X)                                                                             \
  X(open) X(open64) X(openat) X(openat64) X(creat) X(creat64) X(close) X(read) X(write) X(pread)         \
  X(pread64) X(pwrite) X(pwrite64) X(readv) X(writev) X(lseek) X(lseek64) X(fsync) X(fdatasync)          \
  X(ftruncate) X(ftruncate64) X(stat) X(stat64) X(lstat) X(lstat64) X(fstat) X(fstat64) X(fstatat)       \
  X(fstatat64) X(statx) X(access) X(mkdir) X(rmdir) X(unlink) X(rename) X(chdir) X(fchdir) X(mmap)      \
  X(mmap64) X(munmap) X(opendir) X(readdir) X(readdir64) X(closedir) X(dup) X(dup2) X(dup3) X(fcntl)   \
  X(fcntl64)                                                                                             \
  X(__xstat) X(__xstat64) X(__lxstat) X(__lxstat64) X(__fxstat) X(__fxstat64) X(__fxstatat)             \
  X(__fxstatat64)                                                                                        \
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
/* glibc's versioned stat entry points (no longer declared by its headers). */
struct stat;
struct stat64;
int __xstat(int ver, const char* path, struct stat* st);
int __xstat64(int ver, const char* path, struct stat64* st);
int __lxstat(int ver, const char* path, struct stat* st);
int __lxstat64(int ver, const char* path, struct stat64* st);
int __fxstat(int ver, int fd, struct stat* st);
int __fxstat64(int ver, int fd, struct stat64* st);
int __fxstatat(int ver, int dirfd, const char* path, struct stat* st, int flags);
int __fxstatat64(int ver, int dirfd, const char* path, struct stat64* st, int flags);
#ifdef __cplusplus
}
#endif

#endif /* DFTRACER_IO_IO_CALLS_H_ */
