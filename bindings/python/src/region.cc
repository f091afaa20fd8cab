// `Region`: the C base class of dftracer.python.dft_fn.
//
// Written against the CPython C API rather than through nanobind because it
// is the per-region hot path: `with dft_fn(cat, name):` costs one type call
// (tp_new + tp_init), __enter__ (one dft_ticks) and __exit__ (one
// dft_complete_ticks), with no Python frame of ours in between.
#include "region.h"

#include <nanobind/nanobind.h>

#include "args.h"
#include "intern_cache.h"
#include "module.h"
#include "open_events.h"
#include "skipped_call.h"

namespace dft_py {

PyTypeObject* g_region_type = nullptr;
dft_id g_tag_key_id[kNumTagKeys];
PyObject* g_tag_key_str[kNumTagKeys];

namespace {

// pydftracer's tag keys, in its order: the one list of them. dft_fn's
// parameters below are built from it, and Python reads it as _core.TAG_KEYS
// (region.py's parameter capture, dynamo.py's Dynamo tags).
const char* const kTagKeyNames[kNumTagKeys] = {"epoch", "step", "image_idx", "image_size"};

// Merges normalized `src` into *dst (created on first use).
int merge_into(PyObject** dst, PyObject* src) {
  if (*dst == nullptr) {
    *dst = PyDict_Copy(src);
    return *dst ? 0 : -1;
  }
  return PyDict_Update(*dst, src);
}

// Name of the function that called dft_fn(...) (pydftracer takes
// inspect.stack()[1].function; this is the same without the cost).
PyObject* caller_function_name() {
  PyFrameObject* frame = PyEval_GetFrame();  // borrowed
  if (frame != nullptr) {
    PyCodeObject* code = PyFrame_GetCode(frame);  // new ref
    PyObject* name = PyObject_GetAttrString(reinterpret_cast<PyObject*>(code), "co_name");
    Py_DECREF(code);
    if (name != nullptr && PyUnicode_Check(name)) return name;
    Py_XDECREF(name);
    PyErr_Clear();
  }
  return PyUnicode_FromString("<unknown>");
}

PyObject* Region_new(PyTypeObject* type, PyObject*, PyObject*) {
  auto* self = reinterpret_cast<RegionObject*>(type->tp_alloc(type, 0));
  if (self == nullptr) return nullptr;
  self->enable = 1;
  return reinterpret_cast<PyObject*>(self);
}

// pydftracer starts the clock in the constructor (reset()), so that
// `f = dft_fn(...); ...; f.flush()` times the code in between.
inline void start_clock(RegionObject* self) {
  if (self->enable && dft_enabled_inline()) {
    region_ensure_ids(self);
    self->t0 = dft_ticks_inline();
  } else {
    self->t0 = 0;
  }
}

// Fills a Region from dft_fn's arguments (shared by tp_init and the
// vectorcall constructor). `name`, `tags[i]` are Py_None when not given.
int region_setup(RegionObject* self, PyObject* cat, PyObject* name, PyObject* const tags[kNumTagKeys],
                 PyObject* enable) {
  if (!PyUnicode_Check(cat)) {
    PyErr_Format(PyExc_TypeError, "dftracer: dft_fn cat must be a str, got %.100s",
                 Py_TYPE(cat)->tp_name);
    return -1;
  }
  PyObject* name_obj;
  if (name == Py_None || (PyUnicode_Check(name) && PyUnicode_GET_LENGTH(name) == 0)) {
    name_obj = caller_function_name();
    if (name_obj == nullptr) return -1;
  } else if (PyUnicode_Check(name)) {
    name_obj = Py_NewRef(name);
  } else {
    PyErr_Format(PyExc_TypeError, "dftracer: dft_fn name must be a str or None, got %.100s",
                 Py_TYPE(name)->tp_name);
    return -1;
  }
  int en = enable == Py_True ? 1 : PyObject_IsTrue(enable);
  if (en < 0) {
    Py_DECREF(name_obj);
    return -1;
  }
  Py_XSETREF(self->name_obj, name_obj);
  Py_XSETREF(self->cat_obj, Py_NewRef(cat));
  self->name = 0;  // interned on first use with tracing on
  self->name_inline = 0;
  self->cat = 0;
  self->enable = en;
  self->flushed = 0;
  Py_CLEAR(self->args);
  for (int i = 0; i < kNumTagKeys; ++i) {
    if (tags[i] == Py_None) continue;
    if (self->args == nullptr && (self->args = PyDict_New()) == nullptr) return -1;
    PyObject* v = normalize_value(tags[i]);
    int rc = PyDict_SetItem(self->args, g_tag_key_str[i], v);
    Py_DECREF(v);
    if (rc < 0) return -1;
  }
  start_clock(self);
  return 0;
}

// Parameter order of dft_fn(cat, name=None, <tag keys>=None, enable=True),
// filled from kTagKeyNames by register_region; nullptr-terminated, so it is
// also Region_init's keyword list.
constexpr int kNumParams = 2 + kNumTagKeys + 1;
constexpr int kEnableParam = kNumParams - 1;
// The parsing code below spells out one slot per tag key.
static_assert(kNumTagKeys == 4, "Region_init's format string and v[] initializers list four tag keys");
const char* kParamNames[kNumParams + 1];
PyObject* g_param_str[kNumParams];

void fill_param_names() {
  kParamNames[0] = "cat";
  kParamNames[1] = "name";
  for (int i = 0; i < kNumTagKeys; ++i) kParamNames[2 + i] = kTagKeyNames[i];
  kParamNames[kEnableParam] = "enable";
  kParamNames[kNumParams] = nullptr;
}

int Region_init(PyObject* op, PyObject* args, PyObject* kwds) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  char** kwlist = const_cast<char**>(kParamNames);
  PyObject* cat = nullptr;
  PyObject* name = Py_None;
  PyObject* tags[kNumTagKeys] = {Py_None, Py_None, Py_None, Py_None};
  PyObject* enable = Py_True;
  if (!PyArg_ParseTupleAndKeywords(args, kwds, "O|OOOOOO:dft_fn", kwlist,
                                   &cat, &name, &tags[0], &tags[1], &tags[2], &tags[3], &enable))
    return -1;
  return region_setup(self, cat, name, tags, enable);
}

// Freed dft_fn objects kept for the next dft_fn(...) (`with dft_fn(cat,
// name):` makes and frees one per block); only the class _fast_construct
// registered, and only where DFT_PY_REUSE_OBJECTS (region.h).
// Their fields are cleared; the memory keeps its GC header, untracked.
PyTypeObject* g_pooled_type = nullptr;
#ifdef DFT_PY_REUSE_OBJECTS
constexpr int kRegionFreeMax = 16;
PyObject* g_region_free[kRegionFreeMax];
int g_region_nfree = 0;
#endif

}  // namespace

