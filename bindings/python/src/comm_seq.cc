// _core._SeqCounter (comm_seq.h).
#include "comm_seq.h"

namespace dft_py {

PyTypeObject* g_seq_counter_type = nullptr;

namespace {

PyObject* SC_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
  if (PyTuple_GET_SIZE(args) != 0 || (kwds != nullptr && PyDict_GET_SIZE(kwds) != 0)) {
    PyErr_SetString(PyExc_TypeError, "_SeqCounter() takes no arguments");
    return nullptr;
  }
  auto* c = reinterpret_cast<SeqCounterObject*>(type->tp_alloc(type, 0));
  if (c != nullptr) c->next = 0;
  return reinterpret_cast<PyObject*>(c);
}

PyObject* SC_next(PyObject* op) { return PyLong_FromLongLong(seq_fetch_next(reinterpret_cast<SeqCounterObject*>(op))); }

PyObject* SC_repr(PyObject* op) {
  return PyUnicode_FromFormat("_SeqCounter(next=%lld)",
                              static_cast<long long>(__atomic_load_n(&reinterpret_cast<SeqCounterObject*>(op)->next,
                                                                     __ATOMIC_RELAXED)));
}

void SC_dealloc(PyObject* op) {
  PyTypeObject* tp = Py_TYPE(op);
  tp->tp_free(op);
  Py_DECREF(tp);
}

PyType_Slot SC_slots[] = {{Py_tp_new, reinterpret_cast<void*>(SC_new)},
                          {Py_tp_dealloc, reinterpret_cast<void*>(SC_dealloc)},
                          {Py_tp_iter, reinterpret_cast<void*>(PyObject_SelfIter)},
                          {Py_tp_iternext, reinterpret_cast<void*>(SC_next)},
                          {Py_tp_repr, reinterpret_cast<void*>(SC_repr)},
                          {Py_tp_doc, const_cast<char*>("The seq counter of a traced torch.distributed group: "
                                                        "next() gives 0, 1, 2, ...")},
                          {0, nullptr}};

PyType_Spec SC_spec = {"dftracer._core._SeqCounter", sizeof(SeqCounterObject), 0, Py_TPFLAGS_DEFAULT, SC_slots};

}  // namespace

int add_seq_counter_type(PyObject* module) {
  PyObject* type = PyType_FromSpec(&SC_spec);
  if (type == nullptr) return -1;
  g_seq_counter_type = reinterpret_cast<PyTypeObject*>(Py_NewRef(type));  // kept for seq_take
  if (PyModule_AddObject(module, "_SeqCounter", type) < 0) {
    Py_DECREF(type);
    return -1;
  }
  return 0;
}

}  // namespace dft_py
