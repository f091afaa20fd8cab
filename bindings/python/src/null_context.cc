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
//
// `_core._FloorNewContext` / `_FloorNewMutable`: the least `with C(a, b):`
// (a new object per statement, as `with dft_fn(cat, name):` makes) can cost:
// _FloorContext's unbound __enter__/__exit__ on a class whose vectorcall
// ignores its arguments and takes the object from a one-slot free list.
// CPython 3.11 specializes the call of a class (PRECALL_BUILTIN_CLASS) only
// for an immutable one; the mutable twin (what a Python-visible class like
// dft_fn is) takes the generic call.
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

PyType_Slot FloorNew_slots[] = {
    {Py_tp_doc, const_cast<char*>("A new object per `with` at the least cost (the benchmarks' floor).")},
    {0, nullptr}};

PyType_Spec FloorNew_spec = {"dftracer._core._FloorNewContext", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT,
                             FloorNew_slots};
PyType_Spec FloorNewMutable_spec = {"dftracer._core._FloorNewMutable", sizeof(PyObject), 0, Py_TPFLAGS_DEFAULT,
                                    FloorNew_slots};

// One spare object per class; a spare keeps its class reference, as
// dft_fn's free list does.
PyObject* g_floor_new_spare[2] = {nullptr, nullptr};

template <int kSlot>
PyObject* FloorNew_vectorcall(PyObject* type, PyObject* const*, size_t, PyObject* kwnames) {
  if (kwnames != nullptr) {
    PyErr_SetString(PyExc_TypeError, "takes no keyword arguments");
    return nullptr;
  }
  if (PyObject* op = g_floor_new_spare[kSlot]) {
    g_floor_new_spare[kSlot] = nullptr;
    Py_SET_REFCNT(op, 1);
    return op;
  }
  return PyType_GenericAlloc(reinterpret_cast<PyTypeObject*>(type), 0);
}

template <int kSlot>
void FloorNew_dealloc(PyObject* op) {
  if (g_floor_new_spare[kSlot] == nullptr) {
    g_floor_new_spare[kSlot] = op;
    return;
  }
  PyTypeObject* type = Py_TYPE(op);
  type->tp_free(op);
  Py_DECREF(type);
}

bool set_floor_functions(PyObject* type) {
  for (PyMethodDef& def : Floor_functions) {
    PyObject* f = PyCFunction_New(&def, nullptr);
    int rc = f == nullptr ? -1 : PyObject_SetAttrString(type, def.ml_name, f);
    Py_XDECREF(f);
    if (rc < 0) return false;
  }
  return true;
}

template <int kSlot>
PyObject* make_floor_new(PyType_Spec* spec, bool immutable) {
  PyObject* type = PyType_FromSpec(spec);
  if (type == nullptr) return nullptr;
  if (!set_floor_functions(type)) {
    Py_DECREF(type);
    return nullptr;
  }
  auto* t = reinterpret_cast<PyTypeObject*>(type);
  t->tp_vectorcall = FloorNew_vectorcall<kSlot>;
  t->tp_dealloc = FloorNew_dealloc<kSlot>;
  // object's own tp_new is the one class CPython never specializes a call of.
  t->tp_new = PyType_GenericNew;
  if (immutable) t->tp_flags |= Py_TPFLAGS_IMMUTABLETYPE;
  PyType_Modified(t);
  return type;
}

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
  if (!set_floor_functions(floor)) {
    Py_DECREF(floor);
    return false;
  }
  return add_type(module, "_FloorContext", floor) &&
         add_type(module, "_FloorNewContext", make_floor_new<0>(&FloorNew_spec, true)) &&
         add_type(module, "_FloorNewMutable", make_floor_new<1>(&FloorNewMutable_spec, false));
}

}  // namespace dft_py
