// `TracedFunction`: what dft_fn.log returns for a plain (non-generator,
// non-async) function or method.
//
// A C callable with vectorcall, so a traced call costs one load of the
// enabled flag, two clock reads and one dft_complete_ticks() on top of the call
// itself, and no Python frame. With tracing off it forwards the call after
// the one load. It behaves like the function it wraps: __get__ binds it as
// a method (and Py_TPFLAGS_METHOD_DESCRIPTOR lets `obj.f()` skip the bound
// method), functools.update_wrapper fills __name__/__qualname__/__doc__/
// __wrapped__ in its __dict__, and pickle stores it by qualified name.
//
// pydftracer compatibility: parameters named epoch / step / image_idx /
// image_size (passed or defaulted) and, for methods, the same attributes of
// `self` become args of the event. The Python side finds them once, at
// decoration time; a function without them pays nothing for this.
#include <Python.h>
#include <structmember.h>

#include "args.h"
#include "intern_cache.h"
#include "open_events.h"
#include "region.h"
#include "skipped_call.h"

namespace dft_py {
namespace {

struct CaptureSpec {
  dft_id key;
  PyObject* pyname;   // parameter name (str)
  Py_ssize_t pos;     // positional index, -1 when keyword-only
  PyObject* deflt;    // default value, or NULL when the parameter has none
};

struct TracedFunctionObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* func;
  RegionObject* owner;
  dft_id name;         // 0 past the intern cap: events carry name_obj's bytes
  PyObject* name_obj;  // str
  int nspecs;
  int self_attrs;  // look up epoch/step/... on args[0]
  CaptureSpec specs[kNumTagKeys];
  PyObject* dict;
  PyObject* weakreflist;
};

PyTypeObject* g_tf_type = nullptr;

int lookup_optional_attr(PyObject* obj, PyObject* name, PyObject** result) {
#if PY_VERSION_HEX >= 0x030D0000
  return PyObject_GetOptionalAttr(obj, name, result);
#else
  return _PyObject_LookupAttr(obj, name, result);
#endif
}

// Value of a captured parameter in this call, or NULL (borrowed).
PyObject* captured_value(const CaptureSpec& spec, PyObject* const* args, Py_ssize_t nargs,
                         PyObject* kwnames) {
  if (spec.pos >= 0 && spec.pos < nargs) return args[spec.pos];
  if (kwnames != nullptr) {
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nkw; ++j) {
      PyObject* kw = PyTuple_GET_ITEM(kwnames, j);
      if (kw == spec.pyname || PyUnicode_Compare(kw, spec.pyname) == 0) return args[nargs + j];
    }
  }
  return spec.deflt;
}

void record_call(TracedFunctionObject* tf, PyObject* const* args, size_t nargsf,
                 PyObject* kwnames, uint64_t t0, uint64_t t1, PyObject* pending) {
  RegionObject* owner = tf->owner;
  if (owner->args == nullptr && pending == nullptr && tf->nspecs == 0 && !tf->self_attrs) {
    record_complete(tf->name, tf->name_obj, owner->cat, t0, t1, nullptr, 0);
    return;
  }
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);  // the call may have raised: keep its exception
  {
    ArgList list;
    add_sticky_args(owner, list);
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (tf->self_attrs && nargs > 0) {
      for (int i = 0; i < kNumTagKeys; ++i) {
        PyObject* v = nullptr;
        if (lookup_optional_attr(args[0], g_tag_key_str[i], &v) < 0) PyErr_Clear();
        if (v != nullptr) {
          if (v != Py_None) list.add(g_tag_key_id[i], v);
          Py_DECREF(v);
        }
      }
    }
    for (int i = 0; i < tf->nspecs; ++i) {
      PyObject* v = captured_value(tf->specs[i], args, nargs, kwnames);
      if (v != nullptr && v != Py_None) list.add(tf->specs[i].key, v);
    }
    if (pending != nullptr) list.add_mapping(pending);
    record_complete(tf->name, tf->name_obj, owner->cat, t0, t1, list.data(), list.size());
  }
  PyErr_Restore(et, ev, tb);
}

