// Region.__enter__ / Region.__exit__ at the cost of CPython's cheapest `with`.
//
// `with r:` looks both methods up on r's type and binds them to r
// (_PyObject_LookupSpecial), calls __enter__() and at the end
// __exit__(None, None, None). CPython 3.11 calls that exit straight from the
// eval loop (PRECALL_NO_KW_BUILTIN_FAST) only when it is an exact builtin
// method object (PyCFunction_Type); a method in tp_methods is one, but
// bound anew per `with`: a GC-tracked object allocated and freed each time.
//
// Here the two names are descriptors of our own whose __get__ hands out a
// builtin method the region keeps (RegionObject::bound): made on its first
// binding, not tracked by the GC, its __self__ the region *without a
// reference of its own* (the region holds the method, not the reverse: no
// cycle). Binding it is an incref. The one danger is a binding still in use
// when the region's last reference goes (`with dft_fn(cat, name):` drops
// the object right after binding it; `ex = dft_fn(...).__exit__` keeps only
// the method). Then the region is handed over to those bindings before
// anything of it is freed (region_hand_over_bindings): each one's __self__
// becomes a real reference, the region forgets it, and freeing the method
// (meth_dealloc drops __self__) frees the region. That happens in
// Region_dealloc for classes freed by it (dft_fn, Region), and in
// Region_finalize, which the generic subclass dealloc calls first, for the
// others (dft_ai's nodes). Bindings made after Region_finalize ran (once per
// object) or of a class whose own __del__ replaces it are ordinary builtin
// methods that hold the region.
//
// Called directly (`dft_fn.__enter__(r)`) the descriptor takes the region as
// its first argument, like a method descriptor.
#include <Python.h>
#include <structmember.h>

#include <cstddef>

#include "region.h"

namespace dft_py {
namespace {

enum WithOp { kEnter = 0, kExit = 1 };
const char* const kOpName[2] = {"__enter__", "__exit__"};
const char* const kOpDoc[2] = {"Starts this region's event.",
                               "Writes this region's event (also when an exception leaves it)."};

PyObject* exit_region(PyObject* region) {
  region_exit(region);
  Py_RETURN_FALSE;  // never swallow the exception
}

// Returns r.__enter__() / r.__exit__(*args): the region's own behaviour
// (the unbound form).
PyObject* run_op(int op, PyObject* region, size_t nargs) {
  if (op == kEnter) {
    if (nargs != 0) {
      PyErr_Format(PyExc_TypeError, "__enter__() takes no arguments (%zu given)", nargs);
      return nullptr;
    }
    return region_enter(region);
  }
  return exit_region(region);
}

// -- the bound form: what `r.__enter__` evaluates to --------------------------
PyObject* Bound_enter(PyObject* region, PyObject*) { return region_enter(region); }
PyObject* Bound_exit(PyObject* region, PyObject* const*, Py_ssize_t) { return exit_region(region); }

// The kept bindings' vectorcall (what `with` calls __enter__ through, and
// __exit__ where the call is not specialized): what CPython's for these
// flags checks, less its recursion guard around a call that recurses into
// nothing.
PyObject* Kept_vectorcall(PyObject* f, PyObject* const*, size_t nargsf, PyObject* kwnames, int op) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_Format(PyExc_TypeError, "%s() takes no keyword arguments", kOpName[op]);
    return nullptr;
  }
  PyObject* region = reinterpret_cast<PyCFunctionObject*>(f)->m_self;  // never METH_STATIC
  if (op == kExit) return exit_region(region);
  if (PyVectorcall_NARGS(nargsf) != 0) {
    PyErr_Format(PyExc_TypeError, "__enter__() takes no arguments (%zu given)", PyVectorcall_NARGS(nargsf));
    return nullptr;
  }
  return region_enter(region);
}
PyObject* KeptEnter_vectorcall(PyObject* f, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return Kept_vectorcall(f, args, nargsf, kwnames, kEnter);
}
PyObject* KeptExit_vectorcall(PyObject* f, PyObject* const* args, size_t nargsf, PyObject* kwnames) {
  return Kept_vectorcall(f, args, nargsf, kwnames, kExit);
}

// METH_FASTCALL alone: what the eval loop's specialized call requires.
PyMethodDef g_bound_def[2] = {
    {kOpName[kEnter], Bound_enter, METH_NOARGS, kOpDoc[kEnter]},
    {kOpName[kExit], reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(Bound_exit)), METH_FASTCALL,
     kOpDoc[kExit]}};

#ifdef DFT_PY_REUSE_OBJECTS
// -- __exit__ of a region with no other reference: ExitBindingObject ----------
PyTypeObject* g_exit_binding_type = nullptr;

