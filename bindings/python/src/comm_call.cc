// _core._comm_call / _core._in_comm: the timed part of a traced
// torch.distributed call (dftracer/python/collectives.py), in C.
//
// A collective that waited for its peers returns to a thread whose caches
// the wait emptied (other threads and processes ran on its core): every
// cache line touched next is a miss, and a few microseconds of Python after
// the call cost tens (bench/comm/bench_comm_after.py). So the wrapper
// describes the event before the call, and everything between the call's
// return and the wrapper's -- the clock, the depth flag, the record -- is
// this one C function, without a Python frame or a nanobind dispatch.
#include <Python.h>

#include <dftracer/dftracer.h>

#include "args.h"
#include "module.h"
#include "skipped_call.h"

namespace dft_py {
namespace {

// > 0 inside a traced call on this thread: the torch.distributed calls it
// makes itself are its own work, not events of their own.
thread_local int t_comm_depth = 0;

// _comm_call(fn, args, kwargs, name_id, cat_id, event_args): fn(*args,
// **kwargs), timed, with one complete event when it returns (none when it
// raises). kwargs may be None.
PyObject* comm_call(PyObject*, PyObject* const* a, Py_ssize_t nargs) {
  if (nargs != 6 || !PyTuple_Check(a[1]) || (a[2] != Py_None && !PyDict_Check(a[2]))) {
    PyErr_SetString(PyExc_TypeError, "_comm_call(fn, args: tuple, kwargs: dict | None, name_id, cat_id, args)");
    return nullptr;
  }
  unsigned long name = PyLong_AsUnsignedLong(a[3]);
  unsigned long cat = PyLong_AsUnsignedLong(a[4]);
  if (PyErr_Occurred()) return nullptr;
  PyObject* kwargs = a[2] == Py_None ? nullptr : a[2];
  ++t_comm_depth;
  uint64_t t0 = dft_ticks_inline();
  PyObject* ret = PyObject_Call(a[0], a[1], kwargs);
  uint64_t t1 = dft_ticks_inline();
  --t_comm_depth;
  if (ret == nullptr) return nullptr;
  if (!dft_enabled_inline()) {
    count_skipped_call();
    return ret;
  }
  PyObject* ev = a[5];
  if (ev == Py_None) {
    dft_complete_ticks(static_cast<dft_id>(name), static_cast<dft_id>(cat), t0, t1, nullptr, 0);
    return ret;
  }
  ArgList list;
  list.add_mapping(ev);
  if (PyErr_Occurred()) PyErr_Clear();  // a bad arg never fails the collective
  dft_complete_ticks(static_cast<dft_id>(name), static_cast<dft_id>(cat), t0, t1, list.data(), list.size());
  return ret;
}

PyObject* in_comm(PyObject*, PyObject*) { return PyBool_FromLong(t_comm_depth > 0); }

PyMethodDef comm_functions[] = {
    {"_comm_call", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(comm_call)), METH_FASTCALL,
     "fn(*args, **kwargs) timed, recorded as one complete event (name_id, cat_id, args) when it returns."},
    {"_in_comm", in_comm, METH_NOARGS, "True inside a _comm_call on this thread."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void register_comm(nanobind::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), comm_functions) < 0) throw nanobind::python_error();
}

}  // namespace dft_py
