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

// The CPU time the threads of the trials got, against what they could have
// got (threads x wall): the share a loaded machine lowers.
struct CpuShare {
  double cpu = 0, possible = 0;
  double share() const { return possible > 0 ? cpu / possible : 1.0; }
};

// Seconds taken by running `work(t)` on `threads` threads at once, read on
// `wall_now` and checked against each thread's own CPU time: every thread
// ran inside the wall interval, so the interval is at least the longest
// thread's CPU time. A wall reading below that (a clock that jumped, a
// trial shorter than the clock's resolution) would turn into a peak no
// machine reaches, so the CPU time is used instead, with one warning.
double timed_parallel(unsigned threads, const std::function<void(unsigned)>& work, WallClock wall_now,
                      bool& warned, CpuShare& share) {
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
  for (double c : cpu) share.cpu += c;
  if (wall < 0.95 * longest_cpu) {  // 5 %: the two clocks' own granularity
    if (!warned)
      std::fprintf(stderr,
                   "dftracer-analyze: calibrate: a trial's wall time (%.6f s) was shorter than one thread's "
                   "CPU time (%.6f s); used the CPU time instead\n",
                   wall, longest_cpu);
    warned = true;
    share.possible += threads * longest_cpu;
    return longest_cpu;
  }
  share.possible += threads * wall;
  return wall;
}

// The matmul is a register-blocked micro-kernel over packed panels, the
// shape BLAS libraries use (an Mr x Nr block of C held in vector registers),
// so it reaches most of the FMA units' rate: a naive triple loop would
// measure the memory system instead and make every op look faster than
// "peak". Two variants: 6 x 16 in 12 AVX2 registers, and, where the CPU has
// AVX-512 (picked at run time: the library is built for x86-64-v3), 8 x 32
// in 16 ZMM registers, which is twice the AVX2 kernel's rate on such a CPU.
constexpr int kK = 256;                       // one A panel 6-8 KiB, one B panel 16-32 KiB (L1)
constexpr int kRowsC = 192, kColsC = 512;     // C per thread (rows: a multiple of 6 and 8)

#if defined(__AVX2__) && defined(__FMA__)
constexpr int kMr = 6, kNr = 16;
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
#define DFTRACER_CALIBRATE_AVX2 1
#else
// Portable build (DFTRACER_ANALYZE_ARCH=""): the same blocking, scalar code
// the compiler vectorizes as far as its target allows.
constexpr int kMr = 6, kNr = 16;
void micro_kernel(const float* a, const float* b, float* c, int ldc) {
  float acc[kMr][kNr];
  for (int i = 0; i < kMr; ++i) std::memcpy(acc[i], c + i * ldc, sizeof acc[i]);
  for (int k = 0; k < kK; ++k)
    for (int i = 0; i < kMr; ++i)
      for (int j = 0; j < kNr; ++j) acc[i][j] += a[kMr * k + i] * b[kNr * k + j];
  for (int i = 0; i < kMr; ++i) std::memcpy(c + i * ldc, acc[i], sizeof acc[i]);
}
#endif

#if defined(__x86_64__) && defined(__GNUC__)
#define DFTRACER_CALIBRATE_AVX512 1
constexpr int kMr512 = 8, kNr512 = 32;
__attribute__((target("avx512f"))) void micro_kernel_avx512(const float* a, const float* b, float* c, int ldc) {
  __m512 acc[kMr512][2];
  for (int i = 0; i < kMr512; ++i) {
    acc[i][0] = _mm512_loadu_ps(c + i * ldc);
    acc[i][1] = _mm512_loadu_ps(c + i * ldc + 16);
  }
  for (int k = 0; k < kK; ++k) {
    const __m512 b0 = _mm512_loadu_ps(b + kNr512 * k), b1 = _mm512_loadu_ps(b + kNr512 * k + 16);
    for (int i = 0; i < kMr512; ++i) {
      const __m512 ai = _mm512_set1_ps(a[kMr512 * k + i]);
      acc[i][0] = _mm512_fmadd_ps(ai, b0, acc[i][0]);
      acc[i][1] = _mm512_fmadd_ps(ai, b1, acc[i][1]);
    }
  }
  for (int i = 0; i < kMr512; ++i) {
    _mm512_storeu_ps(c + i * ldc, acc[i][0]);
    _mm512_storeu_ps(c + i * ldc + 16, acc[i][1]);
  }
}
bool have_avx512() { return __builtin_cpu_supports("avx512f"); }
#else
bool have_avx512() { return false; }
#endif