// A region that does nothing (enable=0), for bindings whose region is freed
// by a dealloc that cannot keep it (region_hand_over_bindings).
PyObject* g_dead_region = nullptr;

void Region_dealloc(PyObject* op) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  PyTypeObject* tp = Py_TYPE(op);
#ifdef DFT_PY_REUSE_OBJECTS
  // (Room in the free list is checked where the object is pushed: Python
  // code may free other regions before that.)
  const bool pool = tp == g_pooled_type;
#else
  const bool pool = false;
#endif
  // Its kept __enter__/__exit__ still in use (`with dft_fn(...)` drops the
  // object right after binding them) hold it from now on: it lives on as
  // theirs. Only in its class's own dealloc, before anything of it is
  // freed; called as the base of the generic subclass dealloc, Region_finalize
  // did that already, and what is left (a class given another finalizer
  // after they were bound) goes to the region that does nothing.
  const bool own = tp->tp_dealloc == Region_dealloc;
  if (Py_ssize_t owners = region_hand_over_bindings(self, own ? op : g_dead_region, pool)) {
    Py_SET_REFCNT(op, owners);
    return;
  }
  if (PyType_IS_GC(tp)) PyObject_GC_UnTrack(op);
  // Entered and never exited: kept allocated while another thread holds an
  // entry of it (region_freed.cc).
  if (__builtin_expect(self->pushed != 0, 0) && region_dealloc_while_open(self)) return;
  Py_CLEAR(self->name_obj);
  Py_CLEAR(self->cat_obj);
  Py_CLEAR(self->args);
