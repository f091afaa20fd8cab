#include "args.h"

#include <cstring>
#include <string>

#include "intern_cache.h"

namespace dft_py {
namespace {

bool g_warned_too_many = false;

// numpy scalars are not int/float subclasses (except float64); recognise
// them by their type's module so numpy need not be imported here.
bool is_numpy_scalar(PyObject* v) {
  return std::strncmp(Py_TYPE(v)->tp_name, "numpy.", 6) == 0;
}

// str(value), or "<unprintable TYPE>" when that raises. New reference.
PyObject* safe_str(PyObject* value) {
  PyObject* s = PyObject_Str(value);
  if (s != nullptr && PyUnicode_Check(s)) return s;
  Py_XDECREF(s);
  PyErr_Clear();
  return PyUnicode_FromFormat("<unprintable %s>", Py_TYPE(value)->tp_name);
}

// numpy scalar -> Python int/float, or NULL (no error set) when it is neither.
PyObject* numpy_to_number(PyObject* v) {
  if (PyIndex_Check(v)) {
    PyObject* r = PyNumber_Index(v);
    if (r) return r;
    PyErr_Clear();
  }
  PyNumberMethods* nm = Py_TYPE(v)->tp_as_number;
  if (nm && nm->nb_float) {
    PyObject* r = PyNumber_Float(v);
    if (r) return r;
    PyErr_Clear();
  }
  return nullptr;
}

}  // namespace

ArgList::~ArgList() {
  for (uint32_t i = 0; i < nkeep_; ++i) Py_DECREF(keep_[i]);
}

namespace {
void warn_too_many() {
  if (!g_warned_too_many) {
    g_warned_too_many = true;
    PySys_WriteStderr("dftracer: an event has more than %d args; the rest are dropped\n", DFT_MAX_ARGS);
  }
}
}  // namespace

dft_arg* ArgList::slot(dft_id key) {
  for (uint32_t i = 0; i < n_; ++i)
    if (args_[i].key == key) return &args_[i];
  if (n_ == DFT_MAX_ARGS) {
    warn_too_many();
    return nullptr;
  }
  dft_arg* a = &args_[n_++];
  a->key = key;
  return a;
}

// The value slot for a key the intern table refused: after a DFT_ARG_KEY
// arg holding the key's bytes (kept alive with the str). Off the ordinary
// path: only keys past DFTRACER_INTERN_CAP come here.
dft_arg* ArgList::inline_key_slot(PyObject* key_str) {
  Py_ssize_t len = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(key_str, &len);
  if (utf8 == nullptr || nkeep_ + 3 > sizeof(keep_) / sizeof(keep_[0])) {
    PyErr_Clear();  // no UTF-8: intern_str_bounded interns such keys, not reached
    Py_DECREF(key_str);
    return nullptr;
  }
  for (uint32_t i = 0; i + 1 < n_; ++i)  // the same key twice keeps the last value
    if (args_[i].type == DFT_ARG_KEY && args_[i].v.str.len == static_cast<uint64_t>(len) &&
        std::memcmp(args_[i].v.str.ptr, utf8, static_cast<size_t>(len)) == 0) {
      Py_DECREF(key_str);
      return &args_[i + 1];
    }
  if (n_ + 2 > DFT_MAX_ARGS) {
    warn_too_many();
    Py_DECREF(key_str);
    return nullptr;
  }
  keep_[nkeep_++] = key_str;
  dft_arg* k = &args_[n_++];
  k->key = 0;
  k->type = DFT_ARG_KEY;
  k->v.str.ptr = utf8;
  k->v.str.len = static_cast<uint32_t>(len > 0x7fffffff ? 0x7fffffff : len);
  dft_arg* v = &args_[n_++];
  v->key = 0;
  return v;
}

void ArgList::add_string(dft_arg* a, PyObject* str_obj) {
  Py_ssize_t len = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(str_obj, &len);
  if (utf8 == nullptr) {  // lone surrogates: write them as '?'
    PyErr_Clear();
    PyObject* bytes = PyUnicode_AsEncodedString(str_obj, "utf-8", "replace");
    Py_DECREF(str_obj);
    if (bytes == nullptr) {
      PyErr_Clear();
      a->type = DFT_ARG_STR;
      a->v.id = dft_intern_cstr("<unencodable>");
      return;
    }
    str_obj = bytes;
    utf8 = PyBytes_AS_STRING(bytes);
    len = PyBytes_GET_SIZE(bytes);
  }
  keep_[nkeep_++] = str_obj;  // at most two per arg slot: the list has room
  a->type = DFT_ARG_BYTES;
  a->v.str.ptr = utf8;
  a->v.str.len = static_cast<uint32_t>(len > 0x7fffffff ? 0x7fffffff : len);
}

void ArgList::add_int(dft_id key, int64_t value) {
  dft_arg* a = slot(key);
  if (!a) return;
  a->type = DFT_ARG_INT;
  a->v.i = value;
}

void ArgList::add(dft_id key, PyObject* v) {
  if (key == 0) return;
  if (nkeep_ + 2 > sizeof(keep_) / sizeof(keep_[0])) return;
  if (dft_arg* a = slot(key)) set_value(a, v);
}

void ArgList::set_value(dft_arg* a, PyObject* v) {
  if (!PyLong_Check(v) && !PyFloat_Check(v) && is_numpy_scalar(v)) {
    PyObject* num = numpy_to_number(v);
    if (num != nullptr) {
      set_value(a, num);
      Py_DECREF(num);
      return;
    }
  }
  if (v == Py_True || v == Py_False) {
    a->type = DFT_ARG_BOOL;
    a->v.i = (v == Py_True);
    return;
  }
  if (PyLong_Check(v)) {
    int overflow = 0;
    long long x = PyLong_AsLongLongAndOverflow(v, &overflow);
    if (!overflow && !(x == -1 && PyErr_Occurred())) {
      a->type = DFT_ARG_INT;
      a->v.i = x;
      return;
    }
    PyErr_Clear();
    if (overflow > 0) {
      unsigned long long u = PyLong_AsUnsignedLongLong(v);
      if (!(u == static_cast<unsigned long long>(-1) && PyErr_Occurred())) {
        a->type = DFT_ARG_UINT;
        a->v.u = u;
        return;
      }
      PyErr_Clear();
    }
    add_string(a, safe_str(v));  // beyond 64 bits: exact digits as a string
    return;
  }
  if (PyFloat_Check(v)) {
    a->type = DFT_ARG_DOUBLE;
    a->v.d = PyFloat_AS_DOUBLE(v);
    return;
  }
  if (PyUnicode_Check(v)) {
    Py_INCREF(v);
    add_string(a, v);
    return;
  }
  add_string(a, safe_str(v));
}

void ArgList::add_item(PyObject* key, PyObject* value) {
  if (PyUnicode_Check(key)) {
    const char* utf8 = nullptr;
    Py_ssize_t len = 0;
    if (dft_id id = intern_str_bounded(key, &utf8, &len)) return add(id, value);
    if (dft_arg* a = inline_key_slot(Py_NewRef(key))) set_value(a, value);
    return;
  }
  PyObject* s = safe_str(key);  // a key that is not a str: written as str(key)
  add_item(s, value);
  Py_DECREF(s);
}

void ArgList::add_mapping(PyObject* mapping) {
  if (mapping == nullptr || mapping == Py_None) return;
  if (PyDict_Check(mapping)) {
    Py_ssize_t pos = 0;
    PyObject *k, *v;
    while (PyDict_Next(mapping, &pos, &k, &v)) add_item(k, v);
    return;
  }
  PyObject* items = PyMapping_Items(mapping);
  if (items == nullptr) {
    PyErr_Clear();
    return;
  }
  Py_ssize_t n = PyList_GET_SIZE(items);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* kv = PyList_GET_ITEM(items, i);
    if (PyTuple_Check(kv) && PyTuple_GET_SIZE(kv) == 2)
      add_item(PyTuple_GET_ITEM(kv, 0), PyTuple_GET_ITEM(kv, 1));
  }
  Py_DECREF(items);
}

