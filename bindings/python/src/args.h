// Python values -> dft_arg records for one event.
//
// Typing follows what the trace shows: bool -> true/false, int -> integer
// (unsigned past INT64_MAX, a string past UINT64_MAX), float -> number,
// str -> string; numpy integer/float scalars as numbers; any other value is
// written as str(value). Keys that are not str are written as str(key).
// Nothing here raises: a value whose str() fails is written as
// "<unprintable TYPE>".
#ifndef DFTRACER_BINDINGS_PYTHON_ARGS_H_
#define DFTRACER_BINDINGS_PYTHON_ARGS_H_

#include <Python.h>

#include <dftracer/dftracer.h>

namespace dft_py {

// A fixed-capacity list of args for one dft_complete_* call. String values
// point into Python str objects that the list keeps alive until it is
// destroyed, so the list must outlive the core call (the core copies them).
// A key added twice keeps the last value. Past DFT_MAX_ARGS args the rest
// are dropped (one warning on stderr per process). A key that may be new on
// every call (any key of a user's dict) is interned only while the core's
// table is under DFTRACER_INTERN_CAP; past it the key is copied into the
// record (a DFT_ARG_KEY arg just before its value, taking one more of the
// DFT_MAX_ARGS), so one-off keys never grow the table.
class ArgList {
 public:
  ArgList() = default;
  ~ArgList();
  ArgList(const ArgList&) = delete;
  ArgList& operator=(const ArgList&) = delete;

  void add(dft_id key, PyObject* value);
  void add_item(PyObject* key, PyObject* value);
  // Every item of a dict (or of any mapping with .items()).
  void add_mapping(PyObject* mapping);
  void add_int(dft_id key, int64_t value);

  const dft_arg* data() const { return n_ ? args_ : nullptr; }
  uint32_t size() const { return n_; }

 private:
  dft_arg* slot(dft_id key);
  dft_arg* inline_key_slot(PyObject* key_str);  // steals key_str
  void set_value(dft_arg* a, PyObject* value);
  void add_string(dft_arg* a, PyObject* str_obj);  // steals str_obj

  dft_arg args_[DFT_MAX_ARGS];
  uint32_t n_ = 0;
  PyObject* keep_[DFT_MAX_ARGS * 2];
  uint32_t nkeep_ = 0;
};

// The form in which an arg value is stored until its event is written
// (update() args, dft_fn(epoch=...)): bool, int, float and str unchanged,
// numpy scalars as int/float, anything else as str(value). Returns a new
// reference; never NULL.
PyObject* normalize_value(PyObject* value);

// True for a dict or a mapping (an object with .items() that is not a
// sequence). Lists pass PyMapping_Check, so that alone is not enough.
bool is_mapping(PyObject* o);

// A dict with every key as str and every value normalized. NULL with an
// error set when `mapping` is not a mapping.
PyObject* normalize_mapping(PyObject* mapping);

}  // namespace dft_py

#endif  // DFTRACER_BINDINGS_PYTHON_ARGS_H_
