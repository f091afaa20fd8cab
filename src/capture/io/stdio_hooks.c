/*
 * STDIO hooks: cat "STDIO". A stream is traced through its descriptor
 * (fileno), so fopen/fdopen and the POSIX hooks share one table. fread and
 * fwrite: size is the bytes asked (size x count) and ret the bytes moved
 * (items returned x size), so every data call's ret is in bytes; DFTracer's
 * fread/fwrite write the element size and count instead.
 */
#define _GNU_SOURCE 1
#include <stdio.h>
#include <fcntl.h>
#include <string.h>

#include "io_hook.h"

static uint64_t stream_traced(FILE* f) { return f != NULL ? dftio_fd_traced(fileno_unlocked(f)) : 0; }
static int64_t stream_fd(FILE* f) { return f != NULL ? fileno_unlocked(f) : -1; }

#define DFTIO_STREAM_OPENED(f) \
  (DFTIO_RET((f) != NULL ? 0 : -1), (f) != NULL ? (DFTIO_FD(fileno_unlocked(f)), dftio_track(fileno_unlocked(f), h_)) : (void)0)

FILE* DFTIO_HOOK(fopen)(const char* path, const char* mode) {
  DFTIO_RUN(fopen, dftio_recording() ? dftio_path_hash(AT_FDCWD, path) : 0, FILE*,
            DFTIO_REAL(fopen)(path, mode), DFTIO_STREAM_OPENED(r_));
}
FILE* DFTIO_HOOK(fopen64)(const char* path, const char* mode) {
  DFTIO_RUN(fopen64, dftio_recording() ? dftio_path_hash(AT_FDCWD, path) : 0, FILE*,
            DFTIO_REAL(fopen64)(path, mode), DFTIO_STREAM_OPENED(r_));
}
FILE* DFTIO_HOOK(fdopen)(int fd, const char* mode) {
  DFTIO_RUN(fdopen, dftio_fd_traced(fd), FILE*, DFTIO_REAL(fdopen)(fd, mode), DFTIO_STREAM_OPENED(r_));
}
int DFTIO_HOOK(fclose)(FILE* f) {
  int64_t fd = stream_fd(f);
  uint64_t h = fd >= 0 ? dftio_untrack((int)fd) : 0;
  DFTIO_RUN(fclose, h && dftio_recording() ? h : 0, int, DFTIO_REAL(fclose)(f), (DFTIO_FD(fd), DFTIO_RET(r_)));
}

#define DFTIO_ITEMS(f, size, n) (DFTIO_FD(stream_fd(f)), DFTIO_SIZE((size) * (n)), DFTIO_RET(r_ * (size)))

size_t DFTIO_HOOK(fread)(void* buf, size_t size, size_t n, FILE* f) {
  DFTIO_RUN(fread, stream_traced(f), size_t, DFTIO_REAL(fread)(buf, size, n, f), DFTIO_ITEMS(f, size, n));
}
size_t DFTIO_HOOK(fwrite)(const void* buf, size_t size, size_t n, FILE* f) {
  DFTIO_RUN(fwrite, stream_traced(f), size_t, DFTIO_REAL(fwrite)(buf, size, n, f), DFTIO_ITEMS(f, size, n));
}

#define DFTIO_STREAM_RET(f) (DFTIO_FD(stream_fd(f)), DFTIO_RET(r_))

int DFTIO_HOOK(fseek)(FILE* f, long off, int whence) {
  DFTIO_RUN(fseek, stream_traced(f), int, DFTIO_REAL(fseek)(f, off, whence), (DFTIO_STREAM_RET(f), DFTIO_OFFSET(off)));
}
int DFTIO_HOOK(fseeko)(FILE* f, off_t off, int whence) {
  DFTIO_RUN(fseeko, stream_traced(f), int, DFTIO_REAL(fseeko)(f, off, whence), (DFTIO_STREAM_RET(f), DFTIO_OFFSET(off)));
}
int DFTIO_HOOK(fseeko64)(FILE* f, off64_t off, int whence) {
  DFTIO_RUN(fseeko64, stream_traced(f), int, DFTIO_REAL(fseeko64)(f, off, whence),
            (DFTIO_STREAM_RET(f), DFTIO_OFFSET(off)));
}
long DFTIO_HOOK(ftell)(FILE* f) { DFTIO_RUN(ftell, stream_traced(f), long, DFTIO_REAL(ftell)(f), DFTIO_STREAM_RET(f)); }
off_t DFTIO_HOOK(ftello)(FILE* f) {
  DFTIO_RUN(ftello, stream_traced(f), off_t, DFTIO_REAL(ftello)(f), DFTIO_STREAM_RET(f));
}
off64_t DFTIO_HOOK(ftello64)(FILE* f) {
  DFTIO_RUN(ftello64, stream_traced(f), off64_t, DFTIO_REAL(ftello64)(f), DFTIO_STREAM_RET(f));
}
/* fgets: ret is the length of the line read, -1 at end of file or error. */
char* DFTIO_HOOK(fgets)(char* s, int n, FILE* f) {
  DFTIO_RUN(fgets, stream_traced(f), char*, DFTIO_REAL(fgets)(s, n, f),
            (DFTIO_FD(stream_fd(f)), DFTIO_SIZE(n), DFTIO_RET(r_ != NULL ? (int64_t)strlen(r_) : -1)));
}
int DFTIO_HOOK(fputs)(const char* s, FILE* f) {
  DFTIO_RUN(fputs, stream_traced(f), int, DFTIO_REAL(fputs)(s, f), (DFTIO_STREAM_RET(f), DFTIO_SIZE(strlen(s))));
}
int DFTIO_HOOK(fflush)(FILE* f) {
  DFTIO_RUN(fflush, stream_traced(f), int, DFTIO_REAL(fflush)(f), DFTIO_STREAM_RET(f));
}

/* _FORTIFY_SOURCE entry points: the same events as fread and fgets. */
size_t DFTIO_HOOK(__fread_chk)(void* buf, size_t buflen, size_t size, size_t n, FILE* f) {
  DFTIO_RUN(__fread_chk, stream_traced(f), size_t, DFTIO_REAL(__fread_chk)(buf, buflen, size, n, f),
            DFTIO_ITEMS(f, size, n));
}
char* DFTIO_HOOK(__fgets_chk)(char* s, size_t size, int n, FILE* f) {
  DFTIO_RUN(__fgets_chk, stream_traced(f), char*, DFTIO_REAL(__fgets_chk)(s, size, n, f),
            (DFTIO_FD(stream_fd(f)), DFTIO_SIZE(n), DFTIO_RET(r_ != NULL ? (int64_t)strlen(r_) : -1)));
}