PyObject* normalize_value(PyObject* v) {
  if (PyBool_Check(v) || PyLong_CheckExact(v) || PyFloat_CheckExact(v) || PyUnicode_CheckExact(v))
    return Py_NewRef(v);
  if (PyLong_Check(v)) {  // int subclasses (IntEnum...): plain int
    PyObject* r = PyNumber_Long(v);
    if (r) return r;
    PyErr_Clear();
  } else if (PyFloat_Check(v)) {
    return PyFloat_FromDouble(PyFloat_AS_DOUBLE(v));
  } else if (PyUnicode_Check(v)) {
    PyObject* r = PyUnicode_FromObject(v);
    if (r) return r;
    PyErr_Clear();
  } else if (is_numpy_scalar(v)) {
    PyObject* r = numpy_to_number(v);
    if (r) return r;
  }
  return safe_str(v);
}

bool is_mapping(PyObject* o) {
  if (PyDict_Check(o)) return true;
  if (PyList_Check(o) || PyTuple_Check(o) || PyUnicode_Check(o) || PyBytes_Check(o)) return false;
  int has = PyObject_HasAttrString(o, "items");
  return has == 1 && PyMapping_Check(o);
}

PyObject* normalize_mapping(PyObject* mapping) {
  PyObject* items = nullptr;
  if (PyDict_Check(mapping)) {
    items = PyDict_Items(mapping);
  } else if (is_mapping(mapping)) {
    items = PyMapping_Items(mapping);
  } else {
    PyErr_Format(PyExc_TypeError, "dftracer: args must be a dict, got %.100s",
                 Py_TYPE(mapping)->tp_name);
    return nullptr;
  }
  if (items == nullptr) return nullptr;
  PyObject* out = PyDict_New();
  Py_ssize_t n = out ? PyList_GET_SIZE(items) : 0;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* kv = PyList_GET_ITEM(items, i);
    if (!PyTuple_Check(kv) || PyTuple_GET_SIZE(kv) != 2) continue;
    PyObject* k = PyTuple_GET_ITEM(kv, 0);
    PyObject* key = PyUnicode_Check(k) ? Py_NewRef(k) : safe_str(k);
    PyObject* val = normalize_value(PyTuple_GET_ITEM(kv, 1));
    if (PyDict_SetItem(out, key, val) < 0) PyErr_Clear();
    Py_DECREF(key);
    Py_DECREF(val);
  }
  Py_DECREF(items);
  return out;
}

}  // namespace dft_py
