// dftracer._core: the Python extension. Links the same libdftracer_core.so
// as C/C++ users, so one process has one logger whichever API records.
#include "module.h"
#include "open_events.h"

NB_MODULE(_core, m) {
  m.doc() = "dftracer core bindings (one logger per process, shared with C/C++).";
  dft_py::register_api(m);
  dft_py::register_region(m);
  dft_py::register_comm(m);
  dft_py::register_logger_fast(m);
  dft_py::register_dynamo(m);
  dft_py::open_cut_at_signal_for_this_thread();
}
