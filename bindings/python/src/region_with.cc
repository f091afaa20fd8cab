// Region.__enter__ / Region.__exit__ without a bound builtin method per use.
//
// `with r:` looks both methods up on r's type and binds them to r
// (_PyObject_LookupSpecial); for methods in tp_methods each binding is a new
// GC-tracked PyCFunction object, allocated and freed on every `with` -- about
// half of what a `with` on a dft_fn cost CPython. Here the two names are
// descriptors of our own whose __get__ hands out a small untracked object
// (a pointer to r and which method), callable by vectorcall: the one
// embedded in r (BoundOpObject), or, while that one is in use, one from a
// free list. The bound object holds a strong reference to r but is not
// GC-tracked (tracking it on every `with` would count toward the cyclic
// collector's thresholds): a subclass instance that stores its own bound
// __enter__/__exit__ on itself (`self.x = self.__exit__`) forms a cycle the
// collector cannot see, and stays alive until that attribute is cleared.
// Called directly (`dft_fn.__enter__(r)`) the descriptor takes
// the region as its first argument, like a method descriptor.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

#include "region.h"

namespace dft_py {
namespace {

enum WithOp { kEnter = 0, kExit = 1 };
const char* const kOpName[2] = {"__enter__", "__exit__"};

// Returns r.__enter__() / r.__exit__(*args): the region's own behaviour.
PyObject* run_op(int op, PyObject* region, PyObject* const* args, size_t nargs) {
  if (op == kEnter) {
    if (nargs != 0) {
      PyErr_Format(PyExc_TypeError, "__enter__() takes no arguments (%zu given)", nargs);
      return nullptr;
    }
    return region_enter(region);
  }
  region_exit(region);
  Py_RETURN_FALSE;  // never swallow the exception
}

// -- the bound form: what `r.__enter__` evaluates to (BoundOpObject) -------
PyTypeObject* g_bound_type = nullptr;

// Freed bound objects kept for reuse (only touched with the GIL held): a
// `with` takes two and gives them back at its end.
#ifdef DFT_PY_REUSE_OBJECTS
constexpr int kFreeListMax = 32;
BoundOpObject* g_free[kFreeListMax];
int g_nfree = 0;
#endif

PyObject* BoundOp_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* b = reinterpret_cast<BoundOpObject*>(callable);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", kOpName[b->op]);
    return nullptr;
  }
  return run_op(b->op, b->region, args, PyVectorcall_NARGS(nargsf));
}

PyObject* new_bound(PyObject* region, int op) {
  BoundOpObject* b;
#ifdef DFT_PY_REUSE_OBJECTS
  // The region's own: unused (refcount 0) unless this region is bound
  // already. It holds the region, so the region outlives it.
  b = &reinterpret_cast<RegionObject*>(region)->bound[op];
  if (Py_REFCNT(b) == 0) {
    if (Py_TYPE(b) == nullptr) {  // first use (no type reference: never freed)
      Py_SET_TYPE(b, g_bound_type);
      b->vectorcall = BoundOp_vectorcall;
      b->op = op;
      b->embedded = 1;
    }
    Py_SET_REFCNT(b, 1);
    b->region = Py_NewRef(region);
    return reinterpret_cast<PyObject*>(b);
  }
  if (g_nfree > 0) {
    b = g_free[--g_nfree];
    // What PyObject_New does on fresh memory (with the type reference
    // that dealloc gave back).
    PyObject_Init(reinterpret_cast<PyObject*>(b), g_bound_type);
  } else
#endif
  {
    b = PyObject_New(BoundOpObject, g_bound_type);
    if (b == nullptr) return nullptr;
  }
  b->vectorcall = BoundOp_vectorcall;
  b->region = Py_NewRef(region);
  b->op = op;
  b->embedded = 0;
  return reinterpret_cast<PyObject*>(b);
}

void BoundOp_dealloc(PyObject* op) {
  auto* b = reinterpret_cast<BoundOpObject*>(op);
  if (b->embedded) {
    // Back to unused (refcount 0); the region's last reference may be this
    // one, and freeing the region frees b: nothing touches b after it.
    PyObject* region = b->region;
    b->region = nullptr;
    Py_DECREF(region);
    return;
  }
  Py_CLEAR(b->region);
  Py_DECREF(g_bound_type);  // never the last reference: the module keeps one
#ifdef DFT_PY_REUSE_OBJECTS
  if (g_nfree < kFreeListMax) {
    g_free[g_nfree++] = b;
    return;
  }
#endif
  PyObject_Free(op);
}

PyObject* BoundOp_repr(PyObject* op) {
  auto* b = reinterpret_cast<BoundOpObject*>(op);
  return PyUnicode_FromFormat("<bound method %s of %R>", kOpName[b->op], b->region);
}

PyObject* BoundOp_get_self(PyObject* op, void*) {
  return Py_NewRef(reinterpret_cast<BoundOpObject*>(op)->region);
}
PyObject* BoundOp_get_name(PyObject* op, void*) {
  return PyUnicode_FromString(kOpName[reinterpret_cast<BoundOpObject*>(op)->op]);
}

