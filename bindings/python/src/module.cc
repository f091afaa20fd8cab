// dftracer._core: the Python extension. Links the same libdftracer_core.so
// as C/C++ users, so one process has one logger whichever API records.
#include "module.h"
#include "open_events.h"

namespace {

// Py_AtExit: at the end of Py_FinalizeEx, after every Python atexit handler
// (also those registered before dftracer was imported, which run after the
// package's own) and the interpreter's teardown, and before CPython's exit
// after an uncaught KeyboardInterrupt kills the process with SIGINT (which
// C atexit handlers never see). No Python API here: only the core.
void finalize_after_the_interpreter() { dft_finalize(); }

bool register_finalize_after_the_interpreter() {
  static const bool registered = Py_AtExit(&finalize_after_the_interpreter) == 0;
  return registered;
}

}  // namespace

NB_MODULE(_core, m) {
  m.doc() = "dftracer core bindings (one logger per process, shared with C/C++).";
  dft_py::register_api(m);
  dft_py::register_region(m);
  dft_py::register_comm(m);
  dft_py::register_logger_fast(m);
  dft_py::register_dynamo(m);
  dft_py::register_gc(m);
  dft_py::open_cut_at_signal_for_this_thread();
  m.attr("finalizes_after_the_interpreter") = register_finalize_after_the_interpreter();
}
