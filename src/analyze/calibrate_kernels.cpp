#include "calibrate_kernels.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <functional>
#include <thread>
#include <vector>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

namespace dftracer::analyze {

namespace {

double steady_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// CPU seconds this thread has run: the clock a wrong wall reading cannot fool.
double thread_cpu_now() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Seconds taken by running `work(t)` on `threads` threads at once, read on
// `wall_now` and checked against each thread's own CPU time: every thread
// ran inside the wall interval, so the interval is at least the longest
// thread's CPU time. A wall reading below that (a clock that jumped, a
// trial shorter than the clock's resolution) would turn into a peak no
// machine reaches, so the CPU time is used instead, with one warning.
double timed_parallel(unsigned threads, const std::function<void(unsigned)>& work, WallClock wall_now,
                      bool& warned) {
  std::vector<double> cpu(threads, 0.0);
  auto timed_work = [&](unsigned t) {
    const double c0 = thread_cpu_now();
    work(t);
    cpu[t] = thread_cpu_now() - c0;
  };
  std::vector<std::thread> pool;
  const double t0 = wall_now();
  for (unsigned t = 1; t < threads; ++t) pool.emplace_back(timed_work, t);
  timed_work(0);
  for (std::thread& th : pool) th.join();
  const double wall = wall_now() - t0;
  const double longest_cpu = *std::max_element(cpu.begin(), cpu.end());
  if (wall < 0.95 * longest_cpu) {  // 5 %: the two clocks' own granularity
    if (!warned)
      std::fprintf(stderr,
                   "dftracer-analyze: calibrate: a trial's wall time (%.6f s) was shorter than one thread's "
                   "CPU time (%.6f s); used the CPU time instead\n",
                   wall, longest_cpu);
    warned = true;
    return longest_cpu;
  }
  return wall;
}

// The matmul is a register-blocked micro-kernel over packed panels, the
// shape BLAS libraries use (a 6 x 16 block of C in 12 vector registers), so
// it reaches most of the FMA units' rate: a naive triple loop would measure
// the memory system instead and make every op look faster than "peak".
constexpr int kMr = 6, kNr = 16, kK = 256;   // one A panel 6 KiB, one B panel 16 KiB (L1)
constexpr int kPanelsA = 32, kPanelsB = 32;  // C: 192 x 512 per thread

#if defined(__AVX2__) && defined(__FMA__)
void micro_kernel(const float* a, const float* b, float* c, int ldc) {
  __m256 acc[kMr][2];
  for (int i = 0; i < kMr; ++i) {
    acc[i][0] = _mm256_loadu_ps(c + i * ldc);
    acc[i][1] = _mm256_loadu_ps(c + i * ldc + 8);
  }
  for (int k = 0; k < kK; ++k) {
    const __m256 b0 = _mm256_loadu_ps(b + kNr * k), b1 = _mm256_loadu_ps(b + kNr * k + 8);
    for (int i = 0; i < kMr; ++i) {
      const __m256 ai = _mm256_broadcast_ss(a + kMr * k + i);
      acc[i][0] = _mm256_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm256_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < kMr; ++i) {
    _mm256_storeu_ps(c + i * ldc, acc[i][0]);
    _mm256_storeu_ps(c + i * ldc + 8, acc[i][1]);
  }
}
#else
// Portable build (DFTRACER_ANALYZE_ARCH=""): the same blocking, scalar code
// the compiler vectorizes as far as its target allows.
void micro_kernel(const float* a, const float* b, float* c, int ldc) {
  float acc[kMr][kNr];
  for (int i = 0; i < kMr; ++i) std::memcpy(acc[i], c + i * ldc, sizeof acc[i]);
  for (int k = 0; k < kK; ++k)
    for (int i = 0; i < kMr; ++i)
      for (int j = 0; j < kNr; ++j) acc[i][j] += a[kMr * k + i] * b[kNr * k + j];
  for (int i = 0; i < kMr; ++i) std::memcpy(c + i * ldc, acc[i], sizeof acc[i]);
}
#endif

struct MatmulBuffers {
  std::vector<float> a = std::vector<float>(size_t{kPanelsA} * kMr * kK, 0.001f);
  std::vector<float> b = std::vector<float>(size_t{kPanelsB} * kNr * kK, 0.002f);
  std::vector<float> c = std::vector<float>(size_t{kPanelsA} * kMr * kPanelsB * kNr, 0.0f);
  void pass() {
    const int ldc = kPanelsB * kNr;
    for (int jp = 0; jp < kPanelsB; ++jp)    // one B panel stays in L1
      for (int ip = 0; ip < kPanelsA; ++ip)  // A panels stream from L2
        micro_kernel(a.data() + size_t{kMr} * kK * ip, b.data() + size_t{kNr} * kK * jp,
                     c.data() + size_t{kMr} * ip * ldc + size_t{kNr} * jp, ldc);
  }
};

constexpr double kFlopsPerPass = 2.0 * kPanelsA * kMr * kPanelsB * kNr * kK;

}  // namespace

double measure_matmul_gflops(unsigned threads, WallClock wall_now) {
  threads = std::max(1u, threads);
  if (!wall_now) wall_now = steady_now;
  bool warned = false;
  std::vector<MatmulBuffers> bufs(threads);
  // Enough passes for a trial of >= 0.15 s, then the best of three trials:
  // other processes on the machine only ever make a trial slower.
  int passes = 4;
  double secs = 0;
  auto trial = [&](unsigned t) {
    for (int p = 0; p < passes; ++p) bufs[t].pass();
  };
  while ((secs = timed_parallel(threads, trial, wall_now, warned)) < 0.15 &&
         passes < (1 << 20))
    passes *= 2;
  double best = secs;
  for (int i = 0; i < 3; ++i) best = std::min(best, timed_parallel(threads, trial, wall_now, warned));
  volatile float sink = 0;
  for (const MatmulBuffers& b : bufs) sink = sink + b.c[0];  // the results are used
  return kFlopsPerPass * passes * threads / best * 1e-9;
}

double measure_triad_gbps(unsigned threads, WallClock wall_now) {
  threads = std::max(1u, threads);
  if (!wall_now) wall_now = steady_now;
  bool warned = false;
  // 3 x 64 MiB in all: far beyond any last-level cache.
  const size_t n = (size_t{64} << 20) / sizeof(float);
  std::vector<float> a(n), b(n, 1.0f), c(n, 2.0f);
  const size_t per = (n + threads - 1) / threads;
  const float s = 0.5f;
  auto sweep = [&](unsigned t) {
    const size_t lo = std::min(n, per * t), hi = std::min(n, lo + per);
    float* __restrict pa = a.data();
    const float* __restrict pb = b.data();
    const float* __restrict pc = c.data();
    for (size_t i = lo; i < hi; ++i) pa[i] = pb[i] + s * pc[i];
  };
  timed_parallel(threads, sweep, wall_now, warned);  // first touch of `a`
  double best = 1e30;
  for (int trial = 0; trial < 8; ++trial) best = std::min(best, timed_parallel(threads, sweep, wall_now, warned));
  volatile float sink = a[n / 2];
  (void)sink;
  return 12.0 * static_cast<double>(n) / best * 1e-9;
}

}  // namespace dftracer::analyze
