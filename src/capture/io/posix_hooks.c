/*
 * POSIX hooks: cat "POSIX", named after the symbol called. Args as
 * DFTracer's POSIX events: fhash, fd, size (bytes asked), ret, offset where
 * the call says it. A call on a descriptor nobody traced (its open was not
 * under DFTRACER_DATA_DIR, or happened before tracing) is the real call and
 * one load.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "direct_syscall.h"
#include "io_hook.h"
#include "mapping_table.h"

/* ---------------------------------------------------------------- open family */

/* The mode argument exists only when the flags create a file. */
#define DFTIO_OPEN_MODE(flags, last)                                 \
  mode_t mode = 0;                                                   \
  if ((flags) & (O_CREAT | __O_TMPFILE)) {                           \
    va_list ap;                                                      \
    va_start(ap, last);                                              \
    mode = (mode_t)va_arg(ap, int);                                  \
    va_end(ap);                                                      \
  }

#define DFTIO_OPENED(fd) (DFTIO_FD(fd), DFTIO_RET(fd), ((fd) >= 0 ? dftio_track((fd), h_) : (void)0))
#define DFTIO_PATH(dirfd, path) (dftio_recording() ? dftio_path_hash((dirfd), (path)) : 0)

/* open, open64, openat, openat64: a path known to be a regular file or a
 * directory gets the direct system call (direct_syscall.h); the first
 * successful open of a path in a session looks at what it opened. */
#define DFTIO_OPEN_PATH(dirfd, path) (dftio_recording() ? dftio_open_path_hash((dirfd), (path), &kind_) : 0)
#define DFTIO_KIND_NOW(fd, dirfd, path) \
  (kind_ == DFTIO_KIND_UNKNOWN ? dftio_learn_path_kind(h_, (fd), (dirfd), (path)) : (enum dftio_path_kind)kind_)
#define DFTIO_OPENED_KNOWN(fd, dirfd, path) \
  (DFTIO_FD(fd), DFTIO_RET(fd),             \
   ((fd) >= 0 ? dftio_track_plain((fd), h_, DFTIO_KIND_NOW(fd, dirfd, path) == DFTIO_KIND_FILE) : (void)0))
#define DFTIO_OPEN_CALL(fn, dirfd, path, flags, real_call)                                               \
  unsigned kind_ = DFTIO_KIND_UNKNOWN;                                                                   \
  DFTIO_RUN_TRACED(fn, DFTIO_OPEN_PATH(dirfd, path), int, real_call,                                     \
                   DFTIO_DIRECT_OPEN(fn, kind_ == DFTIO_KIND_FILE, dirfd, path, flags, mode, real_call), \
                   DFTIO_OPENED_KNOWN(r_, dirfd, path))

int DFTIO_HOOK(open)(const char* path, int flags, ...) {
  DFTIO_OPEN_MODE(flags, flags)
  DFTIO_OPEN_CALL(open, AT_FDCWD, path, flags, DFTIO_REAL(open)(path, flags, mode));
}
int DFTIO_HOOK(open64)(const char* path, int flags, ...) {
  DFTIO_OPEN_MODE(flags, flags)
  DFTIO_OPEN_CALL(open64, AT_FDCWD, path, flags, DFTIO_REAL(open64)(path, flags, mode));
}
int DFTIO_HOOK(openat)(int dirfd, const char* path, int flags, ...) {
  DFTIO_OPEN_MODE(flags, flags)
  DFTIO_OPEN_CALL(openat, dirfd, path, flags, DFTIO_REAL(openat)(dirfd, path, flags, mode));
}
int DFTIO_HOOK(openat64)(int dirfd, const char* path, int flags, ...) {
  DFTIO_OPEN_MODE(flags, flags)
  DFTIO_OPEN_CALL(openat64, dirfd, path, flags, DFTIO_REAL(openat64)(dirfd, path, flags, mode));
}
int DFTIO_HOOK(creat)(const char* path, mode_t mode) {
  DFTIO_RUN(creat, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(creat)(path, mode), DFTIO_OPENED(r_));
}
int DFTIO_HOOK(creat64)(const char* path, mode_t mode) {
  DFTIO_RUN(creat64, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(creat64)(path, mode), DFTIO_OPENED(r_));
}

