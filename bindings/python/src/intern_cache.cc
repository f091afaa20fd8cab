#include "intern_cache.h"

namespace dft_py {

RecentId g_recent_ids[kRecentIds];

namespace {

PyObject* g_cache = nullptr;  // dict: str -> int (dft_id)

// Stop caching (not interning) past this many distinct strings: a program
// that makes a new event name per call would otherwise grow the dict
// without bound. Such names still work, at the cost of hashing each time.
constexpr Py_ssize_t kMaxCached = 1 << 20;

dft_id intern_utf8_of(PyObject* s) {
  Py_ssize_t len = 0;
  const char* utf8 = PyUnicode_AsUTF8AndSize(s, &len);
  if (utf8 != nullptr) return dft_intern(utf8, static_cast<size_t>(len));
  PyErr_Clear();
  PyObject* bytes = PyUnicode_AsEncodedString(s, "utf-8", "replace");
  if (bytes == nullptr) {
    PyErr_Clear();
    return dft_intern_cstr("<unencodable>");
  }
  dft_id id = dft_intern(PyBytes_AS_STRING(bytes), static_cast<size_t>(PyBytes_GET_SIZE(bytes)));
  Py_DECREF(bytes);
  return id;
}

}  // namespace

bool init_intern_cache() {
  if (g_cache == nullptr) g_cache = PyDict_New();
  return g_cache != nullptr;
}

namespace {

// Puts `s` in g_recent_ids (in place of the str that had its slot).
dft_id note_recent(PyObject* s, dft_id id) {
#ifndef Py_GIL_DISABLED
  if (id != 0) {
    RecentId& r = recent_slot(s);
    PyObject* old = r.s;
    r.s = Py_NewRef(s);
    r.id = id;
    Py_XDECREF(old);  // after the slot is consistent: a str's dealloc runs no Python code, but be safe
  }
#endif
  return id;
}

dft_id cached(PyObject* s) {
  if (dft_id id = recent_id(s)) return id;
  PyObject* hit = PyDict_GetItemWithError(g_cache, s);  // borrowed
  if (hit != nullptr) return note_recent(s, static_cast<dft_id>(PyLong_AsUnsignedLong(hit)));
  if (PyErr_Occurred()) PyErr_Clear();
  return 0;
}

dft_id remember(PyObject* s, dft_id id) {
  note_recent(s, id);
  if (id != 0 && PyDict_GET_SIZE(g_cache) < kMaxCached) {
    PyObject* v = PyLong_FromUnsignedLong(id);
    if (v == nullptr || PyDict_SetItem(g_cache, s, v) < 0) PyErr_Clear();
    Py_XDECREF(v);
  }
  return id;
}

}  // namespace

dft_id intern_str(PyObject* s) {
  if (!PyUnicode_Check(s)) {
    PyErr_Format(PyExc_TypeError, "dftracer: expected a str, got %.100s", Py_TYPE(s)->tp_name);
    return 0;
  }
  if (dft_id id = cached(s)) return id;
  return remember(s, intern_utf8_of(s));
}

dft_id intern_str_bounded(PyObject* s, const char** utf8, Py_ssize_t* len) {
  if (dft_id id = cached(s)) return id;
  *utf8 = PyUnicode_AsUTF8AndSize(s, len);
  if (*utf8 == nullptr) {  // lone surrogates: rare, interned with '?' as intern_str does
    PyErr_Clear();
    return intern_str(s);
  }
  return remember(s, dft_intern_bounded(*utf8, static_cast<size_t>(*len)));
}

Py_ssize_t intern_cache_size() { return g_cache ? PyDict_GET_SIZE(g_cache) : 0; }

}  // namespace dft_py
