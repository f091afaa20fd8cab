// Module-level functions of dftracer._core: thin wrappers over the C API in
// include/dftracer/dftracer.h. Times cross this boundary as integers:
// ticks (dft_ticks), nanoseconds or microseconds since the Unix epoch.
#include <Python.h>

#include <cmath>
#include <cstdint>
#include <string>

#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>

#include <dftracer/dftracer.h>

#include "args.h"
#include "intern_cache.h"
#include "module.h"
#include "skipped_call.h"

namespace nb = nanobind;

namespace dft_py {
namespace {

// The one rule for a time in microseconds, int or float: it must be >= 0 and
// fit in 64-bit nanoseconds. Floats used to go through llround(d * 1000),
// which is undefined past 2^63 ns and wrote garbage where ints raised.
[[noreturn]] void time_out_of_range(const char* what) {
  throw nb::value_error((std::string("dftracer: ") + what +
                         " out of range (a finite number of microseconds from 0 to " +
                         std::to_string(UINT64_MAX / 1000) + " expected)").c_str());
}

// A time given in microseconds (int or float, pydftracer's unit) as integer
// nanoseconds. Raises ValueError for negative, non-finite or too large values.
uint64_t us_to_ns(nb::handle t, const char* what) {
  PyObject* o = t.ptr();
  if (PyFloat_Check(o)) {
    double d = PyFloat_AS_DOUBLE(o);
    if (!std::isfinite(d) || d < 0) time_out_of_range(what);
    double ns = std::round(d * 1000.0);
    if (!(ns < 0x1p64)) time_out_of_range(what);  // 2^64: the first value a uint64_t cannot hold
    return static_cast<uint64_t>(ns);
  }
  if (PyLong_Check(o) && !PyBool_Check(o)) {
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) throw nb::python_error();
    if (overflow || v < 0 || static_cast<unsigned long long>(v) > UINT64_MAX / 1000) time_out_of_range(what);
    return static_cast<uint64_t>(v) * 1000u;
  }
  throw nb::type_error((std::string("dftracer: ") + what + " must be an int or float (microseconds), got " +
                        Py_TYPE(o)->tp_name).c_str());
}

dft_id checked_intern(nb::handle s, const char* what) {
  if (!PyUnicode_Check(s.ptr()))
    throw nb::type_error((std::string("dftracer: event ") + what + " must be a str, got " +
                          Py_TYPE(s.ptr())->tp_name).c_str());
  dft_id id = intern_str(s.ptr());
  if (id == 0 && PyErr_Occurred()) throw nb::python_error();
  return id;
}

void log_event_ns(nb::handle name, nb::handle cat, uint64_t start_ns, uint64_t dur_ns,
                  nb::handle args) {
  if (dur_ns > UINT64_MAX - start_ns)  // the event's end would not fit either
    throw nb::value_error("dftracer: start_time + duration out of range (their sum must fit in 64-bit nanoseconds)");
  if (!PyUnicode_Check(name.ptr())) checked_intern(name, "name");  // raises its TypeError
  // A name may be new on every call (f"step {i}"): bounded interning, and
  // past DFTRACER_INTERN_CAP the name is copied into the record instead.
  const char* name_utf8 = nullptr;
  Py_ssize_t name_len = 0;
  dft_id name_id = intern_str_bounded(name.ptr(), &name_utf8, &name_len);
  dft_id cat_id = checked_intern(cat, "cat");
  ArgList list;
  if (args.is_valid() && !args.is_none()) {
    if (!is_mapping(args.ptr()))
      throw nb::type_error((std::string("dftracer: args must be a dict, got ") +
                            Py_TYPE(args.ptr())->tp_name).c_str());
    list.add_mapping(args.ptr());
  }
  const dft_arg* a = list.size() ? list.data() : nullptr;
  if (name_id != 0)
    dft_complete_ns(name_id, cat_id, start_ns, dur_ns, a, list.size());
  else
    dft_complete_ns_named(name_utf8, static_cast<size_t>(name_len), cat_id, start_ns, dur_ns, a, list.size());
}

// A C string the core may return as NULL, as str or None.
std::optional<std::string> optional_str(const char* p) {
  if (p == nullptr) return std::nullopt;
  return std::string(p);
}

// str(o) as UTF-8, every character of it: an embedded NUL stays (the core
// takes a length and writes it as \u0000; c_str() cut the string there) and
// a lone surrogate, which has no UTF-8 form, becomes '?' as in event args
// (args.cc; c_str() returned NULL and std::string threw a C++ message).
std::string utf8_of(nb::handle o) {
  nb::str s = nb::str(o);  // str(value) -- raises like str() would
  Py_ssize_t n = 0;
  if (const char* p = PyUnicode_AsUTF8AndSize(s.ptr(), &n)) return std::string(p, static_cast<size_t>(n));
  PyErr_Clear();
  nb::object b = nb::steal(PyUnicode_AsEncodedString(s.ptr(), "utf-8", "replace"));
  if (!b.is_valid()) throw nb::python_error();
  return std::string(PyBytes_AS_STRING(b.ptr()), static_cast<size_t>(PyBytes_GET_SIZE(b.ptr())));
}

}  // namespace

