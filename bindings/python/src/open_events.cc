#include "open_events.h"

#include "region.h"

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

OpenStack* g_cut_stack = nullptr;  // the importing thread's stack

void cut_open_events(int) {
  OpenStack* s = g_cut_stack;
  if (s == nullptr) return;
  int depth = __atomic_load_n(&s->depth, __ATOMIC_ACQUIRE);
  if (depth > kMaxOpen) depth = kMaxOpen;
  for (int i = 0; i < depth; ++i) {
    const OpenEvent& e = s->ev[i];
    if (e.flushed || e.name == 0 || e.owner == nullptr) continue;
    // Regions and traced calls both belong to a dft_fn (RegionObject).
    const dft_id cat = static_cast<const RegionObject*>(e.owner)->cat;
    dft_record_cut(e.name, cat, e.t0, nullptr, 0);
  }
}

}  // namespace

void open_cut_at_signal_for_this_thread() {
  g_cut_stack = &t_open;
  dft_set_signal_hook(&cut_open_events);
}

}  // namespace dft_py
