// Python str -> core string id, cached.
//
// dft_intern hashes the bytes on every call; a Python str caches its own hash,
// so a dict keyed by the str object answers a repeated name with one lookup.
// Ids are stable for the life of the process (the core never forgets a
// string), so the cache never needs invalidating -- also not across fork.
#ifndef DFTRACER_BINDINGS_PYTHON_INTERN_CACHE_H_
#define DFTRACER_BINDINGS_PYTHON_INTERN_CACHE_H_

#include <Python.h>

#include <dftracer/dftracer.h>

namespace dft_py {

// Creates the cache; called once from module init. Returns false with a
// Python error set on failure.
bool init_intern_cache();

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

// Number of cached entries (for tests and the benchmark).
Py_ssize_t intern_cache_size();

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_INTERN_CACHE_H_
