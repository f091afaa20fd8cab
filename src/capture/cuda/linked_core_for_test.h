// The core linked into a test, as the CoreApi libdftracer_cuda looks up in a
// process (core_event_sink.h).
#ifndef DFTRACER_SRC_CAPTURE_CUDA_LINKED_CORE_FOR_TEST_H_
#define DFTRACER_SRC_CAPTURE_CUDA_LINKED_CORE_FOR_TEST_H_

#include "core_event_sink.h"
#include "dftracer/dftracer.h"

namespace dftracer::cuda::test {

inline CoreApi linked_core() {
  CoreApi a;
  a.complete = &dft_complete_ns_on_track;
  a.flow = &dft_flow_ns_on_track;
  a.name_track = &dft_name_track;
  a.intern = &dft_intern_cstr;
  a.set_launch_scope = &dft_set_launch_scope;
  a.now_ns = &dft_now_ns;
  a.enabled = &dft_enabled;
  return a;
}

}  // namespace dftracer::cuda::test

#endif  // DFTRACER_SRC_CAPTURE_CUDA_LINKED_CORE_FOR_TEST_H_