PyObject* TF_vectorcall(PyObject* op, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* tf = reinterpret_cast<TracedFunctionObject*>(op);
  if (!dft_enabled_inline()) {
    count_skipped_call();
    return PyObject_Vectorcall(tf->func, args, nargsf, kwnames);
  }
  // The owner can be switched off after decorating (dft_ai's disable()).
  if (!tf->owner->enable) return PyObject_Vectorcall(tf->func, args, nargsf, kwnames);
  // This thread's, before and after the call (read once).
  OpenStack& open = this_thread_open();
  uint64_t t0 = dft_ticks_inline();
  uint64_t token = open_push(open, tf->owner, tf->name, tf->owner->cat, tf->name_obj, t0, true);
  PyObject* result = PyObject_Vectorcall(tf->func, args, nargsf, kwnames);
  uint64_t t1 = dft_ticks_inline();
  PyObject* pending = nullptr;
  bool flushed = false;
  if (token != 0) {
    int i = open_find_token(open, token);
    if (i >= 0) {
      // Claimed: not written yet by flush() or by the signal-time cut.
      OpenEvent e = open_take(open, i);  // claimed with it
      // A frozen stack (the cut reads it from the signal thread) keeps the
      // entry, which names the owner: counted in its `pushed` from here on,
      // as a region's entry is from its push, so the owner is kept
      // allocated when freed (region_freed.cc) and no entry ever names
      // freed memory (a child forked from here drops it, count and all).
      if (e.owner == nullptr) region_open_count_add(tf->owner, 1);
      pending = e.pending;
      flushed = e.live == 0 || e.flushed;
    }
  }
  if (!flushed) record_call(tf, args, nargsf, kwnames, t0, t1, pending);
  Py_XDECREF(pending);
  return result;
}

// TracedFunction(func, owner, name, specs, self_attrs)
//   specs: tuple of (key: str, pos: int, has_default: bool, default)
PyObject* TF_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  PyObject *func, *owner, *name, *specs;
  int self_attrs = 0;
  if (kwds != nullptr && PyDict_GET_SIZE(kwds) != 0) {
    PyErr_SetString(PyExc_TypeError, "TracedFunction takes positional arguments only");
    return nullptr;
  }
  if (!PyArg_ParseTuple(args, "OOUO!p:TracedFunction", &func, &owner, &name, &PyTuple_Type, &specs,
                        &self_attrs))
    return nullptr;
  if (!PyCallable_Check(func)) {
    PyErr_Format(PyExc_TypeError, "dftracer: cannot trace a %.100s: not callable",
                 Py_TYPE(func)->tp_name);
    return nullptr;
  }
  if (!PyObject_TypeCheck(owner, g_region_type)) {
    PyErr_SetString(PyExc_TypeError, "TracedFunction: owner must be a dft_fn");
    return nullptr;
  }
  Py_ssize_t nspecs = PyTuple_GET_SIZE(specs);
  if (nspecs > kNumTagKeys) {
    PyErr_SetString(PyExc_ValueError, "TracedFunction: too many captured parameters");
    return nullptr;
  }
  auto* tf = reinterpret_cast<TracedFunctionObject*>(type->tp_alloc(type, 0));
  if (tf == nullptr) return nullptr;
  tf->vectorcall = TF_vectorcall;
  tf->func = Py_NewRef(func);
  tf->owner = reinterpret_cast<RegionObject*>(Py_NewRef(owner));
  region_ensure_ids(tf->owner);
  tf->name_obj = Py_NewRef(name);
  tf->name = bounded_name_id(name);  // a function made per call may have a new name each time
  tf->self_attrs = self_attrs;
  for (Py_ssize_t i = 0; i < nspecs; ++i) {
    PyObject* key;
    Py_ssize_t pos;
    int has_default;
    PyObject* deflt;
    if (!PyArg_ParseTuple(PyTuple_GET_ITEM(specs, i), "UnpO:capture spec", &key, &pos,
                          &has_default, &deflt)) {
      Py_DECREF(tf);
      return nullptr;
    }
    CaptureSpec& s = tf->specs[tf->nspecs++];
    s.key = intern_str(key);
    s.pyname = Py_NewRef(key);
    s.pos = pos;
    s.deflt = has_default ? Py_NewRef(deflt) : nullptr;
  }
  return reinterpret_cast<PyObject*>(tf);
}

int TF_traverse(PyObject* op, visitproc visit, void* arg) {
  auto* tf = reinterpret_cast<TracedFunctionObject*>(op);
  Py_VISIT(Py_TYPE(op));
  Py_VISIT(tf->func);
  Py_VISIT(reinterpret_cast<PyObject*>(tf->owner));
  Py_VISIT(tf->dict);
  for (int i = 0; i < tf->nspecs; ++i) Py_VISIT(tf->specs[i].deflt);
  return 0;
}

