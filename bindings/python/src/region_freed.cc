// A Region freed while entries of it are open on other threads (started
// there -- `__enter__()`, start() -- and never exited, then the last
// reference dropped on another thread). Only its own thread changes a stack,
// so those entries stay where they are; the object stays allocated, marked
// dead, so that no stack holds the address of freed memory: a later object
// made there would take the entry for its own (flush(), update()), and the
// SIGTERM cut would write it. Each thread drops the dead entries of its
// stack when a region finds it full (region_enter), and the last one frees the
// object. The event of such an entry is never written, as when the object
// is freed on the thread that started it (Region_dealloc).
#include <Python.h>

#include "open_events.h"
#include "region.h"

namespace dft_py {

namespace {

void free_region_memory(RegionObject* r) {
  PyTypeObject* tp = Py_TYPE(r);
  tp->tp_free(r);
  Py_DECREF(tp);
}

}  // namespace

bool region_dealloc_while_open(RegionObject* self) {
  // Its entries on this thread are dropped, as their thread's exit never
  // came (a frozen stack keeps them: they stay counted).
  if (t_open.depth != 0) region_open_count_add(self, -open_forget_owner(self));
  if (self->pushed == 0) return false;
  // Its kept bindings (unused: those in use took the object over before
  // this), which the free of a dead object never sees.
  region_hand_over_bindings_slow(self, reinterpret_cast<PyObject*>(self), false);
  Py_CLEAR(self->name_obj);
  Py_CLEAR(self->cat_obj);
  Py_CLEAR(self->args);
  // The last store to it here: from now on the threads that hold its
  // entries may free it.
  __atomic_store_n(&self->dead, 1, __ATOMIC_RELEASE);
  return true;
}

bool open_owner_dead(const void* owner) {
  return __atomic_load_n(&static_cast<const RegionObject*>(owner)->dead, __ATOMIC_ACQUIRE) != 0;
}

namespace {

// Drops this thread's entries of dead owners; true when there were some.
bool open_drop_dead(OpenStack& s) {
  RegionObject* dropped[kMaxOpen];
  PyObject* pending[kMaxOpen];
  int n = 0;
  open_begin_write(s);
  if (open_frozen(s)) {  // the cut's now
    open_cancel_write(s);
    return false;
  }
  int kept = 0;
  for (int i = 0; i < s.depth; ++i) {
    OpenEvent& e = s.ev[i];
    if (open_owner_dead(e.owner)) {
      dropped[n] = static_cast<RegionObject*>(const_cast<void*>(e.owner));
      pending[n++] = e.pending;
      continue;
    }
    if (kept != i) s.ev[kept] = e;
    ++kept;
  }
  __atomic_store_n(&s.depth, kept, __ATOMIC_RELAXED);
  open_end_write(s);
  // Out of the stack before the memory goes: a cut from here on never sees them.
  for (int i = 0; i < n; ++i) {
    Py_XDECREF(pending[i]);
    if (region_open_count_add(dropped[i], -1) == 0) free_region_memory(dropped[i]);
  }
  return n != 0;
}

}  // namespace

void region_push_after_dropping_dead(RegionObject* self, uint64_t t0) {
  // (Dropping releases Python objects, whose code may fill the stack again.)
  OpenStack& open = t_open;
  if (!open_drop_dead(open) || open.depth >= kMaxOpen) return;
  if (open_push(open, self, self->name, self->cat, self->name_obj, t0, false) != 0) region_open_count_add(self, 1);
}

}  // namespace dft_py