PyObject* ExitBinding_vectorcall(PyObject* callable, PyObject* const*, size_t, PyObject* kwnames) {
  if (kwnames != nullptr && PyTuple_GET_SIZE(kwnames) != 0) {
    PyErr_SetString(PyExc_TypeError, "__exit__() takes no keyword arguments");
    return nullptr;
  }
  return exit_region(reinterpret_cast<ExitBindingObject*>(callable)->region);
}

// Back to unused (refcount 0); the region's last reference may be this
// one, and freeing the region frees this: nothing touches it after that.
void ExitBinding_dealloc(PyObject* op) {
  auto* b = reinterpret_cast<ExitBindingObject*>(op);
  PyObject* region = b->region;
  b->region = nullptr;
  Py_DECREF(region);
}

PyObject* ExitBinding_repr(PyObject* op) {
  return PyUnicode_FromFormat("<built-in method __exit__ of %s object at %p>",
                              Py_TYPE(reinterpret_cast<ExitBindingObject*>(op)->region)->tp_name,
                              reinterpret_cast<ExitBindingObject*>(op)->region);
}
PyObject* ExitBinding_get_self(PyObject* op, void*) {
  return Py_NewRef(reinterpret_cast<ExitBindingObject*>(op)->region);
}
PyObject* ExitBinding_get_name(PyObject*, void*) { return PyUnicode_FromString(kOpName[kExit]); }

PyMemberDef ExitBinding_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(ExitBindingObject, vectorcall), READONLY, nullptr},
    {nullptr, 0, 0, 0, nullptr}};
PyGetSetDef ExitBinding_getset[] = {
    {"__self__", ExitBinding_get_self, nullptr, nullptr, nullptr},
    {"__name__", ExitBinding_get_name, nullptr, nullptr, nullptr},
    {nullptr, nullptr, nullptr, nullptr, nullptr}};

// r.__exit__ where the caller's is r's only reference: the region dies as
// soon as the caller drops it (BEFORE_WITH does, right after binding), so a
// kept binding would be handed the region and freed with it (a builtin
// method frees itself), costing two allocations per `with dft_fn(...)`.
// This one is embedded in r and holds r: r outlives it and keeps its kept
// bindings. Never in use here: in use, it would be a second reference.
PyObject* bind_sole_exit(RegionObject* r) {
  ExitBindingObject* b = &r->exit_binding;
  if (Py_TYPE(b) == nullptr) {  // first use (no type reference: never freed)
    Py_SET_TYPE(b, g_exit_binding_type);
    b->vectorcall = ExitBinding_vectorcall;
  }
  Py_SET_REFCNT(b, 1);
  b->region = Py_NewRef(reinterpret_cast<PyObject*>(r));
  return reinterpret_cast<PyObject*>(b);
}
#endif

// Another binding (nested `with r:`, a kept `r.__exit__`) reuses the kept one.
PyObject* bind(PyObject* region, int op) {
  auto* r = reinterpret_cast<RegionObject*>(region);
#ifdef DFT_PY_REUSE_OBJECTS
  if (!r->bindings_own && region_keeps_bindings(Py_TYPE(region))) {
    if (op == kExit && Py_REFCNT(region) == 1) return bind_sole_exit(r);
    PyObject* f = r->bound[op];
    if (f == nullptr) {
      f = PyCFunction_New(&g_bound_def[op], region);
      if (f == nullptr) return nullptr;
      // Its __self__ is about to stop counting: the collector must not
      // traverse it (it would subtract a reference the region never had).
      PyObject_GC_UnTrack(f);
      reinterpret_cast<PyCFunctionObject*>(f)->vectorcall = op == kEnter ? KeptEnter_vectorcall : KeptExit_vectorcall;
      Py_DECREF(region);  // never the last: the caller holds one
      r->bound[op] = f;
    }
    return Py_NewRef(f);
  }
#else
  (void)r;
#endif
  return PyCFunction_New(&g_bound_def[op], region);
}

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

__attribute__((noinline)) PyObject* WithMethod_get_slow(PyObject* self, PyObject* obj, int op) {
  if (obj == nullptr || obj == Py_None) return Py_NewRef(self);
  if (check_region(obj, op) < 0) return nullptr;
  return bind(obj, op);
}

