// dftracer._eager._tensor_meta_fn(torch.Tensor, torch.nn.Parameter): a
// capsule named "dftracer.tensor_meta_fn" holding
// `int (*)(PyObject* obj, int64_t* nbytes, int* scalar_type)`, which reads
// a plain tensor's byte count and dtype through LibTorch (tensor_meta.cc).
#ifndef DFTRACER_BINDINGS_PYTHON_TORCH_TENSOR_META_H_
#define DFTRACER_BINDINGS_PYTHON_TORCH_TENSOR_META_H_

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject* dft_py_tensor_meta_fn(PyObject* self, PyObject* args);

#endif  // DFTRACER_BINDINGS_PYTHON_TORCH_TENSOR_META_H_