#ifdef DFT_PY_REUSE_OBJECTS
  // Room checked now: Python code run since the top (a weakref callback of
  // a binding the hand-over freed, a str subclass's __del__ as the fields
  // went) may have freed other regions into the list.
  if (pool && __builtin_expect(g_region_nfree < kRegionFreeMax, 1)) {
    self->bindings_own = 0;
    g_region_free[g_region_nfree++] = op;  // keeps its reference to the class
    return;
  }
  // Full: the bindings kept for it go (unused: in use, the hand-over
  // returned above).
  if (pool) region_hand_over_bindings_slow(self, op, false);
#endif
  tp->tp_free(op);
  Py_DECREF(tp);
}

// Run before the generic subclass dealloc frees anything of the object (and
// by the collector, or an explicit __del__()): its bindings in use hold it
// from now on, the others are freed. The finalizer runs once per object, so
// later bindings hold their region themselves.
void Region_finalize(PyObject* op) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  for (Py_ssize_t owners = region_hand_over_bindings(self, op, false); owners > 0; --owners) Py_INCREF(op);
  self->bindings_own = 1;
}

namespace {

// A Region of `type` from the free list, or NULL when there is none.
PyObject* pooled_region(PyTypeObject* type) {
#ifdef DFT_PY_REUSE_OBJECTS
  if (type == g_pooled_type && g_region_nfree > 0) {
    // What PyObject_Init does, but the class reference was kept.
    PyObject* op = g_region_free[--g_region_nfree];
    Py_SET_REFCNT(op, 1);
    return op;
  }
#endif
  return nullptr;
}

// Vectorcall constructor, installed on dft_fn by _core._fast_construct(cls):
// `dft_fn("cat", "name")` then needs no args tuple, no kwargs dict and no
// format-string parsing. Same checks and errors as tp_init.
PyObject* Region_vectorcall_new(PyObject* callable, PyObject* const* args, size_t nargsf,
                                PyObject* kwnames) {
  auto* type = reinterpret_cast<PyTypeObject*>(callable);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  // dft_fn("cat", "name"), the common form, on a freed object (its fields
  // cleared by Region_dealloc): what region_setup does for it.
  if (nargs == 2 && kwnames == nullptr && PyUnicode_Check(args[0]) && PyUnicode_Check(args[1]) &&
      PyUnicode_GET_LENGTH(args[1]) != 0) {
    if (PyObject* op = pooled_region(type)) {
      auto* self = reinterpret_cast<RegionObject*>(op);
      self->name_obj = Py_NewRef(args[1]);
      self->cat_obj = Py_NewRef(args[0]);
      self->name = 0;
      self->name_inline = 0;
      self->cat = 0;
      self->enable = 1;
      self->flushed = 0;
      start_clock(self);
      return op;
    }
  }
  PyObject* v[kNumParams] = {nullptr, Py_None, Py_None, Py_None, Py_None, Py_None, Py_True};
  if (nargs > kNumParams) {
    PyErr_Format(PyExc_TypeError, "dft_fn() takes at most %d arguments (%zd given)", kNumParams,
                 nargs);
    return nullptr;
  }
  for (Py_ssize_t i = 0; i < nargs; ++i) v[i] = args[i];
  if (kwnames != nullptr) {
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nkw; ++j) {
      PyObject* kw = PyTuple_GET_ITEM(kwnames, j);
      int k = 0;
      for (; k < kNumParams; ++k)
        if (kw == g_param_str[k] || PyUnicode_Compare(kw, g_param_str[k]) == 0) break;
      if (PyErr_Occurred()) return nullptr;
      if (k == kNumParams) {
        PyErr_Format(PyExc_TypeError, "dft_fn() got an unexpected keyword argument '%U'", kw);
        return nullptr;
      }
      if (k < nargs) {
        PyErr_Format(PyExc_TypeError, "dft_fn() got multiple values for argument '%U'", kw);
        return nullptr;
      }
      v[k] = args[nargs + j];
    }
  }
  if (v[0] == nullptr) {
    PyErr_SetString(PyExc_TypeError, "dft_fn() missing required argument 'cat' (pos 1)");
    return nullptr;
  }
  PyObject* op = pooled_region(type);
  if (op == nullptr && (op = type->tp_alloc(type, 0)) == nullptr) return nullptr;
  auto* self = reinterpret_cast<RegionObject*>(op);
  self->enable = 1;
  if (region_setup(self, v[0], v[1], &v[2], v[kEnableParam]) < 0) {
    Py_DECREF(op);
    return nullptr;
  }
  return op;
}

