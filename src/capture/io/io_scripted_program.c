/*
 * The program io_preload_test runs under LD_PRELOAD=libdftracer_preload.so.
 * Built -O0 without fortify so every call below is a call of the libc
 * symbol the hooks replace. Modes:
 *   script IN OUT     the scripted sequence the test checks call by call;
 *                     OUT is outside DFTRACER_DATA_DIR. Exit 3 when a
 *                     call's errno was changed.
 *   threads IN N K    N threads, each K rounds of open/write/read/close
 *   fork IN           the parent and a forked child each read their own file
 *   legacy IN         glibc's __xstat family on IN/m.bin, then a traced
 *                     mmap/munmap of it and an untraced anonymous one
 *   highfd IN FD...   raises RLIMIT_NOFILE's soft limit to the hard one
 *                     (exit 77 when the hard limit is below the highest
 *                     FD), opens IN/h.bin and, through dup2 to each FD,
 *                     writes 100 bytes, preads them back and closes it
 *   chdir IN          started outside IN: chdir(IN/sub), writes "x.bin"
 *                     (10 bytes); fchdir to IN, writes "y.bin" (20);
 *                     chdir("sub"), writes "./w.bin" (30): relative paths
 *                     all, resolved against the directory of the moment
 *   dirlink IN OUT    IN/link is a symlink to the directory OUT (outside
 *                     DFTRACER_DATA_DIR): through a descriptor of
 *                     opendir(IN/link), openat(d, "a.bin") writes 40 bytes;
 *                     fchdir(d), then "b.bin" (50 bytes) relative
 */
#define _GNU_SOURCE 1
#include <dftracer/dftracer.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_calls.h" /* declares glibc's __xstat family, which its headers no longer do */

static char buf[8192];

/* A value the compiler cannot see through: in the _FORTIFY_SOURCE build it
 * makes read/pread/fread/open go through __read_chk, __pread_chk,
 * __fread_chk and __open_2 (a constant size or flags would not). */
__attribute__((noinline)) static size_t rt(size_t v) {
  __asm__ volatile("" : "+r"(v));
  return v;
}
static int errno_bad = 0;

static void expect_errno(int want, const char* what) {
  if (errno != want) {
    fprintf(stderr, "errno after %s: %d, expected %d\n", what, errno, want);
    errno_bad = 1;
  }
}

static void path(char* out, const char* dir, const char* name) { snprintf(out, 4096, "%s/%s", dir, name); }

static int script(const char* in, const char* out) {
  char a[4096], b[4096], c[4096], d[4096], missing[4096];
  path(a, in, "a.bin");
  path(b, in, "b.txt");
  path(c, out, "c.bin");
  path(d, in, "d");
  path(missing, in, "missing");
  memset(buf, 'x', sizeof buf);
  dft_id region = dft_intern_cstr("script"), cat = dft_intern_cstr("test");
  uint64_t t0 = dft_region_begin();

  int fd = open(a, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  errno = 1234; /* a successful call leaves errno alone, traced or not */
  if (write(fd, buf, 4096) != 4096) return 2;
  expect_errno(1234, "write");
  if (pwrite(fd, buf, 100, 8192) != 100) return 2;
  fsync(fd);
  close(fd);
  struct stat st;
  stat(a, &st);
  fd = open(a, (int)rt(O_RDONLY));
  if (read(fd, buf, rt(1000)) != 1000) return 2;
  lseek(fd, 0, SEEK_SET);
  if (pread(fd, buf, rt(50), 10) != 50) return 2;
  close(fd);

  FILE* f = fopen(b, "w");
  fwrite(buf, 1, 300, f);
  fputs("hello\n", f);
  fclose(f);
  f = fopen(b, "r");
  if (fread(buf, 10, rt(5), f) != 5) return 2;
  fclose(f);

  errno = 0;
  if (open(missing, O_RDONLY) != -1) return 2;
  expect_errno(ENOENT, "open of a missing file");
  mkdir(d, 0755);
  rmdir(d);
  unlink(b);

  fd = open(c, O_CREAT | O_WRONLY | O_TRUNC, 0644); /* outside DFTRACER_DATA_DIR */
  if (write(fd, buf, 10) != 10) return 2;
  close(fd);
  unlink(c);

  dft_region_end(region, cat, t0, NULL, 0);
  return errno_bad ? 3 : 0;
}

#define STAT_VER 1 /* _STAT_VER_LINUX on x86_64 */

static int legacy(const char* in) {
  char m[4096];
  path(m, in, "m.bin");
  struct stat st;
  struct stat64 st64;
  memset(buf, 'm', sizeof buf);
  int fd = open(m, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0 || write(fd, buf, 8192) != 8192) return 2;
  errno = 4321;
  if (__xstat(STAT_VER, m, &st) != 0 || st.st_size != 8192) return 2;
  expect_errno(4321, "__xstat");
  if (__xstat64(STAT_VER, m, &st64) != 0 || __lxstat(STAT_VER, m, &st) != 0 || __lxstat64(STAT_VER, m, &st64) != 0)
    return 2;
  if (__fxstat(STAT_VER, fd, &st) != 0 || __fxstat64(STAT_VER, fd, &st64) != 0) return 2;
  if (__fxstatat(STAT_VER, AT_FDCWD, m, &st, 0) != 0 || __fxstatat64(STAT_VER, AT_FDCWD, m, &st64, 0) != 0) return 2;
  void* map = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
  if (map == MAP_FAILED || ((const char*)map)[100] != 'm') return 2;
  if (munmap(map, 8192) != 0) return 2;
  void* anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (anon == MAP_FAILED || munmap(anon, 4096) != 0) return 2; /* no file: never an event */
  close(fd);
  return errno_bad ? 3 : 0;
}

static int high_fds(const char* in, char** fds, int n) {
  struct rlimit lim;
  if (getrlimit(RLIMIT_NOFILE, &lim) != 0) return 2;
  lim.rlim_cur = lim.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &lim) != 0) return 2;
  char h[4096];
  path(h, in, "h.bin");
  int fd = open(h, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0) return 2;
  for (int i = 0; i < n; ++i) {
    int to = atoi(fds[i]);
    if (lim.rlim_max != RLIM_INFINITY && (rlim_t)to >= lim.rlim_max) {
      fprintf(stderr, "RLIMIT_NOFILE hard limit %llu is below descriptor %d\n", (unsigned long long)lim.rlim_max, to);
      return 77;
    }
    if (dup2(fd, to) != to || write(to, buf, 100) != 100 || pread(to, buf, 100, 0) != 100 || close(to) != 0) return 2;
  }
  return close(fd);
}

