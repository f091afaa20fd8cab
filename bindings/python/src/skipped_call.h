// Counting calls skipped while tracing is off.
//
// The Python wrappers check the enabled flag first and skip the core when
// tracing is off, which is what keeps the off path at one load. After
// dft_finalize, though, the C API counts every recording call as a no-op
// (dft_stats.events_after_finalize: "the program kept recording after the
// trace was closed"); count_skipped_call() hands a skipped call to the core
// then so Python's calls are counted the same. Before any init it does
// nothing beyond one more load.
#ifndef DFTRACER_BINDINGS_PYTHON_SKIPPED_CALL_H_
#define DFTRACER_BINDINGS_PYTHON_SKIPPED_CALL_H_

#include "dftracer/dftracer.h"

inline void count_skipped_call() {
  if (__builtin_expect(__atomic_load_n(&dft_hot.finalized, __ATOMIC_RELAXED), 0))
    dft_complete_ticks(0, 0, 0, 0, nullptr, 0);  // disabled: counted, nothing recorded
}

#endif  // DFTRACER_BINDINGS_PYTHON_SKIPPED_CALL_H_
