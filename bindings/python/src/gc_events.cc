// Python's garbage collections as events (cat "gc", name "gc.gen0".."gc.gen2",
// args generation, collected, uncollectable).
//
// A collection stops the thread that triggered it, and with it every other
// Python thread (it holds the GIL), for its whole length: a full collection
// (generation 2) of a process that imported torch and transformers walks
// every tracked object and takes 0.1-0.4 s, inside whatever op, region or
// compile the program was in, and no other event says so. CPython calls each
// callable in gc.callbacks with ("start" | "stop", info) around every
// collection; this one is a plain METH_FASTCALL function (no Python frame, no
// object made), installed by dftracer.python.gc_events. Collections cannot
// nest, and one thread runs each, so the start is a thread_local.
#include <Python.h>

#include <cstdint>

#include "dftracer/dftracer.h"
#include "module.h"

namespace dft_py {
namespace {

thread_local uint64_t t_gc_start = 0;  // 0: no collection began while tracing

PyObject* g_key_generation = nullptr;  // info's keys, interned once
PyObject* g_key_collected = nullptr;
PyObject* g_key_uncollectable = nullptr;
dft_id g_cat = 0;
dft_id g_names[3] = {}, g_name_other = 0;  // gc.gen0..gc.gen2; gc.collect without a generation
dft_id g_arg_generation = 0, g_arg_collected = 0, g_arg_uncollectable = 0;

// info[key] as an integer, -1 when missing or not an int (never raises).
int64_t info_int(PyObject* info, PyObject* key) {
  PyObject* v = PyDict_GetItemWithError(info, key);  // borrowed; makes nothing
  if (v == nullptr || !PyLong_Check(v)) {
    PyErr_Clear();
    return -1;
  }
  const long long x = PyLong_AsLongLong(v);
  if (x == -1 && PyErr_Occurred()) {
    PyErr_Clear();
    return -1;
  }
  return x;
}

PyObject* gc_callback(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyUnicode_Check(args[0]) || PyUnicode_GET_LENGTH(args[0]) < 3) Py_RETURN_NONE;
  // "start" / "stop": the third character tells them apart.
  if (PyUnicode_READ_CHAR(args[0], 2) == 'a') {
    t_gc_start = dft_enabled_inline() ? dft_ticks_inline() : 0;
    Py_RETURN_NONE;
  }
  const uint64_t start = t_gc_start;
  t_gc_start = 0;
  if (start == 0 || !dft_enabled_inline()) Py_RETURN_NONE;
  const uint64_t end = dft_ticks_inline();
  PyObject* info = args[1];
  int64_t gen = -1, collected = -1, uncollectable = -1;
  if (PyDict_Check(info)) {
    gen = info_int(info, g_key_generation);
    collected = info_int(info, g_key_collected);
    uncollectable = info_int(info, g_key_uncollectable);
  }
  dft_arg a[3];
  uint32_t n = 0;
  a[n].key = g_arg_generation, a[n].type = DFT_ARG_INT, a[n++].v.i = gen;
  if (collected >= 0) a[n].key = g_arg_collected, a[n].type = DFT_ARG_INT, a[n++].v.i = collected;
  if (uncollectable >= 0) a[n].key = g_arg_uncollectable, a[n].type = DFT_ARG_INT, a[n++].v.i = uncollectable;
  const dft_id name = gen >= 0 && gen <= 2 ? g_names[gen] : g_name_other;
  dft_complete_ticks_plain(name, g_cat, start, end, a, n);
  Py_RETURN_NONE;
}

PyMethodDef gc_functions[] = {
    {"gc_callback", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(gc_callback)), METH_FASTCALL,
     "gc.callbacks entry: records each garbage collection while tracing (cat gc)."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void register_gc(nanobind::module_& m) {
  struct {
    PyObject** slot;
    const char* s;
  } keys[] = {{&g_key_generation, "generation"}, {&g_key_collected, "collected"},
              {&g_key_uncollectable, "uncollectable"}};
  for (auto& k : keys)
    if ((*k.slot = PyUnicode_InternFromString(k.s)) == nullptr) throw nanobind::python_error();
  g_cat = dft_intern_cstr("gc");
  g_names[0] = dft_intern_cstr("gc.gen0");
  g_names[1] = dft_intern_cstr("gc.gen1");
  g_names[2] = dft_intern_cstr("gc.gen2");
  g_name_other = dft_intern_cstr("gc.collect");
  g_arg_generation = dft_intern_cstr("generation");
  g_arg_collected = dft_intern_cstr("collected");
  g_arg_uncollectable = dft_intern_cstr("uncollectable");
  if (PyModule_AddFunctions(m.ptr(), gc_functions) < 0) throw nanobind::python_error();
}

}  // namespace dft_py
