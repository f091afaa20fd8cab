// The two timing kernels of `calibrate` (calibration.hpp), kept apart from
// the file handling: a packed float32 matrix multiply and a STREAM-style
// triad, each run on `threads` threads, best of a few trials.
#pragma once

namespace dftracer::analyze {

// GFLOP/s of C += A * B (2 flops per multiply-add) over all threads.
double measure_matmul_gflops(unsigned threads);
// GB/s of a[i] = b[i] + s * c[i] over arrays far larger than the caches,
// counting 12 bytes per element (two floats read, one written).
double measure_triad_gbps(unsigned threads);

}  // namespace dftracer::analyze
