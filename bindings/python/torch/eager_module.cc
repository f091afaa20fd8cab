// dftracer._eager: the Python switch of the LibTorch op observer
// (include/dftracer/torch.h). A separate extension from dftracer._core
// because it links LibTorch: `import torch` must come first (so the torch
// libraries it needs are the ones already loaded), and a dftracer built
// without torch simply has no _eager.
//
// Plain CPython API: a handful of functions called once per switch, no
// type to bind, no torch header (so this file compiles in a second).
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "dftracer/dftracer.h"
#include "dftracer/torch.h"
#include "tensor_meta.h"

namespace {

// Capsule name of the capture backend's probe (dftracer._core): a pointer to
// `int (*)(void)` returning the instrumented graph calls open on the
// calling thread.
constexpr const char* kProbeCapsule = "dftracer.dynamo_depth_fn";
// ... and of its memory probe: `uint32_t (*)(int64_t, int)`, which counts an
// allocation on the graph node open on the calling thread.
constexpr const char* kMemoryProbeCapsule = "dftracer.dynamo_memory_fn";

PyObject* py_enable(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"shapes", "flops", nullptr};
  int shapes = 0, flops = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|pp:enable", const_cast<char**>(kw), &shapes, &flops))
    return nullptr;
  dftracer::torch::enable(shapes != 0, flops != 0);
  Py_RETURN_NONE;
}

PyObject* py_disable(PyObject*, PyObject*) {
  dftracer::torch::disable();
  Py_RETURN_NONE;
}

PyObject* py_enabled(PyObject*, PyObject*) { return PyBool_FromLong(dftracer::torch::enabled()); }

PyObject* py_shapes_enabled(PyObject*, PyObject*) {
  return PyBool_FromLong(dftracer::torch::shapes_enabled());
}

PyObject* py_flops_enabled(PyObject*, PyObject*) { return PyBool_FromLong(dftracer::torch::flops_enabled()); }

PyObject* py_enable_noop(PyObject*, PyObject* args) {
  int inputs = 0;
  if (!PyArg_ParseTuple(args, "|p:_enable_noop_for_benchmark", &inputs)) return nullptr;
  dftracer::torch::enable_noop_for_benchmark(inputs != 0);
  Py_RETURN_NONE;
}

PyObject* py_enable_from_env(PyObject*, PyObject*) {
  return PyBool_FromLong(dftracer::torch::enable_from_env());
}

PyObject* py_enable_memory(PyObject*, PyObject* arg) {
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return nullptr;
  dftracer::torch::enable_memory(on != 0);
  Py_RETURN_NONE;
}

PyObject* py_memory_enabled(PyObject*, PyObject*) { return PyBool_FromLong(dftracer::torch::memory_enabled()); }

PyObject* py_memory_here(PyObject*, PyObject*) {
  return PyBool_FromLong(dftracer::torch::memory_reported_on_this_thread());
}

// The pointer a probe capsule named `capsule` holds, nullptr for None;
// false with a TypeError for anything else.
bool probe_arg(PyObject* arg, const char* capsule, const char* fn, void** out) {
  *out = nullptr;
  if (arg == Py_None) return true;
  if (!PyCapsule_IsValid(arg, capsule)) {
    PyErr_Format(PyExc_TypeError, "%s: expected a '%s' capsule or None, got %s", fn, capsule, Py_TYPE(arg)->tp_name);
    return false;
  }
  *out = PyCapsule_GetPointer(arg, capsule);
  return *out != nullptr;
}

PyObject* py_set_graph_depth_probe(PyObject*, PyObject* arg) {
  void* p;
  if (!probe_arg(arg, kProbeCapsule, "set_graph_depth_probe", &p)) return nullptr;
  dftracer::torch::set_graph_depth_probe(reinterpret_cast<dftracer::torch::GraphDepthProbe>(p));
  Py_RETURN_NONE;
}

PyObject* py_set_graph_memory_probe(PyObject*, PyObject* arg) {
  void* p;
  if (!probe_arg(arg, kMemoryProbeCapsule, "set_graph_memory_probe", &p)) return nullptr;
  dftracer::torch::set_graph_memory_probe(reinterpret_cast<dftracer::torch::GraphMemoryProbe>(p));
  Py_RETURN_NONE;
}

PyObject* py_suspend(PyObject*, PyObject*) {
  dftracer::torch::suspend_this_thread();
  Py_RETURN_NONE;
}

PyObject* py_resume(PyObject*, PyObject*) {
  dftracer::torch::resume_this_thread();
  Py_RETURN_NONE;
}

PyObject* py_set_optimizer_number(PyObject*, PyObject* arg) {
  const long long n = PyLong_AsLongLong(arg);
  if (n == -1 && PyErr_Occurred()) return nullptr;
  dftracer::torch::set_optimizer_number(n);
  Py_RETURN_NONE;
}

PyObject* py_set_closure_step(PyObject*, PyObject* arg) {
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return nullptr;
  dftracer::torch::set_closure_step(on != 0);
  Py_RETURN_NONE;
}

