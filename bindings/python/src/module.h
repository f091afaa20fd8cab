// Shared declarations of the `dftracer._core` extension module.
//
// The module is assembled from several translation units, each owned by one
// part of the project; module.cc calls every register_* function once, in
// the order below, from NB_MODULE(_core, m).
#ifndef DFTRACER_BINDINGS_PYTHON_MODULE_H_
#define DFTRACER_BINDINGS_PYTHON_MODULE_H_

#include <nanobind/nanobind.h>

namespace dft_py {

// api.cc: lifecycle (init, finalize, flush, stats), clock, interning,
// log_event / metadata -- thin wrappers over include/dftracer/dftracer.h.
void register_api(nanobind::module_& m);

// region.cc: the hot types written against the CPython C API (vectorcall):
// `Region` (base class of dftracer.python.dft_fn: context manager,
// update/flush/reset) and `TracedFunction` (what dft_fn.log returns).
void register_region(nanobind::module_& m);

// comm_call.cc: the timed call of a traced torch.distributed function.
void register_comm(nanobind::module_& m);

// log_event_fast.cc: dftracer.log_event / dftracer.get_time (pydftracer's logger).
void register_logger_fast(nanobind::module_& m);

// dynamo_hooks.cc: CPython shim of the torch.compile capture (src/capture/compile).
void register_dynamo(nanobind::module_& m);

// gc_events.cc: gc_callback, Python's garbage collections as events.
void register_gc(nanobind::module_& m);

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_MODULE_H_
