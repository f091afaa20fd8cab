/*
 * Where a traced read()'s added cost goes: the parts of a hook timed
 * one by one, in one process with tracing on, thread CPU ns per iteration.
 *
 *   hook_parts_bench FILE N ROUNDS      (DFTRACER_ENABLE=1; run_io_bench.py
 *                                        runs it after its table)
 *
 * Each case is a loop of N iterations, the cases interleaved round after
 * round; the medians are printed. The record is the core's public
 * dft_complete_ticks with a read hook's four args (fhash, fd, size, ret),
 * as dftio_record passes them; "noop" is a function that makes no syscall, so
 *   (clock+read+clock+record - read) vs (clock+noop+clock+record - noop)
 * shows what running next to a real syscall adds to the clock reads and the
 * record (cold predictors and caches after the kernel transition).
 */
#define _GNU_SOURCE 1
#include <dftracer/dftracer.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

enum { kCases = 6, kMaxRounds = 64 };
static const char* const kNames[kCases] = {
    "read",  "clock+read+clock", "clock+read+clock+record", "record (after read)",
    "noop", "clock+noop+clock+record"};

static dft_id g_name, g_cat, g_key[4];
static volatile uint64_t g_sink;

static double cpu_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

__attribute__((noinline)) static ssize_t noop(int fd, void* buf, size_t n) {
  __asm__ volatile("" : : "r"(buf), "r"(fd) : "memory");
  return (ssize_t)n;
}

static void record(uint64_t t0, uint64_t t1, int fd, size_t n, ssize_t r) {
  dft_arg a[4];
  a[0].key = g_key[0], a[0].type = DFT_ARG_HASH, a[0].v.u = 0x9e3779b97f4a7c15ull;
  a[1].key = g_key[1], a[1].type = DFT_ARG_INT, a[1].v.i = fd;
  a[2].key = g_key[2], a[2].type = DFT_ARG_INT, a[2].v.i = (int64_t)n;
  a[3].key = g_key[3], a[3].type = DFT_ARG_INT, a[3].v.i = r;
  dft_complete_ticks(g_name, g_cat, t0, t1, a, 4);
}

static int cmp(const void* a, const void* b) {
  double x = *(const double*)a, y = *(const double*)b;
  return (x > y) - (x < y);
}

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: %s FILE N ROUNDS\n", argv[0]);
    return 64;
  }
  long n = atol(argv[2]);
  int rounds = atoi(argv[3]);
  if (rounds < 1 || rounds > kMaxRounds) rounds = kMaxRounds;
  dft_init_from_env();
  if (!dft_enabled()) {
    fprintf(stderr, "tracing is off (DFTRACER_ENABLE=1?)\n");
    return 2;
  }
  g_name = dft_intern_cstr("read");
  g_cat = dft_intern_cstr("POSIX");
  const char* keys[4] = {"fhash", "fd", "size", "ret"};
  for (int i = 0; i < 4; ++i) g_key[i] = dft_intern_cstr(keys[i]);
  static char buf[4096];
  int fd = open(argv[1], O_RDONLY);
  if (fd < 0) return 3;
  static double ns[kCases][kMaxRounds];
  for (int r = 0; r < rounds; ++r) {
    for (int c = 0; c < kCases; ++c) {
      lseek(fd, 0, SEEK_SET);
      double c0 = cpu_ns();
      for (long i = 0; i < n; ++i) {
        ssize_t got;
        uint64_t t0, t1;
        switch (c) {
          case 0: got = read(fd, buf, sizeof buf); break;
          case 1: t0 = __rdtsc(); got = read(fd, buf, sizeof buf); t1 = __rdtsc(); g_sink = t1 - t0; break;
          case 2: t0 = __rdtsc(); got = read(fd, buf, sizeof buf); t1 = __rdtsc(); record(t0, t1, fd, sizeof buf, got); break;
          case 3: got = read(fd, buf, sizeof buf); record((uint64_t)i, (uint64_t)i + 1, fd, sizeof buf, got); break;
          case 4: got = noop(fd, buf, sizeof buf); break;
          default: t0 = __rdtsc(); got = noop(fd, buf, sizeof buf); t1 = __rdtsc(); record(t0, t1, fd, sizeof buf, got); break;
        }
        if (got != (ssize_t)sizeof buf) lseek(fd, 0, SEEK_SET); /* wrap at end of file */
      }
      ns[c][r] = (cpu_ns() - c0) / n;
    }
  }
  close(fd);
  for (int c = 0; c < kCases; ++c) {
    qsort(ns[c], (size_t)rounds, sizeof(double), cmp);
    printf("%-26s %8.1f ns\n", kNames[c], ns[c][rounds / 2]);
  }
  dft_finalize();
  return 0;
}
