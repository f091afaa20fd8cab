#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include "calls.h"
static PyObject* py_noop(PyObject*, PyObject*) { noop(); Py_RETURN_NONE; }
static PyObject* py_ticks(PyObject*, PyObject*) { return PyLong_FromUnsignedLongLong(ticks()); }
static PyObject* py_end(PyObject*, PyObject* const* a, Py_ssize_t n) {
  if (n != 3) { PyErr_SetString(PyExc_TypeError, "end(name, cat, t0)"); return nullptr; }
  end((uint32_t)PyLong_AsUnsignedLong(a[0]), (uint32_t)PyLong_AsUnsignedLong(a[1]), PyLong_AsUnsignedLongLong(a[2]));
  if (PyErr_Occurred()) return nullptr;
  Py_RETURN_NONE;
}
static PyMethodDef methods[] = {
    {"noop", py_noop, METH_NOARGS, nullptr},
    {"ticks", py_ticks, METH_NOARGS, nullptr},
    {"end", (PyCFunction)(void (*)())py_end, METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr}};
static PyModuleDef mod = {PyModuleDef_HEAD_INIT, "capi_calls", nullptr, -1, methods};
PyMODINIT_FUNC PyInit_capi_calls() { return PyModule_Create(&mod); }
