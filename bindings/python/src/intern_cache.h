// Python str -> core string id, cached.
//
// dft_intern hashes the bytes on every call; a Python str caches its own hash,
// so a dict keyed by the str object answers a repeated name with one lookup.
// Ids are stable for the life of the process (the core never forgets a
// string), so the cache never needs invalidating -- also not across fork.
#ifndef DFTRACER_BINDINGS_PYTHON_INTERN_CACHE_H_
#define DFTRACER_BINDINGS_PYTHON_INTERN_CACHE_H_

#include <Python.h>

#include <cstdint>

#include <dftracer/dftracer.h>

namespace dft_py {

// Creates the cache; called once from module init. Returns false with a
// Python error set on failure.
bool init_intern_cache();

// The strs interned most recently, by address: a str passed again (a literal
// name or category in a loop) is answered by one compare, not a dict lookup.
// Each entry holds a reference to its str, so an address found here is that
// str's -- never a freed str's address reused -- and a str never changes.
// Touched with the GIL held only (left empty on free-threaded builds).
struct RecentId {
  PyObject* s;
  dft_id id;
};
constexpr int kRecentIds = 64;
extern RecentId g_recent_ids[kRecentIds];
inline RecentId& recent_slot(PyObject* s) {
  return g_recent_ids[(reinterpret_cast<uintptr_t>(s) * 0x9E3779B97F4A7C15ull) >> 58];
}
// The id of `s` if it is in g_recent_ids, else 0.
inline dft_id recent_id(PyObject* s) {
  const RecentId& r = recent_slot(s);
  return r.s == s ? r.id : 0;
}
static_assert(kRecentIds == 64, "recent_slot keeps the top 6 bits of the hash");

// Id of `s`, which must be a str (TypeError set and 0 returned otherwise).
// A str that cannot be encoded as UTF-8 (lone surrogates) is interned with
// the offending characters replaced by '?'.
dft_id intern_str(PyObject* s);

// For names and keys that may be new on every call (log_event, region and
// traced-function names, dict keys of args): the cached or
// interned id of the str `s`, interned only while the core's table is under
// DFTRACER_INTERN_CAP (dft_intern_bounded). Past the cap returns 0 with
// *utf8/*len set to the str's own UTF-8 bytes (valid while `s` lives), for
// dft_*_named / DFT_ARG_KEY to copy into the record. `s` must be a str.
// A str with no UTF-8 form (lone surrogates) is interned as intern_str does.
dft_id intern_str_bounded(PyObject* s, const char** utf8, Py_ssize_t* len);

// intern_str / intern_str_bounded with the g_recent_ids check inlined.
inline dft_id intern_str_fast(PyObject* s) {
  const dft_id id = recent_id(s);
  return id != 0 ? id : intern_str(s);
}
inline dft_id intern_str_bounded_fast(PyObject* s, const char** utf8, Py_ssize_t* len) {
  const dft_id id = recent_id(s);
  return id != 0 ? id : intern_str_bounded(s, utf8, len);
}

// Number of cached entries (for tests and the benchmark).
Py_ssize_t intern_cache_size();

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_INTERN_CACHE_H_