// _fast_construct(cls): gives a Region subclass the vectorcall constructor.
// Only for classes that keep Region's __new__/__init__ (a subclass that
// defines its own gets the normal path: tp_vectorcall is never inherited).
PyObject* fast_construct(PyObject*, PyObject* cls) {
  if (!PyType_Check(cls) || !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(cls), g_region_type)) {
    PyErr_SetString(PyExc_TypeError, "_fast_construct: expected a subclass of Region");
    return nullptr;
  }
  auto* t = reinterpret_cast<PyTypeObject*>(cls);
  if (t->tp_init == g_region_type->tp_init && t->tp_new == g_region_type->tp_new)
    t->tp_vectorcall = Region_vectorcall_new;
  // A class that adds nothing to Region's instances (no __dict__, no
  // __weakref__, no slots, no finalizer but Region's) is freed by Region_dealloc itself,
  // not through the generic subclass dealloc, and its first such class
  // (dft_fn) gets the free list. Subclasses of it get the generic dealloc
  // again from type(), which ends in Region_dealloc.
  if (t->tp_basicsize == g_region_type->tp_basicsize && t->tp_dictoffset == 0 && t->tp_weaklistoffset == 0 &&
      t->tp_finalize == g_region_type->tp_finalize && t->tp_del == nullptr && t->tp_vectorcall == Region_vectorcall_new) {
    t->tp_dealloc = Region_dealloc;
    if (g_pooled_type == nullptr) g_pooled_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(cls));
  }
  Py_RETURN_NONE;
}

extern PyMethodDef Region_methods[];

// _region_method(cls, name): Region's C method `name` as a method descriptor
// of the subclass cls. CPython specializes a call of a C method only on an
// instance of the descriptor's own class, so `node.start()` on a DFTracerAI
// takes the direct call with DFTracerAI.start made here, and the generic
// call with Region's.
PyObject* region_method(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 || !PyType_Check(args[0]) ||
      !PyType_IsSubtype(reinterpret_cast<PyTypeObject*>(args[0]), g_region_type) || !PyUnicode_Check(args[1])) {
    PyErr_SetString(PyExc_TypeError, "_region_method(cls, name): cls a subclass of Region");
    return nullptr;
  }
  for (PyMethodDef* def = Region_methods; def->ml_name != nullptr; ++def)
    if (PyUnicode_CompareWithASCIIString(args[1], def->ml_name) == 0)
      return PyDescr_NewMethod(reinterpret_cast<PyTypeObject*>(args[0]), def);
  PyErr_Format(PyExc_AttributeError, "Region has no C method %R", args[1]);
  return nullptr;
}

PyMethodDef module_functions[] = {
    {"_fast_construct", fast_construct, METH_O, nullptr},
    {"_region_method", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(region_method)), METH_FASTCALL,
     nullptr},
    {nullptr, nullptr, 0, nullptr}};

