#include "open_events.h"

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

}  // namespace dft_py
