// The traced torch.distributed calls of dftracer/python/distributed/
// collectives.py, in C: `CommWrapper`, what replaces a blocking one-tensor
// collective (all_reduce(t), broadcast(t, src), reduce(t, dst)), and the
// helpers the Python wrapper of every other call uses (_comm_timed,
// _in_comm, _comm_bucket).
//
// A collective that waited for its peers returns to a thread whose caches
// the wait emptied (other threads and processes ran on its core): every
// cache line touched between two collectives is a miss, and a few
// microseconds of Python there cost tens (bench/comm/bench_comm_after.py).
// So the common shape has no Python frame at all: CommWrapper is a C
// callable (vectorcall) that, before the call, reads the tensor's byte
// count and dtype (through LibTorch for a plain tensor: dftracer._eager's
// tensor_meta.cc; else two attribute reads), finds the group's name, size
// and seq counter and the dtype's name in small per-wrapper caches, takes
// the seq (a C integer, comm_seq.h), reads the step and the DDP bucket;
// forwards the call unchanged; and after it reads the clock and records one
// event of ids and integers, touching nothing else. Whatever it cannot describe this way (another shape, a
// non-tensor payload, a value of an unexpected type, a full cache) goes to
// the Python wrapper, which describes the event after the call as before.
#include <Python.h>
#include <structmember.h>

#include <dftracer/dftracer.h>

#include "comm_seq.h"
#include "intern_cache.h"
#include "module.h"

