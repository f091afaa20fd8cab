// `_core._SeqCounter`: the per-group (and per peer and direction) seq
// counter of the traced torch.distributed calls (collectives.py), an
// iterator of 0, 1, 2, ... like itertools.count() whose next value
// _core.CommWrapper (comm_call.cc) takes as a C integer: no int object made
// and freed per collective, one cache line touched.
#ifndef DFTRACER_BINDINGS_PYTHON_COMM_SEQ_H_
#define DFTRACER_BINDINGS_PYTHON_COMM_SEQ_H_

#include <Python.h>

#include <cstdint>

namespace dft_py {

struct SeqCounterObject {
  PyObject_HEAD
  int64_t next;
};

extern PyTypeObject* g_seq_counter_type;

// The counter's next value, advanced by one: under the GIL a plain
// increment; on a free-threaded build (Py_GIL_DISABLED) two threads may take
// one at once, so an atomic one (each value given once).
inline int64_t seq_fetch_next(SeqCounterObject* c) {
#ifdef Py_GIL_DISABLED
  return __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
#else
  return c->next++;
#endif
}

// The next seq of `counter` when it is a _SeqCounter (as next() on it);
// false for any other object.
inline bool seq_take(PyObject* counter, int64_t* out) {
  if (Py_TYPE(counter) != g_seq_counter_type) return false;
  *out = seq_fetch_next(reinterpret_cast<SeqCounterObject*>(counter));
  return true;
}

// Adds _SeqCounter to the module; -1 with an error set on failure.
int add_seq_counter_type(PyObject* module);

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_COMM_SEQ_H_
