// Per-thread stack of the regions (context managers and traced calls) that
// are open right now, so that dft_fn.update(...) can attach args to "the
// current event" -- the innermost open one of that dft_fn on this thread --
// and flush()/exit find their own start time even when one dft_fn object is
// used by several threads or re-entered.
//
// Plain thread_local array, zero-initialised: push/pop cost a few ns and
// never allocate. Depth past kMaxOpen is not tracked (update() then falls
// back to the dft_fn's sticky args; exit falls back to the object's t0).
#ifndef DFTRACER_BINDINGS_PYTHON_OPEN_EVENTS_H_
#define DFTRACER_BINDINGS_PYTHON_OPEN_EVENTS_H_

#include <Python.h>

#include <cstdint>
#include <cstring>

#include <dftracer/dftracer.h>

namespace dft_py {

struct OpenEvent {
  const void* owner;  // the dft_fn (Region) the event belongs to; not owned
  PyObject* pending;  // dict of args added by update() while open, or NULL
  uint64_t t0;        // dft_ticks() at open
  uint64_t token;     // unique per push, to find the entry again
  // `token` while the event is still to be written, 0 once claimed: by the
  // owning thread (flush, exit) or by the signal-time cut. Read and swapped
  // atomically, so one of them writes the event, never both.
  uint64_t live;
  dft_id name;        // event name (the function's for traced calls)
  dft_id cat;         // the owner's category, copied at push: the signal
                      // thread reads it, never the owner (which may be freed)
  PyObject* name_obj; // the name as a str, set (and read) only for `name` 0
                      // (refused by the intern cap); borrowed from the
                      // Region / TracedFunction
  bool flushed;       // already written by flush(); exit writes nothing
  bool is_call;       // opened by a traced function call, not a `with`
};

constexpr int kMaxOpen = 256;

// Mutated by its own thread only; read by the signal thread (the cut) as a
// sequence lock: `seq` is odd while an entry is being added or removed, and
// a reader that sees it odd or changed reads again.
struct OpenStack {
  int depth;
  unsigned seq;
  uint64_t next_token;
  OpenEvent ev[kMaxOpen];
};

// __constinit (GCC >= 10; C++20's constinit): without it every access from
// another translation unit first tests for a TLS init function. The helpers
// below take the stack as a parameter, so that a caller touching it several
// times (exit: find, read, take) reads the thread-local once: each read is
// a __tls_get_addr call in this dlopen'ed module.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 10
#define DFT_PY_CONSTINIT __constinit
#else
#define DFT_PY_CONSTINIT
#endif
extern DFT_PY_CONSTINIT thread_local OpenStack t_open;

inline void open_begin_write(OpenStack& s) {
  __atomic_store_n(&s.seq, s.seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
inline void open_end_write(OpenStack& s) { __atomic_store_n(&s.seq, s.seq + 1, __ATOMIC_RELEASE); }

// Returns the token of the new entry, 0 when the stack is full.
inline uint64_t open_push(OpenStack& s, const void* owner, dft_id name, dft_id cat, PyObject* name_obj, uint64_t t0,
                          bool is_call) {
  const int d = s.depth;
  if (d >= kMaxOpen) return 0;
  open_begin_write(s);
  OpenEvent& e = s.ev[d];
  e.owner = owner;
  e.pending = nullptr;
  e.t0 = t0;
  e.token = ++s.next_token;
  e.name = name;
  e.cat = cat;
  if (name == 0) e.name_obj = name_obj;  // read only for name 0: no store on the ordinary path
  e.flushed = false;
  e.is_call = is_call;
  __atomic_store_n(&e.live, e.token, __ATOMIC_RELAXED);
  __atomic_store_n(&s.depth, d + 1, __ATOMIC_RELEASE);  // the entry is complete before it is counted
  open_end_write(s);
  return e.token;
}

// True when the caller is to write the event: it was still unwritten, and
// is now claimed (the signal-time cut will not write it).
inline bool open_claim(OpenEvent& e) { return __atomic_exchange_n(&e.live, 0, __ATOMIC_ACQ_REL) != 0; }

// Index of the innermost entry with this token / owner, or -1.
inline int open_find_token(OpenStack& s, uint64_t token) {
  for (int i = s.depth - 1; i >= 0; --i)
    if (s.ev[i].token == token) return i;
  return -1;
}
inline int open_find_owner(OpenStack& s, const void* owner, bool regions_only) {
  for (int i = s.depth - 1; i >= 0; --i)
    if (s.ev[i].owner == owner && !(regions_only && s.ev[i].is_call)) return i;
  return -1;
}

inline OpenEvent& open_at(OpenStack& s, int i) { return s.ev[i]; }

// Removes entry i (usually the top) and returns it; the caller owns .pending.
// An entry moved down keeps its claim state: `live` is swapped out of the
// old slot (so a cut that claims it there fails, or wins before the move)
// and stored in the new one.
// The removed entry is claimed too (a caller that writes it claims it first).
inline OpenEvent open_take(OpenStack& s, int i) {
  OpenEvent e = s.ev[i];
  open_begin_write(s);
  __atomic_store_n(&s.ev[i].live, 0, __ATOMIC_RELAXED);
  for (int k = i; k < s.depth - 1; ++k) {
    OpenEvent& to = s.ev[k];
    const OpenEvent& from = s.ev[k + 1];
    const uint64_t live = __atomic_exchange_n(&s.ev[k + 1].live, 0, __ATOMIC_ACQ_REL);
    to.owner = from.owner;
    to.pending = from.pending;
    to.t0 = from.t0;
    to.token = from.token;
    to.name = from.name;
    to.cat = from.cat;
    to.name_obj = from.name_obj;
    to.flushed = from.flushed;
    to.is_call = from.is_call;
    __atomic_store_n(&to.live, live, __ATOMIC_RELEASE);
  }
  __atomic_store_n(&s.depth, s.depth - 1, __ATOMIC_RELAXED);
  open_end_write(s);
  return e;
}

// Drops every entry of `owner` on this thread (the owner is being freed).
void open_forget_owner(const void* owner);

// Called once, on the thread that imports the module; effective only on the
// process's main thread (another thread's stack would be freed when that
// thread ends, and the signal thread would read it): when SIGTERM or SIGINT ends the process, the core's signal
// thread writes that thread's open regions and traced calls, each from its
// start to the signal, with "cut": true (a `train_step` blocked in a
// collective when torchrun terminates the ranks is the run's main
// evidence). Read without the GIL: only plain fields -- the interned name,
// the dft_fn's category -- never a Python object, so an entry whose name is
// past the intern cap, and args added by update() or sticky args, are left
// out. Each entry is written once: by the cut, or (when the main thread
// closed or flushed it first) by the main thread.
void open_cut_at_signal_for_this_thread();

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_OPEN_EVENTS_H_