PyObject* WithMethod_get(PyObject* self, PyObject* obj, PyObject*) {
  const int op = reinterpret_cast<WithMethodObject*>(self)->op;
#ifdef DFT_PY_REUSE_OBJECTS
  // A region of the class checked last with its kept binding (and, for
  // __exit__, a reference besides the caller's: bind_sole_exit): what bind
  // would return. Kept bindings exist only where bind made them. No stack
  // frame for this path: the rest is out of line.
  if (obj != nullptr && Py_TYPE(obj) == g_checked_type) {
    PyObject* f = reinterpret_cast<RegionObject*>(obj)->bound[op];
    if (f != nullptr && (op == kEnter || Py_REFCNT(obj) != 1)) return Py_NewRef(f);
  }
#endif
  return WithMethod_get_slow(self, obj, op);
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
  return run_op(m->op, args[0], nargs - 1);
}

PyObject* WithMethod_repr(PyObject* op) {
  return PyUnicode_FromFormat("<method '%s' of 'dftracer._core.Region' objects>",
                              kOpName[reinterpret_cast<WithMethodObject*>(op)->op]);
}
PyObject* WithMethod_get_name(PyObject* op, void*) {
  return PyUnicode_FromString(kOpName[reinterpret_cast<WithMethodObject*>(op)->op]);
}
PyObject* WithMethod_get_doc(PyObject* op, void*) {
  return PyUnicode_FromString(kOpDoc[reinterpret_cast<WithMethodObject*>(op)->op]);
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

// Instances are made only here (a RegionExit is embedded in its region;
// the two descriptors at registration): the types cannot be called.
#ifdef Py_TPFLAGS_DISALLOW_INSTANTIATION
constexpr unsigned int kNotInstantiable = Py_TPFLAGS_DISALLOW_INSTANTIATION;
#else
constexpr unsigned int kNotInstantiable = 0;
#endif

PyTypeObject* make_type(PyType_Spec* spec) {
  return reinterpret_cast<PyTypeObject*>(PyType_FromSpec(spec));
}

}  // namespace

Py_ssize_t region_hand_over_bindings_slow(RegionObject* r, PyObject* owner, bool keep) {
  Py_ssize_t owners = 0;
  for (PyObject*& f : r->bound) {
    if (f == nullptr) continue;
    auto* fn = reinterpret_cast<PyCFunctionObject*>(f);
    if (Py_REFCNT(f) > 1) {
      // In use: its __self__ becomes a reference (to this region, or to
      // `owner` where this one cannot stay), the region forgets it.
      if (owner != reinterpret_cast<PyObject*>(r)) fn->m_self = Py_NewRef(owner);
      else ++owners;
      // Now an ordinary builtin method holding its __self__, never kept
      // again: the collector sees it (a cycle through it is collected).
      if (!PyObject_GC_IsTracked(f)) PyObject_GC_Track(f);
      Py_DECREF(f);  // not the last: it is in use
      f = nullptr;
    } else if (!keep || fn->m_weakreflist != nullptr) {
      // Unused: freed without touching its __self__ (which it does not
      // hold). One with a weakref is never kept: the weakref would reach
      // a freed region's method.
      fn->m_self = nullptr;
      PyObject* dead = f;
      f = nullptr;
      Py_DECREF(dead);
    }
  }
  return owners;
}

bool register_with_methods(PyTypeObject* region_type) {
  // The types stay alive for the process (g_method_type, g_exit_binding_type).
#ifdef DFT_PY_REUSE_OBJECTS
  static PyType_Slot exit_slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(ExitBinding_dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(ExitBinding_repr)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_members, ExitBinding_members},
      {Py_tp_getset, ExitBinding_getset},
      {0, nullptr}};
  static PyType_Spec exit_spec = {"dftracer._core.RegionExit", sizeof(ExitBindingObject), 0,
                                  Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | kNotInstantiable,
                                  exit_slots};
  g_exit_binding_type = make_type(&exit_spec);
  if (g_exit_binding_type == nullptr) return false;
#endif
  static PyType_Slot method_slots[] = {
      {Py_tp_dealloc, reinterpret_cast<void*>(WithMethod_dealloc)},
      {Py_tp_repr, reinterpret_cast<void*>(WithMethod_repr)},
      {Py_tp_call, reinterpret_cast<void*>(PyVectorcall_Call)},
      {Py_tp_descr_get, reinterpret_cast<void*>(WithMethod_get)},
      {Py_tp_members, WithMethod_members},
      {Py_tp_getset, WithMethod_getset},
      {0, nullptr}};
  static PyType_Spec method_spec = {"dftracer._core.RegionWithMethod", sizeof(WithMethodObject), 0,
                                    Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL | Py_TPFLAGS_METHOD_DESCRIPTOR |
                                        kNotInstantiable,
                                    method_slots};
  g_method_type = make_type(&method_spec);
  if (g_method_type == nullptr) return false;
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
