/*
 * The program preload_test.cc runs under strace -i to see where each traced
 * open and close issues its system call (direct_syscall.h): from our
 * library (the direct call) or from libc (glibc's wrapper).
 *
 *   io_direct_program <data_dir> <maps_out>
 *
 * Prints "direct N" (dft_io_direct_syscalls) before and after the
 * pthread_cancel, and "cancelled 1" when a thread blocked in a traced open
 * of a FIFO was cancelled. Copies /proc/self/maps to <maps_out> at the end,
 * so the test can tell which object each address belongs to.
 */
#define _GNU_SOURCE 1
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int direct_now(void) {
  int (*f)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "dft_io_direct_syscalls");
  return f != NULL ? f() : -1;
}

static int open_close(const char* path, int flags) {
  int fd = open(path, flags, 0644);
  if (fd < 0) return -1;
  return close(fd);
}

static volatile pid_t fifo_tid;

static void* open_fifo_for_reading(void* path) {
  fifo_tid = (pid_t)syscall(SYS_gettid);
  int fd = open((const char*)path, O_RDONLY); /* no writer ever comes: blocks until cancelled */
  return (void*)(long)fd;
}

/* Waits (10 s at most) until thread `tid` is blocked in the openat system
 * call: cancelled before it, it would never issue the call the test looks
 * for (a loaded machine under strace can take longer than any fixed sleep). */
static void wait_blocked_in_openat(void) {
  for (int i = 0; i < 1000; ++i) {
    char path[64], buf[64] = {0};
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)fifo_tid);
    FILE* f = fifo_tid != 0 ? fopen(path, "r") : NULL;
    if (f != NULL) {
      const int ok = fgets(buf, sizeof buf, f) != NULL;
      fclose(f);
      if (ok && atol(buf) == SYS_openat) return; /* "running" reads as 0 */
    }
    usleep(10 * 1000);
  }
}

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  char plain[4096], fifo[4096];
  snprintf(plain, sizeof plain, "%s/plain.bin", argv[1]);
  snprintf(fifo, sizeof fifo, "%s/fifo", argv[1]);

  /* 1. The path's first open: glibc's wrapper; it learns "regular file". */
  if (open_close(plain, O_CREAT | O_WRONLY) != 0) return 3;
  printf("direct %d\n", direct_now());
  /* 2. Known regular file: the direct system calls (open, open64, openat). */
  for (int i = 0; i < 3; ++i)
    if (open_close(plain, O_RDONLY) != 0) return 4;
  int fd = openat(AT_FDCWD, plain, O_RDONLY);
  if (fd < 0 || close(fd) != 0) return 5;
  /* 3. A FIFO (O_RDWR does not wait for a peer): learned "special" at the
   *    first open, so both opens and closes keep glibc's wrapper. */
  if (mkfifo(fifo, 0600) != 0) return 6;
  for (int i = 0; i < 2; ++i)
    if (open_close(fifo, O_RDWR) != 0) return 7;
  /* 4. A thread blocked in a traced open of that FIFO can be cancelled. */
  pthread_t t;
  if (pthread_create(&t, NULL, open_fifo_for_reading, fifo) != 0) return 8;
  wait_blocked_in_openat();
  pthread_cancel(t);
  struct timespec deadline;
  clock_gettime(CLOCK_REALTIME, &deadline);
  deadline.tv_sec += 10;
  void* res = NULL;
  int joined = pthread_timedjoin_np(t, &res, &deadline);
  printf("cancelled %d\n", joined == 0 && res == PTHREAD_CANCELED);
  /* 5. After a pthread_cancel, every open and close is glibc's again. */
  printf("direct %d\n", direct_now());
  if (open_close(plain, O_RDONLY) != 0) return 9;
  fflush(stdout);

  FILE* in = fopen("/proc/self/maps", "r");
  FILE* out = fopen(argv[2], "w");
  if (in == NULL || out == NULL) return 10;
  char line[4096];
  while (fgets(line, sizeof line, in) != NULL) fputs(line, out);
  fclose(in);
  fclose(out);
  return 0;
}