static int write_relative(const char* name, size_t n) {
  int fd = open(name, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || write(fd, buf, n) != (ssize_t)n) return 2;
  return close(fd);
}

static int change_dirs(const char* in) {
  char sub[4096];
  path(sub, in, "sub");
  if (mkdir(sub, 0755) != 0 || chdir(sub) != 0 || write_relative("x.bin", 10) != 0) return 2;
  int d = open(in, O_RDONLY | O_DIRECTORY);
  if (d < 0 || fchdir(d) != 0 || close(d) != 0 || write_relative("y.bin", 20) != 0) return 2;
  if (chdir("sub") != 0 || write_relative("./w.bin", 30) != 0) return 2;
  return 0;
}

static int through_a_linked_directory(const char* in, const char* out) {
  char link[4096];
  path(link, in, "link");
  if (symlink(out, link) != 0) return 2;
  DIR* dir = opendir(link);
  if (dir == NULL) return 2;
  int fd = openat(dirfd(dir), "a.bin", O_CREAT | O_WRONLY | O_TRUNC, 0644);
  if (fd < 0 || write(fd, buf, 40) != 40 || close(fd) != 0) return 2;
  if (fchdir(dirfd(dir)) != 0 || write_relative("b.bin", 50) != 0) return 2;
  return closedir(dir);
}

static const char* g_in;
static int g_rounds;

static void* io_thread(void* arg) {
  char p[4096], name[64], mine[512]; /* each thread its own buffer */
  memset(mine, 'z', sizeof mine);
  snprintf(name, sizeof name, "t%ld.bin", (long)(intptr_t)arg);
  path(p, g_in, name);
  for (int i = 0; i < g_rounds; ++i) {
    int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
    if (write(fd, mine, 512) != 512 || pread(fd, mine, 512, 0) != 512) abort();
    close(fd);
  }
  return NULL;
}

static int threads(const char* in, int n, int rounds) {
  g_in = in;
  g_rounds = rounds;
  pthread_t t[64];
  if (n > 64) n = 64;
  for (int i = 0; i < n; ++i) pthread_create(&t[i], NULL, io_thread, (void*)(intptr_t)i);
  for (int i = 0; i < n; ++i) pthread_join(t[i], NULL);
  return 0;
}

static int read_file(const char* in, const char* name, size_t n) {
  char p[4096];
  path(p, in, name);
  int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (write(fd, buf, n) != (ssize_t)n || pread(fd, buf, n, 0) != (ssize_t)n) return 2;
  return close(fd);
}

