// Internal types shared by region.cc (the Region type: base class of
// dftracer.python.dft_fn) and traced_function.cc (what dft_fn.log returns).
#ifndef DFTRACER_BINDINGS_PYTHON_REGION_H_
#define DFTRACER_BINDINGS_PYTHON_REGION_H_

#include <Python.h>

#include <cstdint>

#include <dftracer/dftracer.h>

#include "args.h"
#include "intern_cache.h"

namespace dft_py {

// The free list of regions and the bound methods a region keeps set
// refcounts themselves: only with the GIL, and not in debug builds that
// track references (_Py_NewReference's bookkeeping).
#if !defined(Py_GIL_DISABLED) && !defined(Py_TRACE_REFS) && !defined(Py_REF_DEBUG)
#define DFT_PY_REUSE_OBJECTS 1
#endif

// What `r.__exit__` evaluates to where r has no other reference (`with
// dft_fn(cat, name):`, region_with.cc): a callable embedded in r that holds
// r, refcount 0 when unused (its type set on first use).
struct ExitBindingObject {
  PyObject_HEAD
  vectorcallfunc vectorcall;
  PyObject* region;  // strong reference while in use
};

// One dft_fn: a category, a default event name, sticky args, and -- when
// used as a context manager or the pydftracer way (constructor starts the
// clock, flush() ends it) -- the start of its own event.
struct RegionObject {
  PyObject_HEAD
  dft_id name;
  dft_id cat;
  int enable;         // pydftracer's dft_fn(enable=...)
  int flushed;        // the object-level event was already written
  int name_inline;    // the intern cap refused name_obj: name stays 0 and
                      // events carry name_obj's bytes (no retry per event)
  int pushed;         // its entries on the open stacks of all threads
                      // (region_enter adds one, an exit takes one): while
                      // nonzero an exit looks for its entry, and the dealloc
                      // drops those of its thread. Changed with the GIL held
                      // (region_open_count_add).
  int dead;           // freed while entries of it stay open on other threads:
                      // kept allocated, and out of every open stack's use,
                      // until those threads drop them (region_freed.cc)
  uint64_t t0;        // start of the object-level event; 0 = not started
  PyObject* name_obj; // str
  PyObject* cat_obj;  // str
  PyObject* args;     // dict of normalized sticky args, or NULL
  // r.__enter__ / r.__exit__ (region_with.cc): builtin methods made on
  // first use and kept, whose __self__ is this region without a reference
  // of its own (a `with` binds them for an incref). NULL until first used.
  PyObject* bound[2];
  int bindings_own;   // bindings made from now on hold the region (after
                      // Region_finalize, which runs once per object)
  ExitBindingObject exit_binding;
};

extern PyTypeObject* g_region_type;

// Counts an entry of `self` pushed (+1) or taken (-1) on any thread's open
// stack; returns the count after. With the GIL a plain add (only the thread
// holding it runs here).
inline int region_open_count_add(RegionObject* self, int n) {
#ifdef Py_GIL_DISABLED
  return __atomic_add_fetch(&self->pushed, n, __ATOMIC_ACQ_REL);
#else
  return self->pushed += n;
#endif
}

// Region_dealloc of an object with entries open (entered, never exited):
// drops those of this thread. When other threads' stacks still hold some,
// clears the object's fields, marks it dead and returns true: it stays
// allocated, and the last of those threads frees it when it drops them
// (region_freed.cc), so that a stack never holds the address of freed
// memory, which a later object could reuse. False: free it as usual.
bool region_dealloc_while_open(RegionObject* self);

// region_enter when this thread's open stack is full: drops its entries of
// dead objects (freeing those no stack holds any more) and pushes `self`'s
// entry when that made room. Out of line: the ordinary push keeps its
// registers.
void region_push_after_dropping_dead(RegionObject* self, uint64_t t0);

// Interned keys and their Python names, in pydftracer's order.
enum TagKey { kEpoch = 0, kStep, kImageIdx, kImageSize, kNumTagKeys };
extern dft_id g_tag_key_id[kNumTagKeys];
extern PyObject* g_tag_key_str[kNumTagKeys];

// Id of an event name that may be new on every use (f"step {i}"), or 0 when
// the table is at DFTRACER_INTERN_CAP: the event then carries the str's
// bytes (record_complete).
inline dft_id bounded_name_id(PyObject* name) {
  const char* utf8 = nullptr;
  Py_ssize_t len = 0;
  return intern_str_bounded_fast(name, &utf8, &len);
}

// Interns name/cat on first use with tracing on (a dft_fn made and used
// while tracing is off never touches the string table). The name is bounded
// by the intern cap; categories are few and interned as they come.
inline void region_ensure_ids(RegionObject* r) {
  if (r->cat == 0 && r->cat_obj != nullptr) r->cat = intern_str_fast(r->cat_obj);
  if (r->name == 0 && r->name_obj != nullptr && !r->name_inline) {
    r->name = bounded_name_id(r->name_obj);
    r->name_inline = r->name == 0;
  }
}

// A complete event named by the bytes of the str `name_obj`, copied into the
// record (the intern cap refused the name).
void record_complete_inline_name(PyObject* name_obj, dft_id cat, uint64_t t0, uint64_t t1, const dft_arg* args,
                                 uint32_t nargs);

// A complete event named `name`, or, when that is 0 (past the intern cap),
// by `name_obj`'s bytes.
inline void record_complete(dft_id name, PyObject* name_obj, dft_id cat, uint64_t t0, uint64_t t1,
                            const dft_arg* args, uint32_t nargs) {
  if (name != 0 || name_obj == nullptr) dft_complete_ticks(name, cat, t0, t1, args, nargs);
  else record_complete_inline_name(name_obj, cat, t0, t1, args, nargs);
}

// Adds the sticky args of `owner` to `list`.
inline void add_sticky_args(const RegionObject* owner, ArgList& list) {
  if (owner->args != nullptr) list.add_mapping(owner->args);
}

// Writes one complete event of `owner` (its cat and sticky args, then
// `pending` on top), named `name` or `name_obj` (record_complete). Keeps a
// Python exception that is set on entry.
void record_region_event(RegionObject* owner, dft_id name, PyObject* name_obj, uint64_t t0, uint64_t t1,
                         PyObject* pending);

bool register_traced_function(PyObject* module);

// _core._NullContext (null_context.cc): the benchmarks' `with` floor.
bool register_null_context(PyObject* module);

// r.__enter__() (returns r) and r.__exit__(...) of a Region; region_with.cc
// puts them in the class as __enter__/__exit__ (no bound method per `with`).
PyObject* region_enter(PyObject* region);
void region_exit(PyObject* region);
bool register_with_methods(PyTypeObject* region_type);

// Region's tp_dealloc and tp_finalize (region.cc).
void Region_dealloc(PyObject* op);
void Region_finalize(PyObject* op);

// Whether a region of this class may keep its bindings (region_with.cc):
// its dealloc, or the finalizer the generic subclass dealloc calls first,
// hands bindings in use over before anything of the region is freed.
inline bool region_keeps_bindings(PyTypeObject* tp) {
  return tp->tp_dealloc == Region_dealloc || tp->tp_finalize == Region_finalize;
}

// The kept bindings of a region whose last reference is gone, or that is
// finalized (region_with.cc). Those still in use elsewhere become owners of
// `owner`: each then holds one reference to it; the count of those that
// hold the region itself is returned (the caller adds that many to its
// refcount). Bindings not in use are freed, or kept when `keep` (a region
// going to the free list).
Py_ssize_t region_hand_over_bindings_slow(RegionObject* r, PyObject* owner, bool keep);
inline Py_ssize_t region_hand_over_bindings(RegionObject* r, PyObject* owner, bool keep) {
  for (PyObject* f : r->bound)  // the usual case: none, or kept and unused
    if (f != nullptr && (Py_REFCNT(f) > 1 || !keep || reinterpret_cast<PyCFunctionObject*>(f)->m_weakreflist))
      return region_hand_over_bindings_slow(r, owner, keep);
  return 0;
}

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_REGION_H_