namespace {
// metadata / custom_metadata: a str key and any value (str() of it), every
// byte kept, handed to `record` (dft_metadata_len or dft_custom_metadata_len).
void key_value_metadata(void (*record)(const char*, size_t, const char*, size_t), nb::handle key,
                        nb::handle value) {
  if (!PyUnicode_Check(key.ptr()))
    throw nb::type_error((std::string("dftracer: metadata key must be a str, got ") + Py_TYPE(key.ptr())->tp_name)
                             .c_str());
  std::string k = utf8_of(key), v = utf8_of(value);
  record(k.data(), k.size(), v.data(), v.size());
}
}  // namespace

void register_api(nb::module_& m) {
  if (!init_intern_cache()) throw nb::python_error();

  // ------------------------------------------------------------ lifecycle
  m.def(
      "init",
      [](std::optional<std::string> log_file, std::optional<std::string> data_dir,
         int64_t process_id, bool opt_in) {
        int rc;
        {
          nb::gil_scoped_release release;
          const char* lf = log_file ? log_file->c_str() : nullptr;
          const char* dd = data_dir ? data_dir->c_str() : nullptr;
          rc = opt_in ? dft_init_opt_in(lf, dd, process_id) : dft_init(lf, dd, process_id);
        }
        return rc;
      },
      nb::arg("log_file").none() = nb::none(), nb::arg("data_dir").none() = nb::none(),
      nb::arg("process_id") = -1, nb::arg("opt_in") = false,
      "Starts tracing: dft_init (only with DFTRACER_ENABLE=1), or dft_init_opt_in when opt_in "
      "(also with DFTRACER_ENABLE unset). Returns 0 when tracing is on after the call, -1 when "
      "the trace file cannot be created, 1 when tracing stays off.");
  m.def(
      "env_enable",
      []() -> std::optional<bool> {
        int v = dft_env_enable();
        if (v < 0) return std::nullopt;
        return v == 1;
      },
      "DFTRACER_ENABLE as the core reads it: True (exactly 1), False (set to anything else: "
      "tracing off, even for an opt-in) or None (unset).");
  m.def(
      "relocate", [](const std::string& prefix) { return dft_relocate(prefix.c_str()) == 0; },
      nb::call_guard<nb::gil_scoped_release>(),
      "Renames the trace file being written to one named from `prefix` (its events kept) and goes on "
      "writing it. False when tracing is off or the file cannot be renamed.");
  m.def("init_from_env", []() { return dft_init_from_env() != 0; },
        "Starts tracing if DFTRACER_ENABLE=1 (read once per process). True when tracing is on.");
  m.def("finalize", []() { dft_finalize(); }, nb::call_guard<nb::gil_scoped_release>(),
        "Flushes, writes the end event and closes the trace file. Idempotent.");
  m.def("flush", []() { dft_flush(); }, nb::call_guard<nb::gil_scoped_release>(),
        "Waits until everything recorded so far is in the file.");
  m.def("enabled", []() { return dft_enabled() != 0; }, "True while tracing is on.");
  m.def("trace_path", []() { return optional_str(dft_trace_path()); },
        "Path of the trace file being written, or None.");
  m.def("trace_prefix", []() { return optional_str(dft_trace_prefix()); },
        "The <prefix> the trace file's name was built from, or None when tracing is off.");
  m.def(
      "trace_file_name",
      [](const std::string& prefix, const std::string& app, int64_t pid, bool compress) {
        int n = dft_trace_file_name(prefix.c_str(), app.c_str(), pid, compress ? 1 : 0, nullptr, 0);
        std::string name(static_cast<size_t>(n), '\0');
        dft_trace_file_name(prefix.c_str(), app.c_str(), pid, compress ? 1 : 0, name.data(), name.size() + 1);
        return name;
      },
      nb::arg("prefix"), nb::arg("app"), nb::arg("pid"), nb::arg("compress"),
      "The core's trace file name: '<prefix>-<app>-<pid>.pfw' or '.pfw.gz' (dft_trace_file_name).");
  m.def(
      "stats",
      []() {
        dft_stats s{};
        dft_get_stats(&s);
        nb::dict d;
        d["events_recorded"] = s.events_recorded;
        d["events_written"] = s.events_written;
        d["events_dropped"] = s.events_dropped;
        d["events_after_finalize"] = s.events_after_finalize;
        d["bytes_written"] = s.bytes_written;
        d["pool_bytes_in_use"] = s.pool_bytes_in_use;
        d["pool_bytes_peak"] = s.pool_bytes_peak;
        d["pool_bytes_cap"] = s.pool_bytes_cap;
        d["intern_cache_size"] = intern_cache_size();
        d["names_inline"] = s.names_inline;
        return d;
      },
      "Counters of the core since the last init (dft_get_stats).");

  // ---------------------------------------------------------------- clock
  m.def("ticks", []() { return dft_ticks(); }, "Raw fast clock (dft_ticks).");
  m.def("ticks_to_ns", [](uint64_t t) { return dft_ticks_to_ns(t); },
        "dft_ticks() value -> nanoseconds since the epoch.");
  m.def("now_ns", []() { return dft_now_ns(); }, "Nanoseconds since the Unix epoch.");
  m.def("now_us", []() { return dft_now_ns() / 1000u; },
        "Microseconds since the Unix epoch (pydftracer's get_time()).");

  // -------------------------------------------------------------- strings
  m.def(
      "intern",
      [](nb::handle s) {
        dft_id id = intern_str(s.ptr());
        if (id == 0 && PyErr_Occurred()) throw nb::python_error();
        return id;
      },
      nb::arg("s").none(), "Id of a str in the core's string table (cached).");
  m.def(
      "name_ref",
      [](nb::handle s) -> nb::object {
        if (!PyUnicode_Check(s.ptr()))
          throw nb::type_error((std::string("dftracer: event name must be a str, got ") +
                                Py_TYPE(s.ptr())->tp_name).c_str());
        const char* utf8 = nullptr;
        Py_ssize_t len = 0;
        if (dft_id id = intern_str_bounded(s.ptr(), &utf8, &len)) return nb::int_(id);
        return nb::borrow(s);
      },
      nb::arg("s").none(),
      "For a name or key that may be new on every call: its id while the string table is under "
      "DFTRACER_INTERN_CAP, else the str itself (Region._record copies it into each event).");
  m.def(
      "string",
      [](uint32_t id) -> std::optional<std::string> {
        size_t len = 0;
        const char* s = dft_string(id, &len);
        if (s == nullptr) return std::nullopt;
        return std::string(s, len);
      },
      nb::arg("id"), "The interned string of an id, or None.");

  // --------------------------------------------------------------- events
  m.def(
      "log_event",
      [](nb::handle name, nb::handle cat, nb::handle start_us, nb::handle dur_us, nb::handle args) {
        uint64_t start = us_to_ns(start_us, "start_time");
        uint64_t dur = us_to_ns(dur_us, "duration");
        log_event_ns(name, cat, start, dur, args);
      },
      nb::arg("name").none(), nb::arg("cat").none(), nb::arg("start_us").none(), nb::arg("duration_us").none(),
      nb::arg("args").none() = nb::none(),
      "Records a complete event; start and duration in microseconds (int or float).");
  m.def(
      "log_event_ns",
      [](nb::handle name, nb::handle cat, uint64_t start_ns, uint64_t dur_ns, nb::handle args) {
        log_event_ns(name, cat, start_ns, dur_ns, args);
      },
      nb::arg("name").none(), nb::arg("cat").none(), nb::arg("start_ns"), nb::arg("duration_ns"),
      nb::arg("args").none() = nb::none(),
      "Records a complete event; start and duration in integer nanoseconds.");
  m.def("count_skipped", &count_skipped_call,
        "Counts a recording call skipped while tracing is off (after finalize: events_after_finalize).");
  m.def(
      "record_ticks",
      [](uint32_t name_id, uint32_t cat_id, uint64_t t0, uint64_t t1, nb::handle args) {
        if (!dft_enabled()) return count_skipped_call();
        if (!args.is_valid() || args.is_none()) {
          dft_complete_ticks(name_id, cat_id, t0, t1, nullptr, 0);
          return;
        }
        ArgList list;
        list.add_mapping(args.ptr());
        dft_complete_ticks(name_id, cat_id, t0, t1, list.data(), list.size());
      },
      nb::arg("name_id"), nb::arg("cat_id"), nb::arg("t0"), nb::arg("t1"),
      nb::arg("args").none() = nb::none(),
      "Records a complete event from interned ids and dft_ticks() values.");
  m.def(
      "instant",
      [](nb::handle name, nb::handle cat, nb::handle args) {
        if (!dft_enabled()) return count_skipped_call();
        if (!PyUnicode_Check(name.ptr())) checked_intern(name, "name");  // raises its TypeError
        const char* name_utf8 = nullptr;  // bounded, as log_event's
        Py_ssize_t name_len = 0;
        dft_id name_id = intern_str_bounded(name.ptr(), &name_utf8, &name_len);
        dft_id cat_id = checked_intern(cat, "cat");
        ArgList list;
        if (args.is_valid() && !args.is_none()) list.add_mapping(args.ptr());
        if (name_id != 0)
          dft_instant(name_id, cat_id, list.data(), list.size());
        else
          dft_instant_named(name_utf8, static_cast<size_t>(name_len), cat_id, list.data(), list.size());
      },
      nb::arg("name").none(), nb::arg("cat").none(), nb::arg("args").none() = nb::none(),
      "Records an instant event at now.");
  m.def(
      "metadata", [](nb::handle key, nb::handle value) { key_value_metadata(dft_metadata_len, key, value); },
      nb::arg("key").none(), nb::arg("value").none(),
      "Records a metadata event named `key`: {name: key, value: str(value)}.");
  m.def(
      "custom_metadata",
      [](nb::handle key, nb::handle value) { key_value_metadata(dft_custom_metadata_len, key, value); },
      nb::arg("key").none(), nb::arg("value").none(),
      "pydftracer's log_metadata_event: a metadata event named \"CM\", args {name: key, value: str(value)}.");
  m.def(
      "hash_metadata",
      [](const std::string& kind, const std::string& value) {
        return dft_hash_metadata(kind.c_str(), value.c_str());
      },
      nb::arg("kind"), nb::arg("value"), "FH/SH-style metadata event; returns the hash.");
  m.def("set_thread_name", [](const std::string& name) { dft_set_thread_name(name.c_str()); },
        nb::arg("name"), "Names the calling thread in the trace.");
  m.def("metadata_int", [](const std::string& key, int64_t value) { dft_metadata_i64(key.c_str(), value); },
        nb::arg("key"), nb::arg("value"),
        "Records a metadata event named `key` whose value is a JSON number (dft_metadata_i64).");
  m.def("set_process_name", [](const std::string& name) { dft_set_process_name(name.c_str()); },
        nb::arg("name"), "Writes the process's display name again (dft_set_process_name).");
  m.def("warn", [](const std::string& msg) { dft_warn(msg.c_str()); },
        "The tracer's diagnostics channel (dft_warn): one stderr line, "
        "\"[dftracer] warning: <msg>\", subject to DFTRACER_LOG_LEVEL.");
  m.def("stderr_verified", []() { return dft_stderr_verified() != 0; },
        "Whether descriptor 2 names the program's verified stderr (dft_stderr_verified).");
  m.def("pid", []() { return dft_pid(); }, "Process id as written in events.");
  m.def("tid", []() { return dft_tid(); }, "Thread id as written in events.");
}

}  // namespace dft_py
