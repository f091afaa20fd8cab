// `_core._NullContext`: a context manager in C whose __enter__ (returns
// self) and __exit__ (returns None) do nothing, written the ordinary way
// (tp_methods). bench/python/bench_regions.py times `with` on it as
// CPython's own floor for a C-implemented context manager, beside the
// region forms.
#include <Python.h>

#include "region.h"

namespace dft_py {
namespace {

PyObject* NullContext_enter(PyObject* self, PyObject*) { return Py_NewRef(self); }
PyObject* NullContext_exit(PyObject*, PyObject* const*, Py_ssize_t) { Py_RETURN_NONE; }

PyMethodDef NullContext_methods[] = {
    {"__enter__", NullContext_enter, METH_NOARGS, nullptr},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(NullContext_exit)), METH_FASTCALL,
     nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot NullContext_slots[] = {
    {Py_tp_methods, NullContext_methods},
    {Py_tp_doc, const_cast<char*>("A context manager that does nothing (the benchmarks' floor).")},
    {0, nullptr}};

PyType_Spec NullContext_spec = {"dftracer._core._NullContext", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT,
                                NullContext_slots};

}  // namespace

bool register_null_context(PyObject* module) {
  PyObject* type = PyType_FromSpec(&NullContext_spec);
  if (type == nullptr) return false;
  if (PyModule_AddObject(module, "_NullContext", type) < 0) {
    Py_DECREF(type);
    return false;
  }
  return true;
}

}  // namespace dft_py