int TF_clear(PyObject* op) {
  auto* tf = reinterpret_cast<TracedFunctionObject*>(op);
  Py_CLEAR(tf->func);
  Py_CLEAR(tf->owner);
  Py_CLEAR(tf->name_obj);
  Py_CLEAR(tf->dict);
  for (int i = 0; i < tf->nspecs; ++i) {
    Py_CLEAR(tf->specs[i].pyname);
    Py_CLEAR(tf->specs[i].deflt);
  }
  tf->nspecs = 0;
  return 0;
}

void TF_dealloc(PyObject* op) {
  auto* tf = reinterpret_cast<TracedFunctionObject*>(op);
  PyObject_GC_UnTrack(op);
  if (tf->weakreflist != nullptr) PyObject_ClearWeakRefs(op);
  TF_clear(op);
  PyTypeObject* tp = Py_TYPE(op);
  tp->tp_free(op);
  Py_DECREF(tp);
}

PyObject* TF_descr_get(PyObject* self, PyObject* obj, PyObject*) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  return PyMethod_New(self, obj);
}

PyObject* TF_dict_attr(PyObject* self, const char* attr) {
  auto* tf = reinterpret_cast<TracedFunctionObject*>(self);
  if (tf->dict == nullptr) return nullptr;
  return PyDict_GetItemString(tf->dict, attr);  // borrowed, may be NULL
}

PyObject* TF_repr(PyObject* self) {
  PyObject* qn = TF_dict_attr(self, "__qualname__");
  if (qn != nullptr && PyUnicode_Check(qn))
    return PyUnicode_FromFormat("<dftracer traced function %U>", qn);
  return PyUnicode_FromFormat("<dftracer traced function %R>",
                              reinterpret_cast<TracedFunctionObject*>(self)->func);
}

// Pickled by reference, like the function it replaces: module.qualname.
PyObject* TF_reduce(PyObject* self, PyObject*) {
  PyObject* qn = TF_dict_attr(self, "__qualname__");
  if (qn == nullptr) {
    PyErr_SetString(PyExc_TypeError, "dftracer: traced function has no __qualname__ to pickle by");
    return nullptr;
  }
  return Py_NewRef(qn);
}

PyObject* TF_get_func(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<TracedFunctionObject*>(self)->func);
}
PyObject* TF_get_owner(PyObject* self, void*) {
  return Py_NewRef(reinterpret_cast<PyObject*>(reinterpret_cast<TracedFunctionObject*>(self)->owner));
}

PyMethodDef TF_methods[] = {{"__reduce__", TF_reduce, METH_NOARGS, nullptr},
                            {nullptr, nullptr, 0, nullptr}};

PyGetSetDef TF_getset[] = {
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
    {"_func", TF_get_func, nullptr, "The traced function.", nullptr},
    {"_owner", TF_get_owner, nullptr, "The dft_fn that traced it.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef TF_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(TracedFunctionObject, vectorcall), READONLY,
     nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(TracedFunctionObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(TracedFunctionObject, weakreflist), READONLY,
     nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot TF_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(TF_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(TF_dealloc)},
    {Py_tp_traverse, reinterpret_cast<void*>(TF_traverse)},
    {Py_tp_clear, reinterpret_cast<void*>(TF_clear)},
    {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
    {Py_tp_descr_get, reinterpret_cast<void*>(TF_descr_get)},
    {Py_tp_repr, reinterpret_cast<void*>(TF_repr)},
    {Py_tp_methods, TF_methods},
    {Py_tp_getset, TF_getset},
    {Py_tp_members, TF_members},
    {Py_tp_doc, const_cast<char*>("A function traced by dft_fn.log.")},
    {0, nullptr}};

PyType_Spec TF_spec = {"dftracer._core.TracedFunction", sizeof(TracedFunctionObject), 0,
                       Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                           Py_TPFLAGS_METHOD_DESCRIPTOR,
                       TF_slots};

}  // namespace

bool register_traced_function(PyObject* module) {
  PyObject* type = PyType_FromSpec(&TF_spec);
  if (type == nullptr) return false;
  g_tf_type = reinterpret_cast<PyTypeObject*>(type);
  Py_INCREF(type);
  if (PyModule_AddObject(module, "TracedFunction", type) < 0) {
    Py_DECREF(type);
    return false;
  }
  return true;
}

}  // namespace dft_py
