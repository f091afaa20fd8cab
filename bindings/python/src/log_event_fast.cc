// dftracer.log_event / dftracer.get_time (pydftracer's logger methods) as C
// functions: with tracing off one flag load, and on the common call --
// log_event(name, cat, start, duration) with int microseconds -- the
// record itself, without a Python frame. Everything else (typed args,
// relations, floats, another DFTRACER_TIME_METRIC, errors) goes to the
// Python implementation in dftracer/python/logger.py, registered by
// _set_logger_slow_paths().
//
// They are method descriptors of the class `dftracer` (_bind_logger_methods;
// `self`, the logger, is not used), and _core._log_event / _core._get_time
// as plain functions.
#include <Python.h>

#include <cstdint>

#include <dftracer/dftracer.h>

#include "intern_cache.h"
#include "module.h"
#include "skipped_call.h"

namespace dft_py {
namespace {

PyObject* g_log_event_slow = nullptr;  // logger._log_event(name, cat, start, duration, ...)
PyObject* g_get_time_slow = nullptr;   // logger._get_time()
// Nanoseconds per unit of get_time()/log_event times as read when tracing
// started (1000: microseconds); 0 = not known here, ask Python.
uint64_t g_ns_per_unit = 0;

// `o` (an exact int) in microseconds as nanoseconds, or false when it is out
// of range (the Python path then raises the error).
bool us_int_to_ns(PyObject* o, uint64_t* ns) {
  int overflow = 0;
  long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
  if (overflow || v < 0 || static_cast<unsigned long long>(v) > UINT64_MAX / 1000u) return false;
  *ns = static_cast<uint64_t>(v) * 1000u;
  return true;
}

PyObject* log_event(PyObject*, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  if (!dft_enabled_inline()) {
    count_skipped_call();
    Py_RETURN_NONE;
  }
  uint64_t start = 0, dur = 0;
  if (PyVectorcall_NARGS(nargsf) == 4 && kwnames == nullptr && g_ns_per_unit == 1000u &&
      PyUnicode_CheckExact(args[0]) && PyUnicode_CheckExact(args[1]) && PyLong_CheckExact(args[2]) &&
      PyLong_CheckExact(args[3]) && us_int_to_ns(args[2], &start) && us_int_to_ns(args[3], &dur) &&
      dur <= UINT64_MAX - start) {
    const char* utf8 = nullptr;
    Py_ssize_t len = 0;
    dft_id name = recent_id(args[0]);
    if (name == 0) {
      name = intern_str_bounded(args[0], &utf8, &len);
      if (PyErr_Occurred()) return nullptr;  // before the next call into the C API
    }
    dft_id cat = recent_id(args[1]);
    if (cat == 0) {
      cat = intern_str(args[1]);
      if (PyErr_Occurred()) return nullptr;
    }
    if (name != 0) dft_complete_ns(name, cat, start, dur, nullptr, 0);
    else dft_complete_ns_named(utf8, static_cast<size_t>(len), cat, start, dur, nullptr, 0);
    Py_RETURN_NONE;
  }
  if (g_log_event_slow == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "dftracer: the logger is not set up");
    return nullptr;
  }
  return PyObject_Vectorcall(g_log_event_slow, args, nargsf, kwnames);
}

PyObject* get_time(PyObject*, PyObject*) {
  if (!dft_enabled_inline()) return PyLong_FromLong(0);
  if (g_ns_per_unit != 0) return PyLong_FromUnsignedLongLong(dft_now_ns() / g_ns_per_unit);
  if (g_get_time_slow == nullptr) {
    PyErr_SetString(PyExc_RuntimeError, "dftracer: the logger is not set up");
    return nullptr;
  }
  return PyObject_CallNoArgs(g_get_time_slow);
}

// _set_logger_slow_paths(log_event, get_time)
PyObject* set_slow_paths(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyCallable_Check(args[0]) || !PyCallable_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_set_logger_slow_paths(log_event, get_time)");
    return nullptr;
  }
  Py_XSETREF(g_log_event_slow, Py_NewRef(args[0]));
  Py_XSETREF(g_get_time_slow, Py_NewRef(args[1]));
  Py_RETURN_NONE;
}

// _set_time_unit_ns(n): nanoseconds per unit of the session just started
// (0: unknown, every call asks Python).
PyObject* set_time_unit_ns(PyObject*, PyObject* arg) {
  unsigned long long n = PyLong_AsUnsignedLongLong(arg);
  if (PyErr_Occurred()) return nullptr;
  g_ns_per_unit = n;
  Py_RETURN_NONE;
}

#define DFT_LOG_EVENT_DOC                                                                                    \
  "log_event(name, cat, start_time, duration, int_args=None, float_args=None, string_args=None, "          \
  "relations=None, *, args=None)\n--\n\n"                                                                  \
  "Records a complete event, with pydftracer's signature. start_time and duration are in time_unit() "      \
  "(int or float), as returned by get_time(). A no-op while tracing is off."
#define DFT_GET_TIME_DOC                                                                                     \
  "get_time()\n--\n\nTime since the Unix epoch on the trace's clock in time_unit(), an int; 0 while "      \
  "tracing is off (pydftracer)."

// The logger's methods (_bind_logger_methods): the same C functions as
// method descriptors of the logger class.
PyMethodDef logger_methods[] = {
    {"log_event", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(log_event)),
     METH_FASTCALL | METH_KEYWORDS, DFT_LOG_EVENT_DOC},
    {"get_time", get_time, METH_NOARGS, DFT_GET_TIME_DOC}};

// _bind_logger_methods(cls): cls.log_event / cls.get_time as method
// descriptors of cls. `log.get_time()` on an instance of cls then takes the
// interpreter's specialized method call (a cached lookup and a direct C
// call); a builtin in the class dict, which does not bind, is looked up in
// the instance's dict and then the class's on every call.
PyObject* bind_logger_methods(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls)) {
    PyErr_SetString(PyExc_TypeError, "_bind_logger_methods(cls): expected a class");
    return nullptr;
  }
  for (PyMethodDef& def : logger_methods) {
    PyObject* d = PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(cls), &def);
    int rc = d == nullptr ? -1 : PyObject_SetAttrString(cls, def.ml_name, d);
    Py_XDECREF(d);
    if (rc < 0) return nullptr;
  }
  Py_RETURN_NONE;
}

PyMethodDef functions[] = {
    {"_log_event", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(log_event)),
     METH_FASTCALL | METH_KEYWORDS, DFT_LOG_EVENT_DOC},
    {"_get_time", get_time, METH_NOARGS, DFT_GET_TIME_DOC},
    {"_bind_logger_methods", bind_logger_methods, METH_O, nullptr},
    {"_set_logger_slow_paths", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(set_slow_paths)),
     METH_FASTCALL, nullptr},
    {"_set_time_unit_ns", set_time_unit_ns, METH_O, nullptr},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void register_logger_fast(nanobind::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), functions) < 0) throw nanobind::python_error();
}

}  // namespace dft_py