PyMemberDef BoundOp_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(BoundOpObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};
PyGetSetDef BoundOp_getset[] = {
    {"__self__", BoundOp_get_self, nullptr, nullptr, nullptr},
    {"__name__", BoundOp_get_name, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// -- the descriptor in Region's class dict ------------------------------------
struct WithMethodObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  int op;
};

PyTypeObject* g_method_type = nullptr;

// The last type check_region accepted (a strong reference, so its address
// is never another type's): `with` on one kind of region skips the MRO walk.
PyTypeObject* g_checked_type = nullptr;

int check_region(PyObject* obj, int op) {
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp == g_checked_type) return 0;
  if (PyObject_TypeCheck(obj, g_region_type)) {
#ifndef Py_GIL_DISABLED
    PyTypeObject* old = g_checked_type;
    g_checked_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(tp));
    Py_XDECREF(old);
#endif
    return 0;
  }
  PyErr_Format(PyExc_TypeError, "descriptor '%s' requires a 'dftracer._core.Region' object but received a '%.100s'",
               kOpName[op], Py_TYPE(obj)->tp_name);
  return -1;
}

PyObject* WithMethod_get(PyObject* self, PyObject* obj, PyObject*) {
  auto* m = reinterpret_cast<WithMethodObject*>(self);
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  if (check_region(obj, m->op) < 0) return nullptr;
  return new_bound(obj, m->op);
}

// Region.__exit__(r, *exc): the unbound form.
PyObject* WithMethod_vectorcall(PyObject* callable, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  auto* m = reinterpret_cast<WithMethodObject*>(callable);
  size_t nargs = PyVectorcall_NARGS(nargsf);
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", kOpName[m->op]);
    return nullptr;
  }
  if (nargs < 1) {
    PyErr_Format(PyExc_TypeError, "unbound method %s() needs an argument", kOpName[m->op]);
    return nullptr;
  }
  if (check_region(args[0], m->op) < 0) return nullptr;
  return run_op(m->op, args[0], args + 1, nargs - 1);
}

PyObject* WithMethod_repr(PyObject* op) {
  return PyUnicode_FromFormat("<method '%s' of 'dftracer._core.Region' objects>",
                              kOpName[reinterpret_cast<WithMethodObject*>(op)->op]);
}
PyObject* WithMethod_get_name(PyObject* op, void*) {
  return PyUnicode_FromString(kOpName[reinterpret_cast<WithMethodObject*>(op)->op]);
}
PyObject* WithMethod_get_doc(PyObject* op, void*) {
  return PyUnicode_FromString(reinterpret_cast<WithMethodObject*>(op)->op == kEnter
                                  ? "Starts this region's event."
                                  : "Writes this region's event (also when an exception leaves it).");
}

PyMemberDef WithMethod_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(WithMethodObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};
PyGetSetDef WithMethod_getset[] = {
    {"__name__", WithMethod_get_name, nullptr, nullptr, nullptr},
    {"__doc__", WithMethod_get_doc, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

void WithMethod_dealloc(PyObject* op) {
  PyTypeObject* tp = Py_TYPE(op);
  PyObject_Free(op);
  Py_DECREF(tp);
}

PyTypeObject* make_type(PyType_Spec* spec) {
  return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(spec));
}

}  // namespace

bool register_with_methods(PyTypeObject* region_type) {
  // Both types stay alive for the process (g_bound_type, g_method_type).
  static PyType_Slot bound_slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(BoundOp_dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(BoundOp_repr)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_members, BoundOp_members},
      {Py_tp_getset, BoundOp_getset},
      {0, nullptr}};
  static PyType_Spec bound_spec = {"dftracer._core.RegionBoundMethod", sizeof(BoundOpObject), 0,
                                   Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL, bound_slots};
  static PyType_Slot method_slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(WithMethod_dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(WithMethod_repr)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_descr_get, reinterpret_cast<void*>(WithMethod_get)},
      {Py_tp_members, WithMethod_members},
      {Py_tp_getset, WithMethod_getset},
      {0, nullptr}};
  static PyType_Spec method_spec = {"dftracer._core.RegionWithMethod", sizeof(WithMethodObject), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR,
                                    method_slots};
  g_bound_type = make_type(&bound_spec);
  g_method_type = make_type(&method_spec);
  if (g_bound_type == nullptr || g_method_type == nullptr) return false;
  for (int op = kEnter; op <= kExit; ++op) {
    auto* m = PyObject_New(WithMethodObject, g_method_type);
    if (m == nullptr) return false;
    m->vectorcall = WithMethod_vectorcall;
    m->op = op;
    int rc = PyObject_SetAttrString(reinterpret_cast<PyObject*>(region_type), kOpName[op],
                                    reinterpret_cast<PyObject*>(m));
    Py_DECREF(m);
    if (rc < 0) return false;
  }
  return true;
}

}  // namespace dft_py