namespace dft_py {
namespace {

// > 0 inside a traced call on this thread: the torch.distributed calls it
// makes itself are its own work, not events of their own.
thread_local int t_comm_depth = 0;
// The DDP bucket whose gradients the all-reduces issued now carry
// (collectives.bucket_scope, set by DDP's comm hook).
thread_local bool t_has_bucket = false;
thread_local int64_t t_bucket = 0;

PyObject* g_s_nbytes = nullptr;
PyObject* g_s_dtype = nullptr;
PyObject* g_s_group = nullptr;
PyObject* g_s_async_op = nullptr;
PyObject* g_s_value = nullptr;

// Arg keys, interned at the first traced call (tracing is on by then).
enum { kBytes, kGroup, kGroupSize, kDtype, kSeq, kBucket, kStep, kNumKeys };
const char* const kKeyNames[kNumKeys] = {"bytes", "group", "group_size", "dtype", "seq", "ddp_bucket", "step"};
dft_id g_key[kNumKeys] = {};

constexpr int kMaxGroups = 16;
constexpr int kMaxDtypes = 16;
constexpr int kMaxScalarTypes = 64;  // at::ScalarType values (torch 2.13 has 45)

// dftracer._eager's reader of a plain tensor (tensor_meta.cc): 1 and its
// byte count and at::ScalarType, or 0.
using TensorMetaFn = int (*)(PyObject*, int64_t*, int*);
constexpr const char* kTensorMetaCapsule = "dftracer.tensor_meta_fn";

struct GroupEntry {
  PyObject* pg;       // the process group (strong reference)
  PyObject* counter;  // its seq counter (itertools.count), shared with the Python path
  dft_id name;
  int64_t size;
};

struct DtypeEntry {
  PyObject* dtype;
  dft_id name;
};

// What a traced call reads comes first, then the common group's entry and
// dtype names (three cache lines for the usual call); the rest after.
struct CommWrapperObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* fn;          // the torch.distributed function, called unchanged
  dft_id name, cat;      // 0 until the first traced call
  Py_ssize_t group_pos;  // positional index of `group`, of `async_op`
  Py_ssize_t async_pos;
  PyObject* world_obj;   // getattr(world_obj, world_attr): the default group
  PyObject* world_attr;
  PyObject* step_dict;   // current_step's module dict: "value"
  TensorMetaFn tensor_meta;  // nullptr: the attribute reads only
  int ngroups, ndtypes;
  GroupEntry groups[kMaxGroups];
  dft_id scalar_type_name[kMaxScalarTypes];  // at::ScalarType -> dtype name, 0 until seen
  DtypeEntry dtypes[kMaxDtypes];
  PyObject* fallback;    // the Python wrapper: every call this one does not describe
  PyObject* name_str;    // the event's name and category (str)
  PyObject* cat_str;
  PyObject* group_info;  // pg -> (name: str, size: int, seq counter)
  PyObject* dtype_name;  // dtype -> str
  PyObject* meta_factory;  // () -> the tensor_meta capsule or None; called at the first traced call
  PyObject* dict;
  PyObject* weakreflist;
};

bool same_name(PyObject* a, PyObject* b) { return a == b || PyUnicode_Compare(a, b) == 0; }

// The cached entry of `pg`, made on first sight; NULL (error set, or none
// when the cache is full) when it cannot be.
// The callbacks (group_info, dtype_name) run Python code, which may let
// other threads run this wrapper meanwhile: the caches are searched (and
// their room checked) again after the callback, before the entry is added.
const GroupEntry* find_group(CommWrapperObject* w, PyObject* pg) {
  for (int i = 0; i < w->ngroups; ++i)
    if (w->groups[i].pg == pg) return &w->groups[i];
  return nullptr;
}

const GroupEntry* group_entry(CommWrapperObject* w, PyObject* pg) {
  if (const GroupEntry* g = find_group(w, pg)) return g;
  if (w->ngroups == kMaxGroups) return nullptr;
  PyObject* info = PyObject_CallOneArg(w->group_info, pg);
  if (info == nullptr) return nullptr;
  const GroupEntry* out = nullptr;
  if (PyTuple_Check(info) && PyTuple_GET_SIZE(info) == 3 && PyUnicode_Check(PyTuple_GET_ITEM(info, 0)) &&
      PyLong_Check(PyTuple_GET_ITEM(info, 1))) {
    int64_t size = PyLong_AsLongLong(PyTuple_GET_ITEM(info, 1));
    dft_id name = intern_str(PyTuple_GET_ITEM(info, 0));
    if (PyErr_Occurred() || name == 0) {
      // not describable here
    } else if ((out = find_group(w, pg)) != nullptr) {
      // another thread added it while group_info ran: its counter is the one in use
    } else if (w->ngroups < kMaxGroups) {
      GroupEntry& g = w->groups[w->ngroups++];
      g.pg = Py_NewRef(pg);
      g.counter = Py_NewRef(PyTuple_GET_ITEM(info, 2));
      g.name = name;
      g.size = size;
      out = &g;
    }
  }
  Py_DECREF(info);
  return out;
}

// The interned name of `dtype`; 0 (error set, or none when the cache is
// full) when it cannot be found.
dft_id find_dtype(const CommWrapperObject* w, PyObject* dtype) {
  for (int i = 0; i < w->ndtypes; ++i)
    if (w->dtypes[i].dtype == dtype) return w->dtypes[i].name;
  return 0;
}

dft_id dtype_id(CommWrapperObject* w, PyObject* dtype) {
  if (dft_id id = find_dtype(w, dtype)) return id;
  if (w->ndtypes == kMaxDtypes) return 0;
  PyObject* s = PyObject_CallOneArg(w->dtype_name, dtype);
  if (s == nullptr) return 0;
  dft_id id = PyUnicode_Check(s) && PyUnicode_GET_LENGTH(s) > 0 ? intern_str(s) : 0;
  Py_DECREF(s);
  if (id == 0) return 0;
  if (dft_id cached = find_dtype(w, dtype)) return cached;  // added by another thread meanwhile
  if (w->ndtypes == kMaxDtypes) return 0;
  w->dtypes[w->ndtypes++] = DtypeEntry{Py_NewRef(dtype), id};
  return id;
}

bool read_int(PyObject* o, int64_t* out) {
  if (!PyLong_CheckExact(o)) return false;
  int overflow = 0;
  *out = PyLong_AsLongLongAndOverflow(o, &overflow);
  return !overflow && !(*out == -1 && PyErr_Occurred());
}

// The event's args, in the order the Python wrapper writes them: bytes,
// group, group_size, dtype, seq, ddp_bucket, step. The seq is taken last,
// once nothing else can fail. False: not describable here (an error may be
// set; the caller clears it).
// The payload's byte count and dtype name: through LibTorch for a plain
// tensor whose dtype was seen before, else its `nbytes` and `dtype`
// attributes (and the dtype's name learnt for the next call).
bool payload(CommWrapperObject* w, PyObject* tensor, int64_t* nbytes, dft_id* dtype_name) {
  int st = -1;
  if (w->tensor_meta != nullptr && w->tensor_meta(tensor, nbytes, &st)) {
    if (st >= 0 && st < kMaxScalarTypes && (*dtype_name = w->scalar_type_name[st]) != 0) return true;
  } else {
    st = -1;
    PyObject* v = PyObject_GetAttr(tensor, g_s_nbytes);
    if (v == nullptr) return false;
    bool ok = read_int(v, nbytes);
    Py_DECREF(v);
    if (!ok) return false;
  }
  PyObject* dtype = PyObject_GetAttr(tensor, g_s_dtype);
  if (dtype == nullptr) return false;
  *dtype_name = dtype_id(w, dtype);
  Py_DECREF(dtype);
  if (*dtype_name == 0) return false;
  if (st >= 0 && st < kMaxScalarTypes) w->scalar_type_name[st] = *dtype_name;
  return true;
}

bool describe(CommWrapperObject* w, PyObject* tensor, PyObject* group, dft_arg* a, uint32_t* n) {
  int64_t nbytes = 0;
  dft_id dtype_name = 0;
  if (!payload(w, tensor, &nbytes, &dtype_name)) return false;

  PyObject* pg = group;
  if (pg == nullptr || pg == Py_None) {
    pg = PyObject_GetAttr(w->world_obj, w->world_attr);
    if (pg == nullptr) return false;
  } else {
    Py_INCREF(pg);
  }
  const GroupEntry* g = pg == Py_None ? nullptr : group_entry(w, pg);
  Py_DECREF(pg);
  if (g == nullptr) return false;

  int64_t step = 0;
  PyObject* sv = PyDict_GetItemWithError(w->step_dict, g_s_value);  // borrowed
  bool has_step = sv != nullptr && sv != Py_None;
  if (has_step && !read_int(sv, &step)) return false;
  if (sv == nullptr && PyErr_Occurred()) return false;

  int64_t seq = 0;
  if (!seq_take(g->counter, &seq)) {  // another iterator: its next int
    PyObject* seqv = PyIter_Next(g->counter);
    if (seqv == nullptr) return false;
    bool ok = read_int(seqv, &seq);
    Py_DECREF(seqv);
    if (!ok) return false;
  }

  uint32_t k = 0;
  auto put_int = [&](int key, int64_t x) {
    a[k].key = g_key[key];
    a[k].type = DFT_ARG_INT;
    a[k++].v.i = x;
  };
  auto put_str = [&](int key, dft_id id) {
    a[k].key = g_key[key];
    a[k].type = DFT_ARG_STR;
    a[k++].v.id = id;
  };
  put_int(kBytes, nbytes);
  put_str(kGroup, g->name);
  put_int(kGroupSize, g->size);
  put_str(kDtype, dtype_name);
  put_int(kSeq, seq);
  if (t_has_bucket) put_int(kBucket, t_bucket);
  if (has_step) put_int(kStep, step);
  *n = k;
  return true;
}

// The tensor reader, asked for at the first traced call: the wrapper is made
// while `import torch` runs (torch.nn, and so torch.nn.Parameter, may not be
// there yet). Without it (None, or an error) the wrapper reads attributes.
void resolve_tensor_meta(CommWrapperObject* w) {
  PyObject* factory = w->meta_factory;
  if (factory == nullptr) return;
  w->meta_factory = nullptr;
  PyObject* meta = PyObject_CallNoArgs(factory);
  Py_DECREF(factory);
  if (meta != nullptr && meta != Py_None)
    w->tensor_meta = reinterpret_cast<TensorMetaFn>(PyCapsule_GetPointer(meta, kTensorMetaCapsule));
  Py_XDECREF(meta);
  if (PyErr_Occurred()) PyErr_Clear();
}

bool ensure_ids(CommWrapperObject* w) {
  if (w->name != 0) return true;
  resolve_tensor_meta(w);
  if (g_key[0] == 0)
    for (int i = 0; i < kNumKeys; ++i) g_key[i] = dft_intern_cstr(kKeyNames[i]);
  dft_id cat = intern_str(w->cat_str);
  dft_id name = intern_str(w->name_str);
  if (name == 0 || cat == 0) return false;
  w->cat = cat;
  w->name = name;
  return true;
}

PyObject* CW_vectorcall(PyObject* op, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* w = reinterpret_cast<CommWrapperObject*>(op);
  if (t_comm_depth > 0 || !dft_enabled_inline()) return PyObject_Vectorcall(w->fn, args, nargsf, kwnames);
  Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
  bool fast = nargs >= 1 && nargs <= w->async_pos;
  PyObject* group = fast && nargs > w->group_pos ? args[w->group_pos] : nullptr;
  if (fast && kwnames != nullptr) {
    Py_ssize_t nkw = PyTuple_GET_SIZE(kwnames);
    for (Py_ssize_t j = 0; j < nkw && fast; ++j) {
      PyObject* kw = PyTuple_GET_ITEM(kwnames, j);
      if (same_name(kw, g_s_group)) {
        group = args[nargs + j];
      } else if (same_name(kw, g_s_async_op)) {
        fast = PyObject_Not(args[nargs + j]) == 1;  // async (or unreadable): the Python path
      }
    }
    if (PyErr_Occurred()) PyErr_Clear();
  }
  dft_arg a[kNumKeys];
  uint32_t n = 0;
  if (fast) fast = ensure_ids(w) && describe(w, args[0], group, a, &n);
  if (!fast) {
    if (PyErr_Occurred()) PyErr_Clear();  // never into the training step: the Python path records it
    return PyObject_Vectorcall(w->fallback, args, nargsf, kwnames);
  }
  // After the call, which may have waited for the peers (and so run other
  // threads on this core, emptying its caches): a clock read, the depth (its
  // address taken now) and the record, nothing else. The record skips
  // itself when tracing stopped meanwhile (and counts a call after the
  // trace was closed, as count_skipped_call does).
  int& depth = t_comm_depth;
  ++depth;
  uint64_t t0 = dft_ticks_inline();
  PyObject* ret = PyObject_Vectorcall(w->fn, args, nargsf, kwnames);
  uint64_t t1 = dft_ticks_inline();
  --depth;
  if (ret != nullptr) dft_complete_ticks_plain(w->name, w->cat, t0, t1, a, n);  // raised: no event (its seq stays used)
  return ret;
}

// CommWrapper(fn, fallback, name, cat, group_pos, async_pos, world_obj,
//             world_attr, step_dict, group_info, dtype_name[, meta_factory])
// meta_factory: None, or a callable that returns dftracer._eager's
// "dftracer.tensor_meta_fn" capsule (or None), called once, at the first
// traced call.
PyObject* CW_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  PyObject *fn, *fallback, *name, *cat, *world_obj, *world_attr, *step_dict, *group_info, *dtype_name;
  PyObject* meta = Py_None;
  Py_ssize_t group_pos, async_pos;
  if (kwds != nullptr && PyDict_GET_SIZE(kwds) != 0) {
    PyErr_SetString(PyExc_TypeError, "CommWrapper takes positional arguments only");
    return nullptr;
  }
  if (!PyArg_ParseTuple(args, "OOUUnnOUO!OO|O:CommWrapper", &fn, &fallback, &name, &cat, &group_pos, &async_pos,
                        &world_obj, &world_attr, &PyDict_Type, &step_dict, &group_info, &dtype_name, &meta))
    return nullptr;
  if (meta != Py_None && !PyCallable_Check(meta)) {
    PyErr_SetString(PyExc_TypeError, "CommWrapper: meta_factory must be None or a callable");
    return nullptr;
  }
  if (!PyCallable_Check(fn) || !PyCallable_Check(fallback) || !PyCallable_Check(group_info) ||
      !PyCallable_Check(dtype_name) || group_pos < 1 || async_pos < 1) {
    PyErr_SetString(PyExc_TypeError, "CommWrapper: fn, fallback, group_info, dtype_name must be callables, "
                                     "group_pos and async_pos positive");
    return nullptr;
  }
  auto* w = reinterpret_cast<CommWrapperObject*>(type->tp_alloc(type, 0));
  if (w == nullptr) return nullptr;
  w->vectorcall = CW_vectorcall;
  w->fn = Py_NewRef(fn);
  w->fallback = Py_NewRef(fallback);
  w->name_str = Py_NewRef(name);
  w->cat_str = Py_NewRef(cat);
  w->group_pos = group_pos;
  w->async_pos = async_pos;
  w->world_obj = Py_NewRef(world_obj);
  w->world_attr = Py_NewRef(world_attr);
  w->step_dict = Py_NewRef(step_dict);
  w->group_info = Py_NewRef(group_info);
  w->dtype_name = Py_NewRef(dtype_name);
  w->meta_factory = meta == Py_None ? nullptr : Py_NewRef(meta);
  return reinterpret_cast<PyObject*>(w);
}