using MicroKernel = void (*)(const float*, const float*, float*, int);

// One thread's packed A (kRowsC x kK), B (kK x kColsC) and C; `pass` is
// C += A * B, block by block, one B panel kept in L1 while the A panels
// stream from L2.
struct MatmulBuffers {
  int mr, nr;
  MicroKernel kernel;
  std::vector<float> a = std::vector<float>(size_t{kRowsC} * kK, 0.001f);
  std::vector<float> b = std::vector<float>(size_t{kColsC} * kK, 0.002f);
  std::vector<float> c = std::vector<float>(size_t{kRowsC} * kColsC, 0.0f);
  MatmulBuffers(int mr_, int nr_, MicroKernel k) : mr(mr_), nr(nr_), kernel(k) {}
  void pass() {
    for (int jp = 0; jp < kColsC / nr; ++jp)
      for (int ip = 0; ip < kRowsC / mr; ++ip)
        kernel(a.data() + size_t(mr) * kK * ip, b.data() + size_t(nr) * kK * jp,
               c.data() + size_t(mr) * ip * kColsC + size_t(nr) * jp, kColsC);
  }
};

constexpr double kFlopsPerPass = 2.0 * kRowsC * kColsC * kK;

}  // namespace

const char* matmul_kernel_name() {
  if (have_avx512()) return "dftracer packed 8x32 AVX-512 FMA micro-kernel";
#ifdef DFTRACER_CALIBRATE_AVX2
  return "dftracer packed 6x16 AVX2 FMA micro-kernel";
#else
  return "dftracer packed 6x16 portable micro-kernel";
#endif
}

double measure_matmul_gflops(unsigned threads, WallClock wall_now, double* cpu_share) {
  threads = std::max(1u, threads);
  if (!wall_now) wall_now = steady_now;
  bool warned = false;
  CpuShare share;
  std::vector<MatmulBuffers> bufs;
  for (unsigned t = 0; t < threads; ++t) {
#ifdef DFTRACER_CALIBRATE_AVX512
    if (have_avx512()) {
      bufs.emplace_back(kMr512, kNr512, micro_kernel_avx512);
      continue;
    }
#endif
    bufs.emplace_back(kMr, kNr, micro_kernel);
  }
  // Enough passes for a trial of >= 0.1 s, then the best of three trials:
  // other processes on the machine only ever make a trial slower.
  int passes = 4;
  double secs = 0;
  auto trial = [&](unsigned t) {
    for (int p = 0; p < passes; ++p) bufs[t].pass();
  };
  while ((secs = timed_parallel(threads, trial, wall_now, warned, share)) < 0.1 && passes < (1 << 20)) passes *= 2;
  double best = secs;
  for (int i = 0; i < 3; ++i) best = std::min(best, timed_parallel(threads, trial, wall_now, warned, share));
  volatile float sink = 0;
  for (const MatmulBuffers& b : bufs) sink = sink + b.c[0];  // the results are used
  if (cpu_share) *cpu_share = share.share();
  return kFlopsPerPass * passes * threads / best * 1e-9;
}

double measure_triad_gbps(unsigned threads, WallClock wall_now, double* cpu_share) {
  threads = std::max(1u, threads);
  if (!wall_now) wall_now = steady_now;
  bool warned = false;
  CpuShare share;
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
  CpuShare first_touch;
  timed_parallel(threads, sweep, wall_now, warned, first_touch);  // page faults: not a trial
  double best = 1e30;
  for (int trial = 0; trial < 8; ++trial)
    best = std::min(best, timed_parallel(threads, sweep, wall_now, warned, share));
  volatile float sink = a[n / 2];
  (void)sink;
  if (cpu_share) *cpu_share = share.share();
  return 12.0 * static_cast<double>(n) / best * 1e-9;
}

}  // namespace dftracer::analyze
