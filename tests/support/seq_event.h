// One complete event named `name` in cat "test" with an int arg "seq",
// recorded through the public C API: what the process and descriptor-table
// suites record while they fork, signal and close descriptors.
#ifndef DFTRACER_TESTS_SUPPORT_SEQ_EVENT_H_
#define DFTRACER_TESTS_SUPPORT_SEQ_EVENT_H_

#include <cstdint>

#include "dftracer/dftracer.h"

namespace dftracer_test {

inline void emit(const char* name, int64_t seq) {
  dft_arg a{};
  a.key = dft_intern_cstr("seq");
  a.type = DFT_ARG_INT;
  a.v.i = seq;
  uint64_t t = dft_ticks();
  dft_complete_ticks(dft_intern_cstr(name), dft_intern_cstr("test"), t, t + 1, &a, 1);
}

}  // namespace dftracer_test

#endif  // DFTRACER_TESTS_SUPPORT_SEQ_EVENT_H_
