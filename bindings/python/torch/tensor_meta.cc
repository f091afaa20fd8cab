// A torch.Tensor's byte count and dtype read through LibTorch, for the
// traced collective (_core.CommWrapper, bindings/python/src/comm_call.cc).
//
// `t.nbytes` and `t.dtype` are torch's Python getters: an attribute lookup
// through the tensor type's MRO, libtorch_python code the untraced
// collective never runs, a new int. Right after a collective that waited
// for its peers every one of those is a cache miss (the wait ran other
// threads on this core), and they cost ~14 us at 16 MiB under load
// (bench/comm/bench_comm_after.py). This reads the same two facts from the
// tensor's TensorImpl: the Python object, one pointer, the impl's numel and
// dtype.
//
// Only for an object whose type is exactly torch.Tensor or
// torch.nn.Parameter (what THPVariable_CheckTypeExact accepts: a subclass
// may define its own `nbytes`), and only when LibTorch can answer without
// raising (a sparse or symbolic-size tensor goes to the Python getters,
// which raise or answer as before). The values are those of the getters:
// `nbytes` is at::TensorBase::nbytes(), `dtype` the scalar type whose
// torch.dtype the getter returns.
#include "tensor_meta.h"

#include <torch/csrc/autograd/python_variable.h>

namespace {

constexpr const char* kTensorMetaCapsule = "dftracer.tensor_meta_fn";

// torch.Tensor and torch.nn.Parameter (strong references, never released:
// the capsule's function may run until the interpreter exits).
PyTypeObject* g_tensor_type = nullptr;
PyTypeObject* g_param_type = nullptr;

// 1 and the byte count and at::ScalarType of `obj` when it is a plain
// tensor LibTorch describes; 0 (no error set) otherwise.
int tensor_meta(PyObject* obj, int64_t* nbytes, int* scalar_type) noexcept {
  PyTypeObject* tp = Py_TYPE(obj);
  if (tp != g_tensor_type && tp != g_param_type) return 0;
  try {
    const at::Tensor& t = THPVariable_Unpack(obj);
    if (!t.defined()) return 0;
    *nbytes = static_cast<int64_t>(t.nbytes());
    *scalar_type = static_cast<int>(t.scalar_type());
    return 1;
  } catch (...) {  // sparse, symbolic sizes: not describable here
    return 0;
  }
}

}  // namespace

PyObject* dft_py_tensor_meta_fn(PyObject*, PyObject* args) {
  PyObject *tensor_type, *param_type;
  if (!PyArg_ParseTuple(args, "O!O!:_tensor_meta_fn", &PyType_Type, &tensor_type, &PyType_Type, &param_type))
    return nullptr;
  if (g_tensor_type == nullptr) {
    g_tensor_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(tensor_type));
    g_param_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(param_type));
  } else if (reinterpret_cast<PyObject*>(g_tensor_type) != tensor_type ||
             reinterpret_cast<PyObject*>(g_param_type) != param_type) {
    PyErr_SetString(PyExc_ValueError, "_tensor_meta_fn: already set up for other types");
    return nullptr;
  }
  using Fn = int (*)(PyObject*, int64_t*, int*);
  Fn fn = tensor_meta;
  return PyCapsule_New(reinterpret_cast<void*>(fn), kTensorMetaCapsule, nullptr);
}
