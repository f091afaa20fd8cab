/*
 * Cost of one traced I/O call: read() of 4 KiB from the page cache and an
 * open()/close() pair, timed over many calls in one thread. Run by
 * run_io_bench.py under each configuration (untraced, our PRELOAD, our
 * FUNCTION, DFTracer's own preload library), which prints the table.
 *
 *   io_call_bench MODE FILE N     MODE: plain | thread | function
 *
 * `function` starts tracing from the environment and calls dft_io_install()
 * (what `import dftracer` does); `plain` does nothing itself (a preload
 * library, if any, does its own start-up); `thread` is `plain` plus one idle
 * thread. Prints one line of key=value.
 *
 * Why `thread`: once a process has a second thread sharing its descriptor
 * table, Linux takes the slow path on every descriptor call (fdget takes a
 * reference atomically, and read/write/lseek lock the file position), about
 * 55 ns more per read() on the project's VM. Tracing starts a writer thread,
 * so part of what tracing adds to a single-threaded program is that kernel
 * cost, not the hook's; `thread` measures it on its own.
 */
#define _GNU_SOURCE 1
#include <dftracer/dftracer.h>
#include <dftracer/io.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now_ns(clockid_t c) {
  struct timespec t;
  clock_gettime(c, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void* idle_thread(void* arg) {
  (void)arg;
  for (;;) pause();
  return NULL;
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s plain|thread|function FILE N\n", argv[0]);
    return 64;
  }
  const char* file = argv[2];
  long n = atol(argv[3]);
  if (strcmp(argv[1], "thread") == 0) {
    pthread_t t;
    if (pthread_create(&t, NULL, idle_thread, NULL) != 0) return 4;
  }
  if (strcmp(argv[1], "function") == 0) {
    dft_init_from_env();
    if (dft_io_install() != DFT_IO_FUNCTION) {
      fprintf(stderr, "FUNCTION mode did not start (DFTRACER_ENABLE=1?)\n");
      return 2;
    }
  }
  static char buf[4096];
  int fd = open(file, O_RDONLY);
  if (fd < 0) return 3;
  while (read(fd, buf, sizeof buf) > 0) {  /* warm the page cache */
  }
  lseek(fd, 0, SEEK_SET);

  double w0 = now_ns(CLOCK_MONOTONIC), c0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  for (long i = 0; i < n; ++i) {
    if (read(fd, buf, sizeof buf) != (ssize_t)sizeof buf) lseek(fd, 0, SEEK_SET); /* wrap at end of file */
  }
  double w1 = now_ns(CLOCK_MONOTONIC), c1 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  close(fd);
  long pairs = n / 4;
  for (long i = 0; i < pairs; ++i) close(open(file, O_RDONLY));
  double w2 = now_ns(CLOCK_MONOTONIC), c2 = now_ns(CLOCK_THREAD_CPUTIME_ID);
  printf("read_wall_ns=%.1f read_cpu_ns=%.1f openclose_wall_ns=%.1f openclose_cpu_ns=%.1f\n", (w1 - w0) / n,
         (c1 - c0) / n, (w2 - w1) / pairs, (c2 - c1) / pairs);
  return 0;
}