static int forked(const char* in) {
  pid_t pid = fork();
  if (pid == 0) exit(read_file(in, "child.bin", 333)); /* exit, not _exit: atexit finalizes the trace */
  int rc = read_file(in, "parent.bin", 222), status = 0;
  waitpid(pid, &status, 0);
  return rc != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

/* Calls that fail, where libc says why: the program gets the same errors as
 * untraced and nothing crashes (NULL paths, an unreadable iovec array), and a
 * failed dup2/dup3 onto a traced descriptor leaves it traced. Exit status 0
 * when every check held, else the number of the first that did not. */
static volatile uintptr_t g_bad_iov = 8; /* an unreadable address, unknown to the compiler */
static int failing_calls(const char* in) {
  char p[4096];
  path(p, in, "edges.bin");
  int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0 || write(fd, buf, 100) != 100) return 2;
  errno = 0;
  if (dup2(9999, fd) != -1 || errno != EBADF) return 3;
  errno = 0;
  if (dup3(fd, fd, 0) != -1 || errno != EINVAL) return 4;
  if (pread(fd, buf, 100, 0) != 100) return 5;
  errno = 0;
  if (readv(fd, (const struct iovec*)(uintptr_t)g_bad_iov, 1) != -1 || errno != EFAULT) return 6;
  const char* volatile none = NULL; /* volatile: no compile-time NULL for the nonnull warnings */
  struct stat st;
  errno = 0;
  if (open(none, O_RDONLY) != -1 || errno != EFAULT) return 7;
  errno = 0;
  if (openat(AT_FDCWD, none, O_RDONLY) != -1 || errno != EFAULT) return 8;
  errno = 0;
  if (stat(none, &st) != -1 || errno != EFAULT) return 9;
  errno = 0;
  if (access(none, R_OK) != -1 || errno != EFAULT) return 10;
  errno = 0;
  if (mkdir(none, 0755) != -1 || errno != EFAULT) return 11;
  errno = 0;
  if (unlink(none) != -1 || errno != EFAULT) return 12;
  errno = 0;
  if (chdir(none) != -1 || errno != EFAULT) return 13;
  return close(fd) == 0 ? 0 : 14;
}

/* Descriptors closed by close_range and closefrom are forgotten: the next
 * file to get the number (outside the data dir, or a pipe) is not recorded
 * under the closed file's name. close_range(CLOSE_RANGE_CLOEXEC) closes
 * nothing, and its descriptor stays traced. */
static int closed_in_bulk(const char* in, const char* out) {
  char a[4096], b[4096], c[4096], d[4096];
  path(a, in, "a.bin");
  path(b, out, "b.bin");
  path(c, in, "c.bin");
  path(d, in, "d.bin");
  int fd = open(a, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0 || write(fd, buf, 10) != 10 || close_range((unsigned)fd, (unsigned)fd, 0) != 0) return 2;
  int fb = open(b, O_CREAT | O_RDWR | O_TRUNC, 0644); /* outside: gets fd's number */
  if (fb != fd || write(fb, buf, 20) != 20 || close(fb) != 0) return 3;
  int fc = open(c, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fc < 0 || write(fc, buf, 30) != 30) return 4;
  closefrom(fc);
  int p[2];
  if (pipe(p) != 0 || p[0] != fc || write(p[1], buf, 40) != 40 || read(p[0], buf, 40) != 40) return 5;
  close(p[0]);
  close(p[1]);
  int fd2 = open(d, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd2 < 0 || close_range((unsigned)fd2, (unsigned)fd2, CLOSE_RANGE_CLOEXEC) != 0) return 6;
  if (write(fd2, buf, 50) != 50 || close(fd2) != 0) return 7;
  return 0;
}

/* A descriptor opened before a fork, read in the child: the child's own
 * trace file names it by FH. */
static int inherited(const char* in) {
  char p[4096];
  path(p, in, "inherited.bin");
  int fd = open(p, O_CREAT | O_RDWR | O_TRUNC, 0644);
  if (fd < 0 || write(fd, buf, 100) != 100) return 2;
  pid_t pid = fork();
  if (pid == 0) exit(pread(fd, buf, 60, 0) == 60 ? 0 : 3); /* exit: atexit finalizes the child's trace */
  int status = 0;
  waitpid(pid, &status, 0);
  return close(fd) != 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
}

int main(int argc, char** argv) {
  if (argc >= 4 && strcmp(argv[1], "script") == 0) return script(argv[2], argv[3]);
  if (argc >= 5 && strcmp(argv[1], "threads") == 0) return threads(argv[2], atoi(argv[3]), atoi(argv[4]));
  if (argc >= 3 && strcmp(argv[1], "fork") == 0) return forked(argv[2]);
  if (argc >= 3 && strcmp(argv[1], "legacy") == 0) return legacy(argv[2]);
  if (argc >= 4 && strcmp(argv[1], "highfd") == 0) return high_fds(argv[2], argv + 3, argc - 3);
  if (argc >= 3 && strcmp(argv[1], "chdir") == 0) return change_dirs(argv[2]);
  if (argc >= 4 && strcmp(argv[1], "dirlink") == 0) return through_a_linked_directory(argv[2], argv[3]);
  if (argc >= 3 && strcmp(argv[1], "failing") == 0) return failing_calls(argv[2]);
  if (argc >= 4 && strcmp(argv[1], "closerange") == 0) return closed_in_bulk(argv[2], argv[3]);
  if (argc >= 3 && strcmp(argv[1], "inherit") == 0) return inherited(argv[2]);
  fprintf(stderr,
          "usage: %s script IN OUT | threads IN N K | fork IN | legacy IN | highfd IN FD... | chdir IN | dirlink IN OUT"
          " | failing IN | closerange IN OUT | inherit IN\n",
          argv[0]);
  return 64;
}
