// Python face of the torch.compile capture (dftracer.python.dynamo): argument
// parsing and registration only. The capture itself -- graph tables, marks,
// the per-thread call stack, forward/backward pairing -- is the C++ library
// in src/capture/compile/, whose headers explain how it works.
//
// The three per-node/per-call entry points (dynamo_begin / dynamo_mark /
// dynamo_end) are plain METH_FASTCALL CPython functions rather than nanobind
// bindings: the cheapest call there is, ~8 ns less than nanobind's dispatch
// for a call with int arguments (docs/performance.md), which matters
// when the whole per-node budget is ~100 ns. dynamo_mark compiles the
// library's inline mark() in place (call_stack.h): no call beyond Python's.

#include <Python.h>
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "call_stack.h"
#include "dftracer/dftracer.h"
#include "graph_call.h"
#include "graph_table.h"
#include "module.h"

namespace nb = nanobind;
namespace dyn = dftracer::dynamo;

namespace dft_py {
namespace {

inline bool parse_long(PyObject* o, long* out) {
  long v = PyLong_AsLong(o);
  if (v == -1 && PyErr_Occurred()) return false;
  *out = v;
  return true;
}

inline bool parse_u64(PyObject* o, uint64_t* out) {
  unsigned long long v = PyLong_AsUnsignedLongLong(o);
  if (v == static_cast<unsigned long long>(-1) && PyErr_Occurred()) return false;
  *out = v;
  return true;
}

// A mark's node index: an exact int that fits one digit (every index a
// graph has) is read in place, without PyLong_AsLong's call and overflow
// checks (~25 instructions of the per-node path); anything else goes
// through PyLong_AsLong.
inline bool parse_index(PyObject* o, long* out) {
#if !defined(Py_LIMITED_API) && PY_VERSION_HEX < 0x030C0000
  if (PyLong_CheckExact(o)) {
    const Py_ssize_t size = Py_SIZE(o);
    if (size == 0 || size == 1) {
      *out = size == 0 ? 0 : static_cast<long>(reinterpret_cast<PyLongObject*>(o)->ob_digit[0]);
      return true;
    }
  }
#elif !defined(Py_LIMITED_API)
  if (PyLong_CheckExact(o) && _PyLong_IsCompact(reinterpret_cast<PyLongObject*>(o))) {
    *out = static_cast<long>(_PyLong_CompactValue(reinterpret_cast<PyLongObject*>(o)));
    return true;
  }
#endif
  return parse_long(o, out);
}

// dynamo_mark(i): node i starts now (and the previous node ends).
PyObject* py_mark(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 1) {
    PyErr_SetString(PyExc_TypeError, "dynamo_mark(node_index) takes one int");
    return nullptr;
  }
  long i;
  if (!parse_index(args[0], &i)) return nullptr;
  dyn::mark(i);
  Py_RETURN_NONE;
}

// dynamo_begin(slot, grad_enabled, tags_fragment_id[, key]): a graph call starts.
PyObject* py_begin(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 3 && nargs != 4) {
    PyErr_SetString(PyExc_TypeError, "dynamo_begin(slot, grad_enabled, tags_id[, key]) takes three or four ints");
    return nullptr;
  }
  long slot, grad, tags;
  uint64_t key = 0;
  if (!parse_long(args[0], &slot) || !parse_long(args[1], &grad) || !parse_long(args[2], &tags) ||
      (nargs == 4 && !parse_u64(args[3], &key)))
    return nullptr;
  dyn::begin_call(slot, static_cast<int>(grad), static_cast<dft_id>(tags), key);
  Py_RETURN_NONE;
}

// dynamo_end([key]): the innermost graph call of this thread ends.
PyObject* py_end(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  uint64_t key = 0;
  if (nargs > 1) {
    PyErr_SetString(PyExc_TypeError, "dynamo_end([key]) takes at most one int");
    return nullptr;
  }
  if (nargs == 1 && !parse_u64(args[0], &key)) return nullptr;
  dyn::end_call(key);
  Py_RETURN_NONE;
}

PyMethodDef g_fast_methods[] = {
    {"dynamo_mark", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_mark)),
     METH_FASTCALL, "dynamo_mark(i): close the open node of this thread's graph call, open node i."},
    {"dynamo_begin", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_begin)),
     METH_FASTCALL, "dynamo_begin(slot, grad_enabled, tags_id[, key]): a call of graph `slot` starts."},
    {"dynamo_end", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_end)),
     METH_FASTCALL, "dynamo_end([key]): the innermost graph call of this thread ends."},
    {nullptr, nullptr, 0, nullptr}};

// The library throws std::invalid_argument / std::length_error on bad input;
// nanobind turns both into ValueError with the library's message.
int register_graph(std::string event_name, std::string fragment, int phase, std::vector<std::string> names,
                   std::vector<std::string> fragments, std::vector<int> flows, uint32_t n_flow_groups,
                   int pair_slot) {
  dyn::GraphSpec spec;
  spec.event_name = std::move(event_name);
  spec.fragment = std::move(fragment);
  spec.phase = phase;
  spec.names = std::move(names);
  spec.fragments = std::move(fragments);
  spec.flows = std::move(flows);
  spec.n_flow_groups = n_flow_groups;
  spec.pair_slot = pair_slot;
  return dyn::register_graph(spec);
}

}  // namespace

void register_dynamo(nb::module_& m) {
  if (PyModule_AddFunctions(m.ptr(), g_fast_methods) != 0) throw nb::python_error();
  m.def("dynamo_register_graph", &register_graph, nb::arg("event_name"), nb::arg("fragment"),
        nb::arg("phase"), nb::arg("names"), nb::arg("fragments"), nb::arg("flows"),
        nb::arg("n_flow_groups"), nb::arg("pair_slot"),
        "Registers an instrumented graph's node table; returns its slot.");
  m.def("dynamo_unregister_graph", &dyn::unregister_graph, nb::arg("slot"),
        "Frees a dead graph's table and its slot (called by the graph's finalizer).");
  m.def("dynamo_registered_graphs", &dyn::registered_graphs, "Graphs registered now (for tests).");
  m.def("dynamo_intern_fragment", &dyn::intern_fragment, nb::arg("fragment"),
        "Interns a JSON-members fragment (`\"k\":v,...`); ValueError when it is not one.");
  m.def("dynamo_region_end", &dyn::record_region, nb::arg("name_id"), nb::arg("begin_ticks"),
        nb::arg("fragment_id"), nb::arg("grad_enabled"), nb::arg("tags_id"),
        "Records a compiled-region event from begin_ticks to now.");
  m.attr("dynamo_depth_fn") =
      nb::capsule(reinterpret_cast<void*>(&dyn::call_depth_probe), "dftracer.dynamo_depth_fn");
  m.attr("dynamo_memory_fn") =
      nb::capsule(reinterpret_cast<void*>(&dyn::add_memory), "dftracer.dynamo_memory_fn");
  m.def("dynamo_depth", &dyn::call_depth, "Open graph calls on this thread (for tests: 0 between calls).");
}

}  // namespace dft_py