// Writes the innermost open event of this object on this thread (or the
// object-level one). `close` removes it (exit); otherwise it stays open but
// marked flushed (flush()).
void finish_event(RegionObject* self, bool close) {
  uint64_t t1 = dft_ticks_inline();
  OpenStack& open = this_thread_open();
  int i = open_find_owner(open, self, /*regions_only=*/close);
  if (i >= 0) {
    if (close) {
      // Taken and claimed in one change of the stack; not written when
      // flushed already, nor when the signal-time cut took it.
      OpenEvent e = open_take(open, i);
      if (e.owner != nullptr) region_open_count_add(self, -1);  // removed (not kept by a frozen stack)
      if (!e.flushed && e.live != 0) record_region_event(self, e.name, e.name_obj, e.t0, t1, e.pending);
      Py_XDECREF(e.pending);
    } else {
      OpenEvent& e = open_at(open, i);
      open_begin_write(open);
      const bool write = !e.flushed && open_claim(open, e);
      e.flushed = true;
      open_end_write(open);
      if (write) record_region_event(self, e.name, e.name_obj, e.t0, t1, e.pending);
      Py_CLEAR(e.pending);
    }
  } else if (self->t0 != 0 && !self->flushed) {
    record_region_event(self, self->name, self->name_obj, self->t0, t1, nullptr);
  }
  self->flushed = 1;
}

PyObject* Region_flush(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  if (self->enable) finish_event(self, false);
  return Py_NewRef(op);
}

PyObject* Region_reset(PyObject* op, PyObject*) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  if (self->enable && dft_enabled_inline()) {
    uint64_t t = dft_ticks_inline();
    OpenStack& open = this_thread_open();
    int i = open_find_owner(open, self, false);
    if (i >= 0) {
      open_at(open, i).t0 = t;
      open_at(open, i).flushed = false;
    }
    self->t0 = t;
    self->flushed = 0;
  }
  return Py_NewRef(op);
}

// _attach(args: dict): args for the innermost open event of this dft_fn on
// this thread; with none open, sticky args for all its later events.
PyObject* Region_attach(PyObject* op, PyObject* mapping) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  if (!self->enable) Py_RETURN_NONE;
  PyObject* norm = normalize_mapping(mapping);
  if (norm == nullptr) return nullptr;
  OpenStack& open = this_thread_open();
  int i = open_find_owner(open, self, false);
  int rc = (i >= 0) ? merge_into(&open_at(open, i).pending, norm) : merge_into(&self->args, norm);
  Py_DECREF(norm);
  if (rc < 0) return nullptr;
  Py_RETURN_NONE;
}

// _sticky(args: dict): adds to the sticky args, whatever is open.
PyObject* Region_sticky(PyObject* op, PyObject* mapping) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  PyObject* norm = normalize_mapping(mapping);
  if (norm == nullptr) return nullptr;
  int rc = merge_into(&self->args, norm);
  Py_DECREF(norm);
  if (rc < 0) return nullptr;
  Py_RETURN_NONE;
}

