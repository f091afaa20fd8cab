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

#include "dftracer/torch.h"
#include "tensor_meta.h"

namespace {

// Capsule name of the capture backend's probe (dftracer._core): a pointer to
// `int (*)(void)` returning the instrumented graph calls open on the
// calling thread.
constexpr const char* kProbeCapsule = "dftracer.dynamo_depth_fn";

PyObject* py_enable(PyObject*, PyObject* args, PyObject* kwargs) {
  static const char* kw[] = {"shapes", nullptr};
  int shapes = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:enable", const_cast<char**>(kw), &shapes))
    return nullptr;
  dftracer::torch::enable(shapes != 0);
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

PyObject* py_enable_noop(PyObject*, PyObject*) {
  dftracer::torch::enable_noop_for_benchmark();
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

PyObject* py_set_graph_depth_probe(PyObject*, PyObject* arg) {
  if (arg == Py_None) {
    dftracer::torch::set_graph_depth_probe(nullptr);
    Py_RETURN_NONE;
  }
  if (!PyCapsule_IsValid(arg, kProbeCapsule)) {
    PyErr_Format(PyExc_TypeError, "set_graph_depth_probe: expected a '%s' capsule or None, got %s",
                 kProbeCapsule, Py_TYPE(arg)->tp_name);
    return nullptr;
  }
  void* p = PyCapsule_GetPointer(arg, kProbeCapsule);
  if (p == nullptr) return nullptr;
  dftracer::torch::set_graph_depth_probe(reinterpret_cast<dftracer::torch::GraphDepthProbe>(p));
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

PyMethodDef g_methods[] = {
    {"enable", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(py_enable)),
     METH_VARARGS | METH_KEYWORDS,
     "enable(shapes=False): record every eager ATen op (with input shapes if asked)."},
    {"disable", py_disable, METH_NOARGS, "Stop recording ATen ops."},
    {"enabled", py_enabled, METH_NOARGS, "True while the op observer is on."},
    {"shapes_enabled", py_shapes_enabled, METH_NOARGS, "True while it records input shapes."},
    {"_enable_noop_for_benchmark", py_enable_noop, METH_NOARGS,
     "Benchmarks only: the same RecordFunction callback with empty bodies (records nothing); "
     "disable() removes it."},
    {"enable_from_env", py_enable_from_env, METH_NOARGS,
     "Apply DFTRACER_TRACE_EAGER (1/true/yes/on, shapes, 0/false/no/off); returns enabled()."},
    {"enable_memory", py_enable_memory, METH_O,
     "enable_memory(on): allocation capture on the calling thread (per-op bytes, the memory counter track)."},
    {"memory_enabled", py_memory_enabled, METH_NOARGS, "True while allocation capture is on."},
    {"memory_reported_on_this_thread", py_memory_here, METH_NOARGS,
     "True when allocation capture is on and reaches the calling thread."},
    {"set_graph_depth_probe", py_set_graph_depth_probe, METH_O,
     "Install the capture backend's open-graph probe (a capsule) or None."},
    {"suspend_this_thread", py_suspend, METH_NOARGS,
     "Pause recording on this thread until resume_this_thread (calls nest)."},
    {"resume_this_thread", py_resume, METH_NOARGS, "Undo one suspend_this_thread."},
    {"set_optimizer_number", py_set_optimizer_number, METH_O,
     "set_optimizer_number(n): args.opt = n on the optimizer step scope open innermost on this thread."},
    {"_tensor_meta_fn", dft_py_tensor_meta_fn, METH_VARARGS,
     "_tensor_meta_fn(torch.Tensor, torch.nn.Parameter): the traced collective's tensor reader (a capsule)."},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef g_module = {PyModuleDef_HEAD_INIT, "_eager",
                        "dftracer LibTorch op observer switch (import torch first).", -1, g_methods,
                        nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__eager(void) { return PyModule_Create(&g_module); }