int CW_traverse(PyObject* op, visitproc visit, void* arg) {
  auto* w = reinterpret_cast<CommWrapperObject*>(op);
  Py_VISIT(Py_TYPE(op));
  Py_VISIT(w->fn);
  Py_VISIT(w->fallback);
  Py_VISIT(w->world_obj);
  Py_VISIT(w->step_dict);
  Py_VISIT(w->group_info);
  Py_VISIT(w->dtype_name);
  Py_VISIT(w->meta_factory);
  Py_VISIT(w->dict);
  for (int i = 0; i < w->ngroups; ++i) {
    Py_VISIT(w->groups[i].pg);
    Py_VISIT(w->groups[i].counter);
  }
  for (int i = 0; i < w->ndtypes; ++i) Py_VISIT(w->dtypes[i].dtype);
  return 0;
}

int CW_clear(PyObject* op) {
  auto* w = reinterpret_cast<CommWrapperObject*>(op);
  Py_CLEAR(w->fn);
  Py_CLEAR(w->fallback);
  Py_CLEAR(w->name_str);
  Py_CLEAR(w->cat_str);
  Py_CLEAR(w->world_obj);
  Py_CLEAR(w->world_attr);
  Py_CLEAR(w->step_dict);
  Py_CLEAR(w->group_info);
  Py_CLEAR(w->dtype_name);
  Py_CLEAR(w->meta_factory);
  Py_CLEAR(w->dict);
  for (int i = 0; i < w->ngroups; ++i) {
    Py_CLEAR(w->groups[i].pg);
    Py_CLEAR(w->groups[i].counter);
  }
  w->ngroups = 0;
  for (int i = 0; i < w->ndtypes; ++i) Py_CLEAR(w->dtypes[i].dtype);
  w->ndtypes = 0;
  return 0;
}