// _record(name, t0, t1, key=0, value=None): an event of this dft_fn with
// its sticky args plus one extra arg. Used by the Python helpers (iter(),
// generator wrappers) that keep their own ticks. `name` and `key` are ids,
// or strs where _core.name_ref() found the table at its cap.
PyObject* Region_record(PyObject* op, PyObject* const* args, Py_ssize_t nargs) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  if (nargs < 3 || nargs > 5) {
    PyErr_SetString(PyExc_TypeError, "_record(name, t0, t1, key=0, value=None)");
    return nullptr;
  }
  if (!self->enable || !dft_enabled_inline()) {
    if (self->enable) count_skipped_call();
    Py_RETURN_NONE;
  }
  region_ensure_ids(self);
  PyObject* name_obj = PyUnicode_Check(args[0]) ? args[0] : nullptr;
  unsigned long name = name_obj ? 0 : PyLong_AsUnsignedLong(args[0]);
  unsigned long long t0 = PyLong_AsUnsignedLongLong(args[1]);
  unsigned long long t1 = PyLong_AsUnsignedLongLong(args[2]);
  PyObject* key_obj = nargs >= 4 && PyUnicode_Check(args[3]) ? args[3] : nullptr;
  unsigned long key = nargs >= 4 && !key_obj ? PyLong_AsUnsignedLong(args[3]) : 0;
  if (PyErr_Occurred()) return nullptr;
  const bool extra = nargs == 5 && (key != 0 || key_obj != nullptr);
  if (self->args == nullptr && !extra) {
    record_complete(static_cast<dft_id>(name), name_obj, self->cat, t0, t1, nullptr, 0);
    Py_RETURN_NONE;
  }
  ArgList list;
  add_sticky_args(self, list);
  if (extra && key_obj != nullptr) list.add_item(key_obj, args[4]);
  else if (extra) list.add(static_cast<dft_id>(key), args[4]);
  record_complete(static_cast<dft_id>(name), name_obj, self->cat, t0, t1, list.data(), list.size());
  Py_RETURN_NONE;
}

PyObject* Region_get_name(PyObject* op, void*) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  return Py_NewRef(self->name_obj ? self->name_obj : Py_None);
}
PyObject* Region_get_cat(PyObject* op, void*) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  return Py_NewRef(self->cat_obj ? self->cat_obj : Py_None);
}
PyObject* Region_get_enable(PyObject* op, void*) {
  return PyBool_FromLong(reinterpret_cast<RegionObject*>(op)->enable);
}
// dft_ai's enable()/disable() switch an object after construction; its
// regions and the functions it decorated read the flag at each use.
int Region_set_enable(PyObject* op, PyObject* value, void*) {
  if (value == nullptr) {
    PyErr_SetString(PyExc_AttributeError, "dftracer: _enable cannot be deleted");
    return -1;
  }
  int en = PyObject_IsTrue(value);
  if (en < 0) return -1;
  reinterpret_cast<RegionObject*>(op)->enable = en;
  return 0;
}
PyObject* Region_get_cat_id(PyObject* op, void*) {
  region_ensure_ids(reinterpret_cast<RegionObject*>(op));
  return PyLong_FromUnsignedLong(reinterpret_cast<RegionObject*>(op)->cat);
}
PyObject* Region_get_args(PyObject* op, void*) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  return self->args ? PyDict_Copy(self->args) : PyDict_New();
}

// DFTracerAI.start(metadata=False) / stop(metadata=False) (ai_common.py):
// open / close the node's event as `with` does, or, with metadata, write
// pydftracer's "<name>.start" / "<name>.end" metadata event (Python's
// _time_metadata). In C so that start()+stop() costs what a `with` does.
PyObject* ai_start_stop(PyObject* op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames, bool start) {
  const char* what = start ? "start" : "stop";
  PyObject* metadata = nargs > 0 ? args[0] : nullptr;
  if (nargs > 1) {
    PyErr_Format(PyExc_TypeError, "%s() takes at most 1 positional argument (%zd given)", what, nargs);
    return nullptr;
  }
  Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
  for (Py_ssize_t j = 0; j < nkw; ++j) {
    PyObject* kw = PyTuple_GET_ITEM(kwnames, j);
    if (PyUnicode_CompareWithASCIIString(kw, "metadata") != 0 || metadata != nullptr) {
      PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'", what, kw);
      return nullptr;
    }
    metadata = args[nargs + j];
  }
  int md = metadata != nullptr ? PyObject_IsTrue(metadata) : 0;
  if (md < 0) return nullptr;
  if (md) return PyObject_CallMethod(op, "_time_metadata", "s", start ? "start" : "end");
  if (start) {
    PyObject* r = region_enter(op);
    if (r == nullptr) return nullptr;
    Py_DECREF(r);
  } else {
    region_exit(op);
  }
  Py_RETURN_NONE;
}
PyObject* Region_ai_start(PyObject* op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return ai_start_stop(op, args, nargs, kwnames, true);
}
PyObject* Region_ai_stop(PyObject* op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
  return ai_start_stop(op, args, nargs, kwnames, false);
}

