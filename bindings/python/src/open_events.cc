#include "open_events.h"

#include <sys/syscall.h>
#include <unistd.h>

namespace dft_py {

DFT_PY_CONSTINIT thread_local OpenStack t_open;  // zero-initialised: no TLS init function

void open_forget_owner(const void* owner) {
  OpenStack& s = t_open;
  for (int i = s.depth - 1; i >= 0; --i) {
    if (s.ev[i].owner != owner) continue;
    OpenEvent e = open_take(s, i);
    Py_XDECREF(e.pending);
  }
}

namespace {

OpenStack* g_cut_stack = nullptr;  // the main thread's stack

struct CutEntry {
  int index;
  uint64_t token;
  uint64_t t0;
  dft_id name;
  dft_id cat;
};

// A consistent copy of the stack's unwritten entries, or -1 when the owning
// thread kept changing it.
int snapshot(const OpenStack* s, CutEntry* out) {
  for (int attempt = 0; attempt < 64; ++attempt) {
    const unsigned seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
    if (seq & 1u) continue;
    int depth = __atomic_load_n(&s->depth, __ATOMIC_ACQUIRE);
    if (depth > kMaxOpen) depth = kMaxOpen;
    int n = 0;
    for (int i = 0; i < depth; ++i) {
      const OpenEvent& e = s->ev[i];
      const uint64_t live = __atomic_load_n(&e.live, __ATOMIC_ACQUIRE);
      if (live == 0 || e.name == 0) continue;  // written already, or no interned name
      out[n++] = CutEntry{i, live, e.t0, e.name, e.cat};
    }
    __atomic_thread_fence(__ATOMIC_ACQUIRE);
    if (__atomic_load_n(&s->seq, __ATOMIC_RELAXED) == seq) return n;
  }
  return -1;
}

void cut_open_events(int) {
  OpenStack* s = g_cut_stack;
  if (s == nullptr) return;
  static CutEntry entries[kMaxOpen];  // the signal thread runs this once
  const int n = snapshot(s, entries);
  for (int i = 0; i < n; ++i) {
    // Claimed here, or already by the main thread (closed or flushed since
    // the copy): then it wrote the event, or the entry moved (no cut).
    uint64_t expected = entries[i].token;
    if (!__atomic_compare_exchange_n(&s->ev[entries[i].index].live, &expected, 0, false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_RELAXED))
      continue;
    dft_record_cut(entries[i].name, entries[i].cat, entries[i].t0, nullptr, 0);
  }
}

}  // namespace

void open_cut_at_signal_for_this_thread() {
  if (static_cast<pid_t>(syscall(SYS_gettid)) != getpid()) return;
  g_cut_stack = &t_open;
  dft_set_signal_hook(&cut_open_events);
}

}  // namespace dft_py