/* `plain` is read before the descriptor is forgotten, and only used when it
 * was traced (then its open wrote the byte). */
int DFTIO_HOOK(close)(int fd) {
  const int plain = dftio_fd_is_plain(fd);
  uint64_t h = dftio_untrack(fd);
  DFTIO_RUN_TRACED(close, h && dftio_recording() ? h : 0, int, DFTIO_REAL(close)(fd),
                   DFTIO_DIRECT_CLOSE(plain, fd, DFTIO_REAL(close)(fd)), (DFTIO_FD(fd), DFTIO_RET(r_)));
}

/* ---------------------------------------------------------------- data */

#define DFTIO_DATA(fd, n) (DFTIO_FD(fd), DFTIO_SIZE(n), DFTIO_RET(r_))

ssize_t DFTIO_HOOK(read)(int fd, void* buf, size_t n) {
  DFTIO_RUN(read, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(read)(fd, buf, n), DFTIO_DATA(fd, n));
}
ssize_t DFTIO_HOOK(write)(int fd, const void* buf, size_t n) {
  DFTIO_RUN(write, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(write)(fd, buf, n), DFTIO_DATA(fd, n));
}
ssize_t DFTIO_HOOK(pread)(int fd, void* buf, size_t n, off_t off) {
  DFTIO_RUN(pread, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(pread)(fd, buf, n, off),
            (DFTIO_DATA(fd, n), DFTIO_OFFSET(off)));
}
ssize_t DFTIO_HOOK(pread64)(int fd, void* buf, size_t n, off64_t off) {
  DFTIO_RUN(pread64, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(pread64)(fd, buf, n, off),
            (DFTIO_DATA(fd, n), DFTIO_OFFSET(off)));
}
ssize_t DFTIO_HOOK(pwrite)(int fd, const void* buf, size_t n, off_t off) {
  DFTIO_RUN(pwrite, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(pwrite)(fd, buf, n, off),
            (DFTIO_DATA(fd, n), DFTIO_OFFSET(off)));
}
ssize_t DFTIO_HOOK(pwrite64)(int fd, const void* buf, size_t n, off64_t off) {
  DFTIO_RUN(pwrite64, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(pwrite64)(fd, buf, n, off),
            (DFTIO_DATA(fd, n), DFTIO_OFFSET(off)));
}

/* Bytes asked, read from the iovec array only after the kernel did (`ret`
 * >= 0): a failed call may have failed because the array is unreadable
 * (EFAULT) or too long (EINVAL), where reading it would crash the program
 * that libc answers with an error. A failed call's size is 0. */
static size_t iov_bytes(const struct iovec* iov, int n, ssize_t ret) {
  size_t total = 0;
  for (int i = 0; ret >= 0 && iov != NULL && i < n; ++i) total += iov[i].iov_len;
  return total;
}
ssize_t DFTIO_HOOK(readv)(int fd, const struct iovec* iov, int n) {
  DFTIO_RUN(readv, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(readv)(fd, iov, n), DFTIO_DATA(fd, iov_bytes(iov, n, r_)));
}
ssize_t DFTIO_HOOK(writev)(int fd, const struct iovec* iov, int n) {
  DFTIO_RUN(writev, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(writev)(fd, iov, n), DFTIO_DATA(fd, iov_bytes(iov, n, r_)));
}

#define DFTIO_FD_RET(fd) (DFTIO_FD(fd), DFTIO_RET(r_))

