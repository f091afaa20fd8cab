// Activity records as CUPTI would hand them over, for the CUDA source's tests.
#ifndef DFTRACER_SRC_CAPTURE_CUDA_ACTIVITY_RECORDS_FOR_TEST_H_
#define DFTRACER_SRC_CAPTURE_CUDA_ACTIVITY_RECORDS_FOR_TEST_H_

#include <cstdint>

#include "device_activity.h"

namespace dftracer::cuda::test {

// A kernel on device 0, context 1.
inline ActivityRecord kernel(const char* name, uint64_t start, uint64_t end, uint32_t corr, uint32_t stream = 7) {
  ActivityRecord r;
  r.kind = ActivityKind::kernel;
  r.name = name;
  r.start = start;
  r.end = end;
  r.correlation_id = corr;
  r.device_id = 0;
  r.context_id = 1;
  r.stream_id = stream;
  return r;
}

// A runtime or driver call on host thread `tid` of process `pid`.
inline ActivityRecord api(ActivityKind kind, const char* name, uint64_t start, uint64_t end, uint32_t corr,
                          uint32_t pid = 4242, uint32_t tid = 4243) {
  ActivityRecord r;
  r.kind = kind;
  r.name = name;
  r.start = start;
  r.end = end;
  r.correlation_id = corr;
  r.process_id = pid;
  r.thread_id = tid;
  r.cbid = 211;
  return r;
}

}  // namespace dftracer::cuda::test

#endif  // DFTRACER_SRC_CAPTURE_CUDA_ACTIVITY_RECORDS_FOR_TEST_H_