void CW_dealloc(PyObject* op) {
  auto* w = reinterpret_cast<CommWrapperObject*>(op);
  PyObject_GC_UnTrack(op);
  if (w->weakreflist != nullptr) PyObject_ClearWeakRefs(op);
  CW_clear(op);
  PyTypeObject* tp = Py_TYPE(op);
  tp->tp_free(op);
  Py_DECREF(tp);
}

PyObject* CW_repr(PyObject* op) {
  auto* w = reinterpret_cast<CommWrapperObject*>(op);
  return PyUnicode_FromFormat("<dftracer traced %R>", w->fn);
}

// Pickled by reference, like the function it replaces.
PyObject* CW_reduce(PyObject* op, PyObject*) {
  auto* w = reinterpret_cast<CommWrapperObject*>(op);
  PyObject* qn = w->dict != nullptr ? PyDict_GetItemString(w->dict, "__qualname__") : nullptr;
  if (qn == nullptr) {
    PyErr_SetString(PyExc_TypeError, "dftracer: traced collective has no __qualname__ to pickle by");
    return nullptr;
  }
  return Py_NewRef(qn);
}

PyMethodDef CW_methods[] = {{"__reduce__", CW_reduce, METH_NOARGS, nullptr}, {nullptr, nullptr, 0, nullptr}};

