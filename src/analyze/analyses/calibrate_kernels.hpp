// The two timing kernels of `calibrate` (calibration.hpp), kept apart from
// the file handling: a packed float32 matrix multiply and a STREAM-style
// triad, each run on `threads` threads, best of a few trials.
#pragma once

namespace dftracer::analyze {

// Seconds on some monotonic clock; steady_clock unless a test injects one.
using WallClock = double (*)();

// A trial's elapsed time is never taken below its longest thread's CPU
// time (a wrong wall reading cannot make a peak). `cpu_share`, when given,
// receives the threads' CPU time over `threads` x the wall time of all the
// trials: about 1 on a quiet machine, lower when other processes took the
// CPUs (calibration.hpp's load check).
// GFLOP/s of C += A * B (2 flops per multiply-add) over all threads.
double measure_matmul_gflops(unsigned threads, WallClock wall_now = nullptr, double* cpu_share = nullptr);
// GB/s of a[i] = b[i] + s * c[i] over arrays far larger than the caches,
// counting 12 bytes per element (two floats read, one written).
double measure_triad_gbps(unsigned threads, WallClock wall_now = nullptr, double* cpu_share = nullptr);
// What measure_matmul_gflops runs on this CPU, for the calibration file.
const char* matmul_kernel_name();

}  // namespace dftracer::analyze
