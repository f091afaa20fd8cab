// calibrate's kernels against a wall clock that lies: a trial's elapsed
// time must never be read below what its threads' CPU time allows, or a
// 2-core machine reports a TFLOP/s "peak".
#include "calibrate_kernels.hpp"

#include <gtest/gtest.h>
#include <time.h>

namespace dftracer::analyze {
namespace {

// Advances 1 us per reading, whatever the work took: every trial looks
// ~1000x shorter than it was.
double stuck_clock() {
  static double now = 0;
  return now += 1e-6;
}

// The calling thread's CPU time as the "wall" clock: with one thread (the
// calling one does the work) this is the figure the guard falls back to,
// and unlike a real wall clock it does not stretch when the machine is
// loaded (a wall-clock reference made this test fail at load 9 on 2 cores).
double this_thread_cpu_clock() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

TEST(Calibrate, MatmulPeakIsBoundedByThreadCpuTimeWhenTheWallClockLies) {
  const double honest = measure_matmul_gflops(1, this_thread_cpu_clock);
  testing::internal::CaptureStderr();
  const double lied = measure_matmul_gflops(1, stuck_clock);
  const std::string err = testing::internal::GetCapturedStderr();
  ASSERT_GT(honest, 0);
  // One thread cannot do more than its CPU time allows: about the honest
  // figure (the factor 3 leaves room for cache and frequency effects).
  EXPECT_LT(lied, 3 * honest) << "honest " << honest << " GFLOP/s";
  EXPECT_GT(lied, 0);
  // One warning per measurement, naming what was wrong.
  EXPECT_NE(err.find("wall time"), std::string::npos) << err;
  EXPECT_EQ(err.find("wall time"), err.rfind("wall time")) << err;
}

TEST(Calibrate, TriadBandwidthIsBoundedByThreadCpuTimeWhenTheWallClockLies) {
  const double honest = measure_triad_gbps(1, this_thread_cpu_clock);
  testing::internal::CaptureStderr();
  const double lied = measure_triad_gbps(1, stuck_clock);
  testing::internal::GetCapturedStderr();
  ASSERT_GT(honest, 0);
  EXPECT_LT(lied, 3 * honest) << "honest " << honest << " GB/s";
}

}  // namespace
}  // namespace dftracer::analyze