// set_module(id, depth): called twice per nn.Module call by the module hooks,
// so the arguments are read without a format string.
PyObject* py_set_module(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  if (nargs != 2 && nargs != 3) {
    PyErr_SetString(PyExc_TypeError, "set_module(id, depth[, call_name]) takes 2 or 3 arguments");
    return nullptr;
  }
  const unsigned long id = PyLong_AsUnsignedLong(args[0]);
  if (id == static_cast<unsigned long>(-1) && PyErr_Occurred()) return nullptr;
  const long depth = PyLong_AsLong(args[1]);
  if (depth == -1 && PyErr_Occurred()) return nullptr;
  unsigned long name = 0;
  if (nargs == 3) {
    name = PyLong_AsUnsignedLong(args[2]);
    if (name == static_cast<unsigned long>(-1) && PyErr_Occurred()) return nullptr;
  }
  dftracer::torch::set_module(static_cast<uint32_t>(id), static_cast<int>(depth), static_cast<uint32_t>(name));
  Py_RETURN_NONE;
}

PyObject* py_set_in_backward(PyObject*, PyObject* arg) {
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return nullptr;
  return PyBool_FromLong(dftracer::torch::set_in_backward(on != 0));
}

PyObject* py_set_in_update(PyObject*, PyObject* arg) {
  const int on = PyObject_IsTrue(arg);
  if (on < 0) return nullptr;
  return PyBool_FromLong(dftracer::torch::set_in_update(on != 0));
}

PyObject* py_set_data_thread(PyObject*, PyObject*) {
  dftracer::torch::set_data_thread();
  Py_RETURN_NONE;
}

PyObject* py_intern(PyObject*, PyObject* arg) {
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(arg, &len);
  if (s == nullptr) return nullptr;
  return PyLong_FromUnsignedLong(dft_intern(s, static_cast<size_t>(len)));
}

PyMethodDef g_methods[] = {
    {"enable", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_enable)),
     METH_VARARGS | METH_KEYWORDS,
     "enable(shapes=False, flops=False): record every eager ATen op (with input shapes, FLOPs if asked)."},
    {"disable", py_disable, METH_NOARGS, "Stop recording ATen ops."},
    {"enabled", py_enabled, METH_NOARGS, "True while the op observer is on."},
    {"shapes_enabled", py_shapes_enabled, METH_NOARGS, "True while it records input shapes."},
    {"flops_enabled", py_flops_enabled, METH_NOARGS, "True while it records FLOPs."},
    {"_enable_noop_for_benchmark", py_enable_noop, METH_VARARGS,
     "Benchmarks only: the same RecordFunction callback with empty bodies (records nothing); "
     "with_inputs=True also asks for the inputs (every op's arguments boxed); disable() removes it."},
    {"enable_from_env", py_enable_from_env, METH_NOARGS,
     "Apply DFTRACER_TRACE_EAGER (1/true/yes/on, shapes, 0/false/no/off); returns enabled()."},
    {"enable_memory", py_enable_memory, METH_O,
     "enable_memory(on): allocation capture on the calling thread (per-op bytes, the memory counter track)."},
    {"memory_enabled", py_memory_enabled, METH_NOARGS, "True while allocation capture is on."},
    {"memory_reported_on_this_thread", py_memory_here, METH_NOARGS,
     "True when allocation capture is on and reaches the calling thread."},
    {"set_graph_depth_probe", py_set_graph_depth_probe, METH_O,
     "Install the capture backend's open-graph probe (a capsule) or None."},
    {"set_graph_memory_probe", py_set_graph_memory_probe, METH_O,
     "Install the capture backend's memory probe (a capsule) or None: allocations in a graph node count on it."},
    {"suspend_this_thread", py_suspend, METH_NOARGS,
     "Pause recording on this thread until resume_this_thread (calls nest)."},
    {"resume_this_thread", py_resume, METH_NOARGS, "Undo one suspend_this_thread."},
    {"set_optimizer_number", py_set_optimizer_number, METH_O,
     "set_optimizer_number(n): args.opt = n on the optimizer step scope open innermost on this thread."},
    {"set_closure_step", py_set_closure_step, METH_O,
     "set_closure_step(on): whether the optimizer step scope open innermost on this thread runs a closure (its "
     "grad-on work is the closure's forward, not the update)."},
    {"set_module", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_set_module)), METH_FASTCALL,
     "set_module(id, depth[, call_name]): the module path id (intern(); 0: none) this thread's ops carry as "
     "args.module, and the number of module calls open on it; call_name (intern()) on a thread's first module call "
     "records that call as one event."},
    {"set_in_backward", py_set_in_backward, METH_O,
     "set_in_backward(on): mark this thread as inside Tensor.backward (its seed gradient is backward work); "
     "returns the previous mark."},
    {"set_in_update", py_set_in_update, METH_O,
     "set_in_update(on): mark this thread as inside a GradScaler's step or update (its outermost work is "
     "optimizer work); returns the previous mark."},
    {"set_data_thread", py_set_data_thread, METH_NOARGS,
     "set_data_thread(): mark this thread as a DataLoader worker's or pin-memory thread for good (its ops carry "
     "no phase: the dataset's work, not the model's)."},
    {"intern", py_intern, METH_O, "intern(path): the core's id of a string (what set_module takes)."},
    {"_tensor_meta_fn", dft_py_tensor_meta_fn, METH_VARARGS,
     "_tensor_meta_fn(torch.Tensor, torch.nn.Parameter): the traced collective's tensor reader (a capsule)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "_eager",
                        "dftracer LibTorch op observer switch (import torch first).", -1, g_methods,
                        nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__eager(void) { return PyModule_Create(&g_module); }