off_t DFTIO_HOOK(lseek)(int fd, off_t off, int whence) {
  DFTIO_RUN(lseek, dftio_fd_traced(fd), off_t, DFTIO_REAL(lseek)(fd, off, whence), (DFTIO_FD_RET(fd), DFTIO_OFFSET(off)));
}
off64_t DFTIO_HOOK(lseek64)(int fd, off64_t off, int whence) {
  DFTIO_RUN(lseek64, dftio_fd_traced(fd), off64_t, DFTIO_REAL(lseek64)(fd, off, whence),
            (DFTIO_FD_RET(fd), DFTIO_OFFSET(off)));
}
int DFTIO_HOOK(fsync)(int fd) { DFTIO_RUN(fsync, dftio_fd_traced(fd), int, DFTIO_REAL(fsync)(fd), DFTIO_FD_RET(fd)); }
int DFTIO_HOOK(fdatasync)(int fd) {
  DFTIO_RUN(fdatasync, dftio_fd_traced(fd), int, DFTIO_REAL(fdatasync)(fd), DFTIO_FD_RET(fd));
}
int DFTIO_HOOK(ftruncate)(int fd, off_t len) {
  DFTIO_RUN(ftruncate, dftio_fd_traced(fd), int, DFTIO_REAL(ftruncate)(fd, len), (DFTIO_FD_RET(fd), DFTIO_SIZE(len)));
}
int DFTIO_HOOK(ftruncate64)(int fd, off64_t len) {
  DFTIO_RUN(ftruncate64, dftio_fd_traced(fd), int, DFTIO_REAL(ftruncate64)(fd, len),
            (DFTIO_FD_RET(fd), DFTIO_SIZE(len)));
}

/* ---------------------------------------------------------------- metadata */

