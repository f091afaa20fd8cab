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
  // owning thread (flush, exit) or by the signal-time cut. Only the owning
  // thread writes it -- the cut's snapshot runs on that thread too, in a
  // signal handler (open_cut_at_signal_for_this_thread) -- so plain loads
  // and stores claim it, inside a change of the stack (open_take).
  uint64_t live;
  dft_id name;        // event name (the function's for traced calls)
  dft_id cat;         // the owner's category, copied at push: the cut reads
                      // it here (an owner freed meanwhile has its fields
                      // cleared; its memory stays while this entry does)
  PyObject* name_obj; // the name as a str, set (and read) only for `name` 0
                      // (refused by the intern cap); borrowed from the
                      // Region / TracedFunction
  bool flushed;       // already written by flush(); exit writes nothing
  bool is_call;       // opened by a traced function call, not a `with`
};

constexpr int kMaxOpen = 256;

// Mutated by its own thread only. `seq` is odd while an entry is being
// added, claimed or removed: the cut's handler, interrupting its thread
// there, leaves the snapshot to open_end_write (cut_requested).
struct OpenStack {
  int depth;
  unsigned seq;
  uint64_t next_token;
  int cut_requested;  // set by the cut's handler while `seq` was odd
  // Set by the cut read from the signal thread (open_events.cc): from then
  // on the stack is left as it is -- no entry added, removed or claimed --
  // and its entries are the cut's. Read inside a change (open_frozen).
  int frozen;
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

// This thread's stack, its address opaque to the compiler: otherwise GCC
// computes it again (another __tls_get_addr call) after a fence or a call
// rather than keep it, up to four times per region exit.
inline OpenStack& this_thread_open() {
  OpenStack* p = &t_open;
  __asm__("" : "+r"(p));
  return *p;
}

// The cut's snapshot, deferred by its handler to the end of a change of the
// stack (open_events.cc).
void open_cut_deferred(OpenStack& s);

// The handler runs on this same thread: a compiler barrier orders these
// plain stores against it (and a release fence for the fallback reader on
// another thread, open_events.cc).
inline void open_begin_write(OpenStack& s) {
  __atomic_store_n(&s.seq, s.seq + 1, __ATOMIC_RELAXED);
  __atomic_thread_fence(__ATOMIC_RELEASE);
}
inline void open_end_write(OpenStack& s) {
  __atomic_store_n(&s.seq, s.seq + 1, __ATOMIC_RELEASE);
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  if (__builtin_expect(__atomic_load_n(&s.cut_requested, __ATOMIC_RELAXED) != 0, 0)) open_cut_deferred(s);
}

// After open_begin_write: true when the cut froze the stack (the change is
// then not made; open_cancel_write ends it). A plain load, ordered after the
// odd `seq` only for the compiler: the signal thread's membarrier() makes
// it a full barrier (open_events.cc), so either the cut sees this change
// in progress and waits for its end, or this load sees `frozen`.
inline bool open_frozen(const OpenStack& s) {
  __atomic_signal_fence(__ATOMIC_SEQ_CST);
  return __builtin_expect(__atomic_load_n(&s.frozen, __ATOMIC_RELAXED) != 0, 0);
}
// Ends a change that changed nothing the cut reads: `seq` back to its even
// value before it.
inline void open_cancel_write(OpenStack& s) { __atomic_store_n(&s.seq, s.seq - 1, __ATOMIC_RELEASE); }

// Returns the token of the new entry, 0 when the stack is full.
inline uint64_t open_push(OpenStack& s, const void* owner, dft_id name, dft_id cat, PyObject* name_obj, uint64_t t0,
                          bool is_call) {
  const int d = s.depth;
  if (d >= kMaxOpen) return 0;
  open_begin_write(s);
  if (open_frozen(s)) {
    open_cancel_write(s);
    return 0;
  }
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
// is now claimed (the cut will not write it). Between open_begin_write and
// open_end_write only: a cut that interrupts it then waits for the end of
// the change. False, claiming nothing, when the stack is frozen.
inline bool open_claim(const OpenStack& s, OpenEvent& e) {
  if (open_frozen(s)) return false;
  const uint64_t live = e.live;
  e.live = 0;
  return live != 0;
}

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

// Removes entry i (usually the top) and returns it, claimed: its `live` is
// nonzero when the caller is to write it (neither the cut nor another
// claim took it). The caller owns .pending. One change of the stack, so a
// cut that interrupts it finds the entry gone. A frozen stack keeps the
// entry (the cut's) and hands over only .pending: the copy's .owner is then
// NULL (the entry still counts in its owner's `pushed`, and keeps the owner
// allocated: region_freed.cc).
inline OpenEvent open_take(OpenStack& s, int i) {
  open_begin_write(s);
  OpenEvent e = s.ev[i];
  if (open_frozen(s)) {
    s.ev[i].pending = nullptr;
    open_cancel_write(s);
    e.live = 0;
    e.owner = nullptr;
    return e;
  }
  for (int k = i; k < s.depth - 1; ++k) s.ev[k] = s.ev[k + 1];
  __atomic_store_n(&s.depth, s.depth - 1, __ATOMIC_RELAXED);
  open_end_write(s);
  return e;
}

// Drops every entry of `owner` on this thread (the owner is being freed);
// returns how many it removed (none from a frozen stack).
int open_forget_owner(const void* owner);

// True when `owner` (an entry's) was freed while the entry stayed open: the
// cut's handler on the entry's thread leaves it out, as a free on that
// thread would have. Async-signal-safe (region_freed.cc).
bool open_owner_dead(const void* owner);

// Called once, on the thread that imports the module; effective only on the
// process's main thread (another thread's stack would be freed when that
// thread ends): when SIGTERM or SIGINT ends the process, the core's signal
// thread writes that thread's open regions and traced calls, each from its
// start to the signal, with "cut": true (a `train_step` blocked in a
// collective when torchrun terminates the ranks is the run's main
// evidence). The entries are taken by a signal handler on the main thread
// itself (so that closing a region there needs no atomic read-modify-write)
// and written by the signal thread. Only plain fields -- the interned name,
// the dft_fn's category -- never a Python object, so an entry whose name is
// past the intern cap, and args added by update() or sticky args, are left
// out. Each entry is written once: by the cut, or (when the main thread
// closed or flushed it first) by the main thread -- also when the stack is
// read from the signal thread (frozen), save where membarrier() is refused.
void open_cut_at_signal_for_this_thread();

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_OPEN_EVENTS_H_
