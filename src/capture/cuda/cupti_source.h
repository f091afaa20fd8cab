// The CUDA capture source: CUPTI's activity API, built only where CUPTI's
// headers and library are found (DFTRACER_CUDA, src/capture/cuda/CMakeLists.txt),
// as its own shared library, libdftracer_cuda.so, so nothing else links CUPTI.
//
//   dftracer_cuda_start(path)  enables kernel, memcpy, memset, runtime, driver
//                              and external-correlation records, sets CUPTI's
//                              timestamp callback to CLOCK_MONOTONIC (the trace
//                              clock before its epoch offset, the core's own
//                              when it is loaded: dft_now_ns). path NULL or "":
//                              the device events go through the core's writer
//                              into the process's trace (core_event_sink.h;
//                              tracing must be on), and the capture sources push
//                              their events' ids around launches
//                              (dft_set_launch_scope: "External id"); else into
//                              `path`, a file of their own (one JSON event a
//                              line, device_activity.h). 0, or -1 with
//                              dftracer_cuda_error() (no driver or GPU: one line);
//   dftracer_cuda_push(id) / dftracer_cuda_pop()
//                              a launch scope of the caller's own (the capture
//                              sources use the core's dft_launch_scope instead);
//   dftracer_cuda_flush()      hands CUPTI's filled buffers over now;
//   dftracer_cuda_stop()       stops the launch scopes, flushes, disables,
//                              closes the file; returns the number of events
//                              written (negative on error). Call it before the
//                              trace is finalized, or the last buffers are lost.
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
// 1 from a successful start until its stop (the core's before_finalize or a
// caller's), else 0.
__attribute__((visibility("default"))) int dftracer_cuda_running(void);
// Records CUPTI dropped (no free buffer in the pool), as of the last stop
// (which, into the trace, also says them in one warning line: dft_warn).
__attribute__((visibility("default"))) uint64_t dftracer_cuda_dropped(void);
}

#endif  // DFTRACER_SRC_CAPTURE_CUDA_CUPTI_SOURCE_H_