int DFTIO_HOOK(stat)(const char* path, struct stat* st) {
  DFTIO_RUN(stat, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(stat)(path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(stat64)(const char* path, struct stat64* st) {
  DFTIO_RUN(stat64, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(stat64)(path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(lstat)(const char* path, struct stat* st) {
  DFTIO_RUN(lstat, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(lstat)(path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(lstat64)(const char* path, struct stat64* st) {
  DFTIO_RUN(lstat64, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(lstat64)(path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(fstat)(int fd, struct stat* st) {
  DFTIO_RUN(fstat, dftio_fd_traced(fd), int, DFTIO_REAL(fstat)(fd, st), DFTIO_FD_RET(fd));
}
int DFTIO_HOOK(fstat64)(int fd, struct stat64* st) {
  DFTIO_RUN(fstat64, dftio_fd_traced(fd), int, DFTIO_REAL(fstat64)(fd, st), DFTIO_FD_RET(fd));
}
/* fstatat with an empty path and AT_EMPTY_PATH is an fstat of dirfd. */
static uint64_t at_hash(int dirfd, const char* path, int flags) {
  if ((flags & AT_EMPTY_PATH) && path != NULL && path[0] == '\0') return dftio_fd_traced(dirfd);
  return DFTIO_PATH(dirfd, path);
}
int DFTIO_HOOK(fstatat)(int dirfd, const char* path, struct stat* st, int flags) {
  DFTIO_RUN(fstatat, at_hash(dirfd, path, flags), int, DFTIO_REAL(fstatat)(dirfd, path, st, flags), DFTIO_RET(r_));
}
int DFTIO_HOOK(fstatat64)(int dirfd, const char* path, struct stat64* st, int flags) {
  DFTIO_RUN(fstatat64, at_hash(dirfd, path, flags), int, DFTIO_REAL(fstatat64)(dirfd, path, st, flags),
            DFTIO_RET(r_));
}
int DFTIO_HOOK(statx)(int dirfd, const char* path, int flags, unsigned int mask, struct statx* st) {
  DFTIO_RUN(statx, at_hash(dirfd, path, flags), int, DFTIO_REAL(statx)(dirfd, path, flags, mask, st), DFTIO_RET(r_));
}
/* glibc's pre-2.33 stat entry points: the same events under their own names. */
int DFTIO_HOOK(__xstat)(int ver, const char* path, struct stat* st) {
  DFTIO_RUN(__xstat, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(__xstat)(ver, path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(__xstat64)(int ver, const char* path, struct stat64* st) {
  DFTIO_RUN(__xstat64, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(__xstat64)(ver, path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(__lxstat)(int ver, const char* path, struct stat* st) {
  DFTIO_RUN(__lxstat, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(__lxstat)(ver, path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(__lxstat64)(int ver, const char* path, struct stat64* st) {
  DFTIO_RUN(__lxstat64, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(__lxstat64)(ver, path, st), DFTIO_RET(r_));
}
int DFTIO_HOOK(__fxstat)(int ver, int fd, struct stat* st) {
  DFTIO_RUN(__fxstat, dftio_fd_traced(fd), int, DFTIO_REAL(__fxstat)(ver, fd, st), DFTIO_FD_RET(fd));
}
int DFTIO_HOOK(__fxstat64)(int ver, int fd, struct stat64* st) {
  DFTIO_RUN(__fxstat64, dftio_fd_traced(fd), int, DFTIO_REAL(__fxstat64)(ver, fd, st), DFTIO_FD_RET(fd));
}
int DFTIO_HOOK(__fxstatat)(int ver, int dirfd, const char* path, struct stat* st, int flags) {
  DFTIO_RUN(__fxstatat, at_hash(dirfd, path, flags), int, DFTIO_REAL(__fxstatat)(ver, dirfd, path, st, flags),
            DFTIO_RET(r_));
}
int DFTIO_HOOK(__fxstatat64)(int ver, int dirfd, const char* path, struct stat64* st, int flags) {
  DFTIO_RUN(__fxstatat64, at_hash(dirfd, path, flags), int, DFTIO_REAL(__fxstatat64)(ver, dirfd, path, st, flags),
            DFTIO_RET(r_));
}
int DFTIO_HOOK(access)(const char* path, int mode) {
  DFTIO_RUN(access, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(access)(path, mode), DFTIO_RET(r_));
}
int DFTIO_HOOK(mkdir)(const char* path, mode_t mode) {
  DFTIO_RUN(mkdir, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(mkdir)(path, mode), DFTIO_RET(r_));
}
int DFTIO_HOOK(rmdir)(const char* path) {
  DFTIO_RUN(rmdir, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(rmdir)(path), DFTIO_RET(r_));
}
int DFTIO_HOOK(unlink)(const char* path) {
  DFTIO_RUN(unlink, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(unlink)(path), DFTIO_RET(r_));
}
/* Traced when either name is of interest; fhash is the old name's (the new
 * name's FH is written too, so both paths are in the file). */
static uint64_t rename_hash(const char* from, const char* to) {
  if (!dftio_recording()) return 0;
  uint64_t a = dftio_path_hash(AT_FDCWD, from), b = dftio_path_hash(AT_FDCWD, to);
  return a ? a : b;
}
int DFTIO_HOOK(rename)(const char* from, const char* to) {
  DFTIO_RUN(rename, rename_hash(from, to), int, DFTIO_REAL(rename)(from, to), DFTIO_RET(r_));
}

/* ---------------------------------------------------------------- working directory */

/* The event is timed around the real call only; then, on success, the new
 * working directory is published so later relative paths resolve against it. */
static int chdir_call(const char* path) {
  DFTIO_RUN(chdir, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(chdir)(path), DFTIO_RET(r_));
}
static int fchdir_call(int fd) {
  DFTIO_RUN(fchdir, dftio_fd_traced(fd), int, DFTIO_REAL(fchdir)(fd), DFTIO_FD_RET(fd));
}
int DFTIO_HOOK(chdir)(const char* path) { return dftio_cwd_changed(chdir_call(path), path); }
/* fchdir: the directory as its open named it, when one was kept (dir_names.h). */
int DFTIO_HOOK(fchdir)(int fd) { return dftio_cwd_changed(fchdir_call(fd), dftio_dir_name(fd)); }

/* ---------------------------------------------------------------- mapping */

/* A traced mapping is remembered by address, so its munmap is traced too. */
#define DFTIO_MAPPED(fd, len, off)                                                    \
  (DFTIO_FD(fd), DFTIO_SIZE(len), DFTIO_OFFSET(off), DFTIO_RET(r_ == MAP_FAILED ? -1 : 0), \
   (r_ != MAP_FAILED ? dftio_map_remember(r_, h_) : (void)0))

void* DFTIO_HOOK(mmap)(void* addr, size_t len, int prot, int flags, int fd, off_t off) {
  DFTIO_RUN(mmap, dftio_fd_traced(fd), void*, DFTIO_REAL(mmap)(addr, len, prot, flags, fd, off),
            DFTIO_MAPPED(fd, len, off));
}
void* DFTIO_HOOK(mmap64)(void* addr, size_t len, int prot, int flags, int fd, off64_t off) {
  DFTIO_RUN(mmap64, dftio_fd_traced(fd), void*, DFTIO_REAL(mmap64)(addr, len, prot, flags, fd, off),
            DFTIO_MAPPED(fd, len, off));
}
/* The table entry is dropped whether or not we record now (size: bytes unmapped). */
static uint64_t unmap_traced(void* addr) {
  uint64_t h = dftio_map_forget(addr);
  return h && dftio_recording() ? h : 0;
}
int DFTIO_HOOK(munmap)(void* addr, size_t len) {
  DFTIO_RUN(munmap, unmap_traced(addr), int, DFTIO_REAL(munmap)(addr, len), (DFTIO_SIZE(len), DFTIO_RET(r_)));
}

/* ---------------------------------------------------------------- directories */

/* A directory stream is traced through its descriptor (dirfd). */
#define DFTIO_DIR_OPENED(d, path) \
  ((d) != NULL ? (DFTIO_FD(dirfd(d)), dftio_track(dirfd(d), h_), dftio_remember_dir(h_, AT_FDCWD, (path))) : (void)0)
/* (A helper, not the hook's own nonnull parameter: glibc takes NULL with EINVAL.) */
static int dir_fd(DIR* d) { return d != NULL ? dirfd(d) : -1; }
static uint64_t dir_traced(DIR* d) { return dftio_fd_traced(dir_fd(d)); }

DIR* DFTIO_HOOK(opendir)(const char* path) {
  DFTIO_RUN(opendir, DFTIO_PATH(AT_FDCWD, path), DIR*, DFTIO_REAL(opendir)(path),
            (DFTIO_RET(r_ != NULL ? 0 : -1), DFTIO_DIR_OPENED(r_, path)));
}
struct dirent* DFTIO_HOOK(readdir)(DIR* d) {
  DFTIO_RUN(readdir, dir_traced(d), struct dirent*, DFTIO_REAL(readdir)(d),
            (DFTIO_FD(dir_fd(d)), DFTIO_RET(r_ != NULL ? 0 : -1)));
}
struct dirent64* DFTIO_HOOK(readdir64)(DIR* d) {
  DFTIO_RUN(readdir64, dir_traced(d), struct dirent64*, DFTIO_REAL(readdir64)(d),
            (DFTIO_FD(dir_fd(d)), DFTIO_RET(r_ != NULL ? 0 : -1)));
}
int DFTIO_HOOK(closedir)(DIR* d) {
  int fd = dir_fd(d);
  uint64_t h = dftio_untrack(fd);
  DFTIO_RUN(closedir, h && dftio_recording() ? h : 0, int, DFTIO_REAL(closedir)(d), DFTIO_FD_RET(fd));
}

/* ---------------------------------------------------------------- descriptors */

/* A duplicate carries the original's fhash. */
#define DFTIO_DUPED(fd) (DFTIO_FD(fd), DFTIO_RET(r_), (r_ >= 0 ? dftio_track(r_, h_) : (void)0))

static int dup_call(int fd) { DFTIO_RUN(dup, dftio_fd_traced(fd), int, DFTIO_REAL(dup)(fd), DFTIO_DUPED(fd)); }
/* A copy made onto descriptor 2 is the program's new stderr: the tracer's
 * messages may go there (dft_stderr_replaced). Not in a vfork child. */
static inline int stderr_check(int r) {
  if (__builtin_expect(r == 2, 0) && dftio_closes_programs_fds()) dft_stderr_replaced();
  return r;
}
int DFTIO_HOOK(dup)(int fd) { return stderr_check(dup_call(fd)); }
/* dup2/dup3 close `to` and make it a copy of `fd`, only when they succeed:
 * a failed one (EBADF, dup3's EINVAL for fd == to) leaves `to` as it was,
 * traced or not. A copy of an untraced descriptor forgets what `to` was. */
#define DFTIO_DUP_ONTO(fn, fd, to, call)                          \
  uint64_t h = dftio_fd_traced(fd);                               \
  if (!h) {                                                       \
    int r = call;                                                 \
    if (r >= 0 && (fd) != (to)) dftio_untrack(to);                \
    return r;                                                     \
  }                                                               \
  DFTIO_RUN(fn, h, int, call, DFTIO_DUPED(fd))

static int dup2_call(int fd, int to) { DFTIO_DUP_ONTO(dup2, fd, to, DFTIO_REAL(dup2)(fd, to)); }
static int dup3_call(int fd, int to, int flags) { DFTIO_DUP_ONTO(dup3, fd, to, DFTIO_REAL(dup3)(fd, to, flags)); }
int DFTIO_HOOK(dup2)(int fd, int to) { return stderr_check(dup2_call(fd, to)); }
int DFTIO_HOOK(dup3)(int fd, int to, int flags) { return stderr_check(dup3_call(fd, to, flags)); }

/* fcntl's third argument is an int or a pointer; both travel in the same
 * register, so it is read and passed on as a pointer-sized word. */
#define DFTIO_FCNTL_ARG(cmd)         \
  va_list ap;                        \
  va_start(ap, cmd);                 \
  void* arg = va_arg(ap, void*);     \
  va_end(ap);
#define DFTIO_FCNTL_DONE(fd, cmd) \
  (DFTIO_FD_RET(fd), ((cmd) == F_DUPFD || (cmd) == F_DUPFD_CLOEXEC) && r_ >= 0 ? dftio_track(r_, h_) : (void)0)

int DFTIO_HOOK(fcntl)(int fd, int cmd, ...) {
  DFTIO_FCNTL_ARG(cmd)
  DFTIO_RUN(fcntl, dftio_fd_traced(fd), int, DFTIO_REAL(fcntl)(fd, cmd, arg), DFTIO_FCNTL_DONE(fd, cmd));
}
int DFTIO_HOOK(fcntl64)(int fd, int cmd, ...) {
  DFTIO_FCNTL_ARG(cmd)
  DFTIO_RUN(fcntl64, dftio_fd_traced(fd), int, DFTIO_REAL(fcntl64)(fd, cmd, arg), DFTIO_FCNTL_DONE(fd, cmd));
}

/* ---------------------------------------------------------------- _FORTIFY_SOURCE entry points */

ssize_t DFTIO_HOOK(__read_chk)(int fd, void* buf, size_t n, size_t buflen) {
  DFTIO_RUN(__read_chk, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(__read_chk)(fd, buf, n, buflen), DFTIO_DATA(fd, n));
}
ssize_t DFTIO_HOOK(__pread_chk)(int fd, void* buf, size_t n, off_t off, size_t buflen) {
  DFTIO_RUN(__pread_chk, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(__pread_chk)(fd, buf, n, off, buflen),
            (DFTIO_DATA(fd, n), DFTIO_OFFSET(off)));
}
ssize_t DFTIO_HOOK(__pread64_chk)(int fd, void* buf, size_t n, off64_t off, size_t buflen) {
  DFTIO_RUN(__pread64_chk, dftio_fd_traced(fd), ssize_t, DFTIO_REAL(__pread64_chk)(fd, buf, n, off, buflen),
            (DFTIO_DATA(fd, n), DFTIO_OFFSET(off)));
}
int DFTIO_HOOK(__open_2)(const char* path, int flags) {
  DFTIO_RUN(__open_2, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(__open_2)(path, flags), DFTIO_OPENED(r_));
}
int DFTIO_HOOK(__open64_2)(const char* path, int flags) {
  DFTIO_RUN(__open64_2, DFTIO_PATH(AT_FDCWD, path), int, DFTIO_REAL(__open64_2)(path, flags), DFTIO_OPENED(r_));
}
int DFTIO_HOOK(__openat_2)(int dirfd, const char* path, int flags) {
  DFTIO_RUN(__openat_2, DFTIO_PATH(dirfd, path), int, DFTIO_REAL(__openat_2)(dirfd, path, flags), DFTIO_OPENED(r_));
}
int DFTIO_HOOK(__openat64_2)(int dirfd, const char* path, int flags) {
  DFTIO_RUN(__openat64_2, DFTIO_PATH(dirfd, path), int, DFTIO_REAL(__openat64_2)(dirfd, path, flags),
            DFTIO_OPENED(r_));
}