PyMethodDef Region_methods[] = {
    {"flush", Region_flush, METH_NOARGS,
     "Writes the event now (from the last start to now); a later exit writes nothing."},
    {"reset", Region_reset, METH_NOARGS, "Restarts the clock of the current event."},
    {"_ai_start", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Region_ai_start)),
     METH_FASTCALL | METH_KEYWORDS,
     "start(metadata=False): opens the node's event (metadata=True: writes a metadata event <name>.start "
     "whose value is the time, as pydftracer)."},
    {"_ai_stop", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Region_ai_stop)),
     METH_FASTCALL | METH_KEYWORDS,
     "stop(metadata=False): closes the event start() opened (metadata=True: <name>.end)."},
    {"_attach", Region_attach, METH_O, nullptr},
    {"_sticky", Region_sticky, METH_O, nullptr},
    {"_record", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Region_record)),
     METH_FASTCALL, nullptr},
    {nullptr, nullptr, 0, nullptr}};

PyGetSetDef Region_getset[] = {
    {"name", Region_get_name, nullptr, "Event name.", nullptr},
    {"cat", Region_get_cat, nullptr, "Event category.", nullptr},
    {"_name", Region_get_name, nullptr, nullptr, nullptr},
    {"_cat", Region_get_cat, nullptr, nullptr, nullptr},
    {"_enable", Region_get_enable, Region_set_enable, nullptr, nullptr},
    {"_cat_id", Region_get_cat_id, nullptr, nullptr, nullptr},
    {"_arguments", Region_get_args, nullptr, "Copy of the sticky args.", nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyType_Slot Region_slots[] = {
    {Py_tp_new, reinterpret_cast<void*>(Region_new)},
    {Py_tp_init, reinterpret_cast<void*>(Region_init)},
    {Py_tp_dealloc, reinterpret_cast<void*>(Region_dealloc)},
    {Py_tp_finalize, reinterpret_cast<void*>(Region_finalize)},
    {Py_tp_methods, Region_methods},
    {Py_tp_getset, Region_getset},
    {Py_tp_doc, const_cast<char*>("Base class of dftracer.python.dft_fn (C hot path).")},
    {0, nullptr}};

PyType_Spec Region_spec = {"dftracer._core.Region", sizeof(RegionObject), 0,
                           Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE, Region_slots};

}  // namespace

void record_complete_inline_name(PyObject* name_obj, dft_id cat, uint64_t t0, uint64_t t1, const dft_arg* args,
                                 uint32_t nargs) {
  // Past the intern cap (off the ordinary path). The str's UTF-8 is cached
  // in it since intern_str_bounded read it.
  Py_ssize_t len = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(name_obj, &len);
  if (utf8 == nullptr) {
    PyErr_Clear();
    utf8 = "<unencodable>";
    len = 13;
  }
  dft_complete_ticks_named(utf8, static_cast<size_t>(len), cat, t0, t1, args, nargs);
}

void record_region_event(RegionObject* owner, dft_id name, PyObject* name_obj, uint64_t t0, uint64_t t1,
                         PyObject* pending) {
  region_ensure_ids(owner);
  if (owner->args == nullptr && pending == nullptr) {
    record_complete(name, name_obj, owner->cat, t0, t1, nullptr, 0);
    return;
  }
  PyObject *et, *ev, *tb;
  PyErr_Fetch(&et, &ev, &tb);
  {
    ArgList list;
    add_sticky_args(owner, list);
    if (pending != nullptr) list.add_mapping(pending);
    record_complete(name, name_obj, owner->cat, t0, t1, list.data(), list.size());
  }
  PyErr_Restore(et, ev, tb);
}

PyObject* region_enter(PyObject* op) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  if (self->enable && dft_enabled_inline()) {
    region_ensure_ids(self);
    uint64_t t = dft_ticks_inline();
    self->t0 = t;
    self->flushed = 0;
    if (open_push(this_thread_open(), self, self->name, self->cat, self->name_obj, t, false) != 0)
      region_open_count_add(self, 1);
    else
      region_push_after_dropping_dead(self, t);  // full (entries of freed objects?)
  } else {
    self->t0 = 0;
    if (self->enable) count_skipped_call();  // the region's one event, skipped
  }
  return Py_NewRef(op);
}