PyGetSetDef CW_getset[] = {{"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, nullptr, nullptr},
                           {nullptr, nullptr, nullptr, nullptr, nullptr}};

PyMemberDef CW_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(CommWrapperObject, vectorcall), READONLY, nullptr},
    {"__dictoffset__", T_PYSSIZET, offsetof(CommWrapperObject, dict), READONLY, nullptr},
    {"__weaklistoffset__", T_PYSSIZET, offsetof(CommWrapperObject, weakreflist), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};

PyType_Slot CW_slots[] = {{Py_tp_new, reinterpret_cast<void*>(CW_new)},
                          {Py_tp_dealloc, reinterpret_cast<void*>(CW_dealloc)},
                          {Py_tp_traverse, reinterpret_cast<void*>(CW_traverse)},
                          {Py_tp_clear, reinterpret_cast<void*>(CW_clear)},
                          {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
                          {Py_tp_repr, reinterpret_cast<void*>(CW_repr)},
                          {Py_tp_methods, CW_methods},
                          {Py_tp_getset, CW_getset},
                          {Py_tp_members, CW_members},
                          {Py_tp_doc, const_cast<char*>("A blocking one-tensor torch.distributed collective, traced.")},
                          {0, nullptr}};

PyType_Spec CW_spec = {"dftracer._core.CommWrapper", sizeof(CommWrapperObject), 0,
                       Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL, CW_slots};

// _comm_timed(fn, args, kwargs) -> (fn(*args, **kwargs), t0, t1): the
// Python wrapper's call, with this thread marked as inside a traced call.
PyObject* comm_timed(PyObject*, PyObject* const* a, Py_ssize_t nargs) {
  if (nargs != 3 || !PyTuple_Check(a[1]) || (a[2] != Py_None && !PyDict_Check(a[2]))) {
    PyErr_SetString(PyExc_TypeError, "_comm_timed(fn, args: tuple, kwargs: dict | None)");
    return nullptr;
  }
  ++t_comm_depth;
  uint64_t t0 = dft_ticks_inline();
  PyObject* ret = PyObject_Call(a[0], a[1], a[2] == Py_None ? nullptr : a[2]);
  uint64_t t1 = dft_ticks_inline();
  --t_comm_depth;
  if (ret == nullptr) return nullptr;
  PyObject* out = Py_BuildValue("(NKK)", ret, static_cast<unsigned long long>(t0), static_cast<unsigned long long>(t1));
  return out;
}

PyObject* in_comm(PyObject*, PyObject*) { return PyBool_FromLong(t_comm_depth > 0); }

// _comm_bucket() -> the current DDP bucket (or None); _comm_bucket(b) sets
// it (None: none) and returns the previous one.
PyObject* comm_bucket(PyObject*, PyObject* const* a, Py_ssize_t nargs) {
  PyObject* prev = t_has_bucket ? PyLong_FromLongLong(t_bucket) : Py_NewRef(Py_None);
  if (nargs == 0 || prev == nullptr) return prev;
  if (nargs > 1) {
    Py_DECREF(prev);
    PyErr_SetString(PyExc_TypeError, "_comm_bucket([bucket: int | None])");
    return nullptr;
  }
  if (a[0] == Py_None) {
    t_has_bucket = false;
    return prev;
  }
  long long b = PyLong_AsLongLong(a[0]);
  if (b == -1 && PyErr_Occurred()) {
    Py_DECREF(prev);
    return nullptr;
  }
  t_bucket = b;
  t_has_bucket = true;
  return prev;
}

PyMethodDef comm_functions[] = {
    {"_comm_timed", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(comm_timed)), METH_FASTCALL,
     "(fn(*args, **kwargs), t0, t1), inside a traced call on this thread."},
    {"_in_comm", in_comm, METH_NOARGS, "True inside a traced torch.distributed call on this thread."},
    {"_comm_bucket", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(comm_bucket)), METH_FASTCALL,
     "The DDP bucket of this thread's all-reduces; with an argument, sets it and returns the previous one."},
    {nullptr, nullptr, 0, nullptr}};

}  // namespace

void register_comm(nanobind::module_& m) {
  struct {
    PyObject** slot;
    const char* s;
  } names[] = {{&g_s_nbytes, "nbytes"}, {&g_s_dtype, "dtype"}, {&g_s_group, "group"},
               {&g_s_async_op, "async_op"}, {&g_s_value, "value"}};
  for (auto& n : names)
    if ((*n.slot = PyUnicode_InternFromString(n.s)) == nullptr) throw nanobind::python_error();
  if (PyModule_AddFunctions(m.ptr(), comm_functions) < 0 || add_seq_counter_type(m.ptr()) < 0)
    throw nanobind::python_error();
  PyObject* type = PyType_FromSpec(&CW_spec);
  if (type == nullptr || PyModule_AddObject(m.ptr(), "CommWrapper", type) < 0) {
    Py_XDECREF(type);
    throw nanobind::python_error();
  }
}

}  // namespace dft_py
