// The CUDA capture source: CUPTI's activity API, built only where CUPTI's
// headers and library are found (DFTRACER_CUDA, src/capture/cuda/CMakeLists.txt),
// as its own shared library, libdftracer_cuda.so, so nothing else links CUPTI.
//
//   dftracer_cuda_start(path)  enables kernel, memcpy, memset, runtime, driver
//                              and external-correlation records, sets CUPTI's
//                              timestamp callback to CLOCK_MONOTONIC (the trace
//                              clock before its epoch offset, the core's own
//                              when it is loaded: dft_now_ns), and writes the
//                              device events to `path` (one JSON event a line,
//                              device_activity.h) as CUPTI hands buffers back;
//   dftracer_cuda_push(id) / dftracer_cuda_pop()
//                              around a traced launch: the id of the launching
//                              event, carried into the records as "External id";
//   dftracer_cuda_stop()       flushes, disables, closes the file; returns the
//                              number of events written (negative on error).
// Buffers come from a pool allocated at start (no allocation when CUPTI asks
// for one on a launching thread); conversion and writing run on the thread
// CUPTI completes buffers on, never on a recording thread.
#ifndef DFTRACER_SRC_CAPTURE_CUDA_CUPTI_SOURCE_H_
#define DFTRACER_SRC_CAPTURE_CUDA_CUPTI_SOURCE_H_

#include <cstdint>

extern "C" {
__attribute__((visibility("default"))) int dftracer_cuda_start(const char* path);
__attribute__((visibility("default"))) void dftracer_cuda_push(uint64_t external_id);
__attribute__((visibility("default"))) void dftracer_cuda_pop(void);
__attribute__((visibility("default"))) void dftracer_cuda_flush(void);
__attribute__((visibility("default"))) int64_t dftracer_cuda_stop(void);
// The last error as one line ("" when none).
__attribute__((visibility("default"))) const char* dftracer_cuda_error(void);
// Records CUPTI dropped (no free buffer in the pool), as of the last stop.
__attribute__((visibility("default"))) uint64_t dftracer_cuda_dropped(void);
}

#endif  // DFTRACER_SRC_CAPTURE_CUDA_CUPTI_SOURCE_H_