namespace {

// region_exit past its off-path test, out of line: the test then needs no
// stack frame.
__attribute__((noinline)) void region_exit_open(RegionObject* self) {
  if (self->enable) {
    finish_event(self, true);
  } else {
    // Disabled while open (dft_ai's disable() inside a `with`): the event is
    // dropped, as pydftracer drops it, and its entry must not stay open.
    OpenStack& open = this_thread_open();
    int i = open_find_owner(open, self, /*regions_only=*/true);
    if (i >= 0) {
      OpenEvent e = open_take(open, i);
      if (e.owner != nullptr) region_open_count_add(self, -1);
      Py_XDECREF(e.pending);
    }
  }
}

}  // namespace

void region_exit(PyObject* op) {
  auto* self = reinterpret_cast<RegionObject*>(op);
  // No entry of it open on any thread, and no object-level event to write
  // (the off path): no clock read, no look at the open stack. Another
  // thread's exit of the same object leaves this thread's entry counted.
  if (!self->pushed && (self->t0 == 0 || self->flushed)) {
    self->flushed = 1;
    return;
  }
  region_exit_open(self);
}

void register_region(nanobind::module_& m) {
  PyObject* tag_keys = PyTuple_New(kNumTagKeys);
  if (tag_keys == nullptr) throw nanobind::python_error();
  for (int i = 0; i < kNumTagKeys; ++i) {
    g_tag_key_id[i] = dft_intern_cstr(kTagKeyNames[i]);
    g_tag_key_str[i] = PyUnicode_InternFromString(kTagKeyNames[i]);
    if (g_tag_key_str[i] == nullptr) {
      Py_DECREF(tag_keys);
      throw nanobind::python_error();
    }
    PyTuple_SET_ITEM(tag_keys, i, Py_NewRef(g_tag_key_str[i]));
  }
  if (PyModule_AddObject(m.ptr(), "TAG_KEYS", tag_keys) < 0) {
    Py_DECREF(tag_keys);
    throw nanobind::python_error();
  }
  fill_param_names();
  PyObject* type = PyType_FromSpec(&Region_spec);
  if (type == nullptr) throw nanobind::python_error();
  g_region_type = reinterpret_cast<PyTypeObject*>(type);
  Py_INCREF(type);  // g_region_type keeps one reference for the process
  if (!register_with_methods(g_region_type)) throw nanobind::python_error();
  g_dead_region = Region_new(g_region_type, nullptr, nullptr);
  if (g_dead_region == nullptr) throw nanobind::python_error();
  reinterpret_cast<RegionObject*>(g_dead_region)->enable = 0;
  if (PyModule_AddObject(m.ptr(), "Region", type) < 0) {
    Py_DECREF(type);
    throw nanobind::python_error();
  }
  for (int i = 0; i < kNumParams; ++i) {
    g_param_str[i] = PyUnicode_InternFromString(kParamNames[i]);
    if (g_param_str[i] == nullptr) throw nanobind::python_error();
  }
  if (PyModule_AddFunctions(m.ptr(), module_functions) < 0) throw nanobind::python_error();
  if (!register_traced_function(m.ptr())) throw nanobind::python_error();
  if (!register_null_context(m.ptr())) throw nanobind::python_error();
}

}  // namespace dft_py
