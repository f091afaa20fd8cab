// `_core._NullContext`: a context manager in C whose __enter__ (returns
// self) and __exit__ (returns None) do nothing, written the ordinary way
// (tp_methods). bench/python/bench_regions.py times `with` on it as
// CPython's own floor for a C-implemented context manager, beside the
// region forms.
//
// `_core._FloorContext`: the least a `with` statement can cost CPython: its
// class's __enter__ and __exit__ are builtin functions without a self (not
// descriptors: nothing is bound, nothing allocated), __exit__ a METH_FASTCALL
// one that the interpreter calls through its specialized builtin call.
// `with _FloorContext():` enters to None.
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

PyObject* Floor_enter(PyObject*, PyObject*) { Py_RETURN_NONE; }
PyObject* Floor_exit(PyObject*, PyObject* const*, Py_ssize_t) { Py_RETURN_NONE; }

PyMethodDef Floor_functions[] = {
    {"__enter__", Floor_enter, METH_NOARGS, nullptr},
    {"__exit__", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Floor_exit)), METH_FASTCALL, nullptr}};

PyType_Slot Floor_slots[] = {
    {Py_tp_doc, const_cast<char*>("The cheapest `with` CPython can run (the benchmarks' floor).")}, {0, nullptr}};

PyType_Spec Floor_spec = {"dftracer._core._FloorContext", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT, Floor_slots};

bool add_type(PyObject* module, const char* name, PyObject* type) {
  if (type == nullptr) return false;
  if (PyModule_AddObject(module, name, type) < 0) {
    Py_DECREF(type);
    return false;
  }
  return true;
}

}  // namespace

bool register_null_context(PyObject* module) {
  if (!add_type(module, "_NullContext", PyType_FromSpec(&NullContext_spec))) return false;
  PyObject* floor = PyType_FromSpec(&Floor_spec);
  if (floor == nullptr) return false;
  for (PyMethodDef& def : Floor_functions) {
    PyObject* f = PyCFunction_New(&def, nullptr);
    int rc = f == nullptr ? -1 : PyObject_SetAttrString(floor, def.ml_name, f);
    Py_XDECREF(f);
    if (rc < 0) {
      Py_DECREF(floor);
      return false;
    }
  }
  return add_type(module, "_FloorContext", floor);
}

}  // namespace dft_py
