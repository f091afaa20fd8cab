/*
 * dftracer: C API of the tracing core.
 *
 * One tracing session per process. Every entry point (this C API, the C++ macros in
 * dftracer.hpp, the Python extension, the LibTorch observer) links the same
 * shared core library `libdftracer_core.so`, so a process has one set of
 * buffers, one writer thread and one trace file.
 *
 * Hot path contract: dft_complete*, dft_ticks and dft_region_end take no
 * lock, allocate nothing, format nothing and make no syscall; they copy a
 * fixed-size binary record into the calling thread's buffer. All JSON is
 * produced later by the writer thread. With tracing off (DFTRACER_ENABLE
 * not 1 and no dft_init_opt_in) every call returns after one relaxed load.
 *
 * This header is hermetic: it needs only <stddef.h> and <stdint.h>.
 */
#ifndef DFTRACER_DFTRACER_H_
#define DFTRACER_DFTRACER_H_

#include <stddef.h>
#include <stdint.h>

#if defined(_WIN32)
#define DFT_API
#else
#define DFT_API __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- lifecycle */

/* Starts tracing. `log_file` is the path prefix of the trace file (the file is
 * `<log_file>-<app>-<pid>.pfw[.gz]`; a prefix that is a directory -- ending in
 * '/' or existing -- gets `dftracer` inside it); NULL or "" takes
 * DFTRACER_LOG_FILE, then "./dftracer". The file is always a new one: when
 * that name exists (another process given the same process_id, a reused
 * pid, a re-init, a symlink) it is left untouched and the first free
 * `<...>-<pid>-<n>.pfw[.gz]` is created instead; dft_trace_path() says which.
 * `data_dir` is recorded as DFTracer's DFTRACER_DATA_DIR (the
 * directories whose I/O is of interest); NULL takes the environment.
 * `process_id` < 0 means getpid(). Other settings come from the environment.
 * Returns 0 when tracing is on after the call (also when it already was),
 * -1 when the trace file cannot be created (one warning is printed; every
 * later call is then a no-op until the next successful dft_init), 1 when
 * tracing stays off: as under pydftracer, dft_init traces only when
 * DFTRACER_ENABLE is exactly "1", so a program keeps its init call and the
 * environment switches tracing. Nothing is started then, and no file made. */
DFT_API int dft_init(const char* log_file, const char* data_dir, int64_t process_id);

/* dft_init for a program that wants tracing without the environment (the
 * explicit opt-in; Python: initialize_log(..., enable=True)): traces when
 * DFTRACER_ENABLE is unset or "1". Any other value of DFTRACER_ENABLE ("0",
 * "true", ...) still keeps tracing off and returns 1: the user's kill switch
 * wins over the program. Otherwise returns as dft_init. */
DFT_API int dft_init_opt_in(const char* log_file, const char* data_dir, int64_t process_id);

/* Tracing goes on in a file named from `log_file` (a prefix, as for
 * dft_init; NULL: DFTRACER_LOG_FILE): the current trace file and its .idx
 * are renamed (hard link, then unlink), so every event already recorded
 * stays in the one file. For initialize_log() after DFTRACER_ENABLE=1
 * started tracing on import. 0 on success; -1 when tracing is off or the
 * file cannot be renamed (another file system, say), nothing changed then. */
DFT_API int dft_relocate(const char* log_file);

/* DFTRACER_ENABLE as the core reads it: 1 when exactly "1", 0 when set to
 * anything else (tracing off, even for dft_init_opt_in), -1 when unset
 * (only dft_init_opt_in starts tracing). */
DFT_API int dft_env_enable(void);

/* Starts tracing if DFTRACER_ENABLE=1 (read once per process). Returns 1 when
 * tracing is on after the call, 0 otherwise. Called by the Python package on
 * import and by the LD_PRELOAD shim; a C/C++ program may call it itself. */
DFT_API int dft_init_from_env(void);

/* Flushes everything recorded, writes the `end` event and closes the file.
 * Idempotent. Also run at normal exit and on SIGTERM/SIGINT (also SIGHUP,
 * SIGQUIT, SIGUSR1, SIGUSR2, SIGABRT and the faults SIGSEGV, SIGBUS, SIGFPE,
 * SIGILL) when that signal would have killed the process. After it, recording calls are counted
 * no-ops until the next dft_init. */
DFT_API void dft_finalize(void);

/* 1 while tracing is on. One relaxed atomic load. */
DFT_API int dft_enabled(void);

/* Path of the trace file being written, or NULL when tracing is off. The
 * string stays valid until the next dft_init. */
DFT_API const char* dft_trace_path(void);

/* The <prefix> the trace file's name was built from (DFTRACER_LOG_FILE or
 * dft_init's log_file, as given), or NULL when tracing is off. Valid until
 * the next dft_init. */
DFT_API const char* dft_trace_prefix(void);

/* Builds a trace file name, "<prefix>-<app>-<pid>.pfw" (".pfw.gz" when
 * compress != 0), the way the core names its own files ("<prefix>/dftracer-..."
 * when the prefix is a directory; the core adds "-<n>" after the pid when the
 * name is taken, so the file of this process is dft_trace_path()). Writes at most `cap`
 * bytes, NUL included, to `out` (which may be NULL when cap is 0) and
 * returns the name's full length, as snprintf does; -1 when prefix or app is
 * NULL. Use it (or dft_trace_prefix) instead of taking a name apart: an app
 * name may itself contain '-'. */
DFT_API int dft_trace_file_name(const char* prefix, const char* app, int64_t pid, int compress, char* out,
                                size_t cap);

/* Asks the writer to write out everything recorded so far and waits until it
 * is in the file (a gzip member is complete). Not for the hot path. */
DFT_API void dft_flush(void);

/* Counters since the last dft_init (or process start). */
typedef struct dft_stats {
  uint64_t events_recorded;     /* accepted into thread buffers            */
  uint64_t events_written;      /* formatted into the file                 */
  uint64_t events_dropped;      /* lost to the `drop` policy or overflow   */
  uint64_t events_after_finalize; /* recording calls made while off after a finalize */
  uint64_t bytes_written;       /* bytes written to the trace file         */
  uint64_t pool_bytes_in_use;   /* buffer memory now held                  */
  uint64_t pool_bytes_peak;     /* most buffer memory ever held            */
  uint64_t pool_bytes_cap;      /* DFTRACER_BUFFER_SIZE                    */
  uint64_t names_inline;        /* names and arg keys copied into their
                                   record (DFTRACER_INTERN_CAP reached)     */
} dft_stats;
DFT_API void dft_get_stats(dft_stats* out);

/* -------------------------------------------------------------------- clock */

/* Raw fast clock (TSC where it is invariant, else CLOCK_MONOTONIC ns).
 * Record with it; the writer converts to epoch time. */
DFT_API uint64_t dft_ticks(void);

/* Nanoseconds since the Unix epoch, derived from the monotonic clock anchored
 * once at process start (so it never jumps with NTP). */
DFT_API uint64_t dft_now_ns(void);

/* Converts a dft_ticks() value to nanoseconds since the epoch. */
DFT_API uint64_t dft_ticks_to_ns(uint64_t ticks);

/* ------------------------------------------------- inline hot-path helpers */

/* dft_enabled_inline() and dft_ticks_inline() answer exactly as
 * dft_enabled() and dft_ticks() do, without a call: they read two words the
 * core publishes (and `rdtsc` in place when the core's clock is the TSC).
 * For code that calls them on every traced operation -- the Python
 * extension, the LibTorch observer -- where the two out-of-line calls were
 * a measurable share of the per-event cost. Read-only for callers. */
typedef struct dft_hot_state {
  int enabled;   /* == dft_enabled() */
  int tsc;       /* 1: dft_ticks() is the TSC; 0: not known yet, or another clock */
  int finalized; /* 1 from dft_finalize to the next dft_init: recording calls
                    are counted no-ops then (dft_stats.events_after_finalize) */
  int session;   /* changes each time a trace file is started (init, a forked
                    child's own file); 0 before the first. Per-file "written
                    once" bookkeeping (the I/O hooks' FH events) keys on it */
} dft_hot_state;
DFT_API extern dft_hot_state dft_hot;

#if defined(__GNUC__) || defined(__clang__)
static inline int dft_enabled_inline(void) { return __atomic_load_n(&dft_hot.enabled, __ATOMIC_RELAXED); }

static inline uint64_t dft_ticks_inline(void) {
#if defined(__x86_64__) || defined(__i386__)
  if (__atomic_load_n(&dft_hot.tsc, __ATOMIC_RELAXED)) return __builtin_ia32_rdtsc();
#endif
  return dft_ticks(); /* the first call also decides the clock */
}
#else /* other compilers: the calls themselves */
static inline int dft_enabled_inline(void) { return dft_enabled(); }
static inline uint64_t dft_ticks_inline(void) { return dft_ticks(); }
#endif

/* ------------------------------------------------------------------ strings */

/* Interned string id; 0 means "no string". */
typedef uint32_t dft_id;

/* Interns `s` (`len` bytes, need not be NUL-terminated; invalid UTF-8 is
 * replaced when written) and returns its id, the same for equal strings
 * for the life of the process (across dft_init/dft_finalize). Thread-safe;
 * lookups of known strings take no lock, the first sight of a string does.
 * Intern once and keep the id: names, categories, arg keys. Works (and is
 * cheap) whether tracing is on or not. */
DFT_API dft_id dft_intern(const char* s, size_t len);
DFT_API dft_id dft_intern_cstr(const char* s);

/* For names that may be new on every call (a per-item region, a user's
 * log_event): the id when `s` is interned, else interns it while the table
 * holds fewer than DFTRACER_INTERN_CAP strings (default 65536), else 0 --
 * record such a name with dft_complete_*_named / dft_instant_named, which
 * copy it into the record, and such an arg key as a DFT_ARG_KEY arg. */
DFT_API dft_id dft_intern_bounded(const char* s, size_t len);

/* Returns the interned string (NUL-terminated) for an id, or NULL. */
DFT_API const char* dft_string(dft_id id, size_t* len);

/* --------------------------------------------------------------------- args */

typedef enum dft_arg_type {
  DFT_ARG_INT = 1,    /* v.i  -> 123                                    */
  DFT_ARG_UINT = 2,   /* v.u  -> 123                                    */
  DFT_ARG_DOUBLE = 3, /* v.d  -> 1.5 (NaN/inf written as null)          */
  DFT_ARG_BOOL = 4,   /* v.i  -> true / false                           */
  DFT_ARG_STR = 5,    /* v.id -> "interned string", JSON-escaped        */
  DFT_ARG_BYTES = 6,  /* v.str -> "copied string", JSON-escaped; copied
                         into the record (at most DFT_MAX_INLINE_STR bytes,
                         longer is cut on a UTF-8 boundary)             */
  DFT_ARG_HASH = 7,   /* v.u  -> "16 hex digits"                        */
  DFT_ARG_JSON = 8,   /* v.id -> interned *fragment* of JSON members,
                         written as is inside "args":{...}: for example
                         `"graph":3,"node":17,"module":"encoder.0"`.
                         The key is ignored. The fragment must be valid
                         JSON members; dft_intern_json_fragment checks. */
  DFT_ARG_KEY = 9     /* v.str -> the KEY of the next arg, copied into the
                         record like DFT_ARG_BYTES (its own `key` and the
                         next arg's are ignored): for keys that may be new
                         on every call once dft_intern_bounded refuses
                         them. Writes nothing by itself; last in the list
                         or before a DFT_ARG_JSON it is dropped. Counted
                         in dft_stats.names_inline. */
} dft_arg_type;

#define DFT_MAX_INLINE_STR 2048

typedef struct dft_arg {
  dft_id key;          /* interned key (ignored for DFT_ARG_JSON); "hhash" is
                          the core's own, so a user's is written "user_hhash" */
  uint32_t type;       /* dft_arg_type */
  union {
    int64_t i;
    uint64_t u;
    double d;
    dft_id id;
    struct {
      const char* ptr;
      uint32_t len;
    } str;
  } v;
} dft_arg;

/* Interns a JSON-members fragment after checking it parses as the inside of
 * an object (`"k":v,...`; "" is the empty fragment, blanks alone are not).
 * Returns 0 (and warns once) when it does not. A top-level member named
 * "hhash" -- every event's host hash, written by the core -- is interned
 * renamed "user_hhash", as an arg with that key is written (no key twice). */
DFT_API dft_id dft_intern_json_fragment(const char* s, size_t len);

/* ------------------------------------------------------------------- events */

/* Records a complete ("ph":"X") event. Times are dft_ticks() values.
 * `args` may be NULL when `nargs` is 0; at most DFT_MAX_ARGS args. */
#define DFT_MAX_ARGS 64
DFT_API void dft_complete_ticks(dft_id name, dft_id cat, uint64_t start_ticks,
                                uint64_t end_ticks, const dft_arg* args, uint32_t nargs);

/* dft_complete_ticks for args that are all numbers, hashes or ids -- none of
 * type DFT_ARG_BYTES or DFT_ARG_KEY (those would be written as garbage):
 * one slot per arg, no per-arg type checks. For callers whose every event
 * is such, right after a system call (the I/O hooks), where each branch and
 * instruction of the record path costs several times what it does in a
 * loop. Like every recording call, it leaves errno as it found it. */
DFT_API void dft_complete_ticks_plain(dft_id name, dft_id cat, uint64_t start_ticks,
                                      uint64_t end_ticks, const dft_arg* args, uint32_t nargs);

/* Same with start and duration given in nanoseconds since the epoch (e.g.
 * from dft_now_ns, or a caller's own clock). */
DFT_API void dft_complete_ns(dft_id name, dft_id cat, uint64_t start_ns, uint64_t dur_ns,
                             const dft_arg* args, uint32_t nargs);

/* The same with the name given as bytes (`len` bytes, at most
 * DFT_MAX_INLINE_STR kept): interned while the table is under
 * DFTRACER_INTERN_CAP (then exactly dft_complete_ticks / _ns), else copied
 * into the record, so memory stays bounded however many distinct names a
 * program makes; such events are counted in dft_stats.names_inline. */
DFT_API void dft_complete_ticks_named(const char* name, size_t len, dft_id cat, uint64_t start_ticks,
                                      uint64_t end_ticks, const dft_arg* args, uint32_t nargs);
DFT_API void dft_complete_ns_named(const char* name, size_t len, dft_id cat, uint64_t start_ns,
                                   uint64_t dur_ns, const dft_arg* args, uint32_t nargs);

/* Region helpers: `dft_region_begin` returns dft_ticks(); `dft_region_end`
 * records the event from then to now. */
DFT_API uint64_t dft_region_begin(void);
DFT_API void dft_region_end(dft_id name, dft_id cat, uint64_t begin_ticks,
                            const dft_arg* args, uint32_t nargs);

/* SIGTERM/SIGINT taken by the core (their disposition was the default): the
 * tracer's signal thread calls `hook(sig)` before it finalizes the trace and
 * the signal ends the process, so an API that keeps regions open -- a
 * `train_step` blocked in a collective when torchrun terminates the ranks --
 * can write them with dft_record_cut. The hook runs on that thread, not in a
 * signal handler, while the program's threads run or wait as they were: it
 * must take no lock the program may hold (Python's GIL among them). NULL
 * removes it. */
typedef void (*dft_signal_hook)(int sig);
DFT_API void dft_set_signal_hook(dft_signal_hook hook);
/* From a dft_signal_hook: a complete event from `start_ticks` to now, written
 * as the main thread's (the thread that started tracing: its tid), with the
 * arg "cut": true after `args`. Nothing when `start_ticks` is before the
 * trace began (a forked child's copy of a region its parent had open). */
DFT_API void dft_record_cut(dft_id name, dft_id cat, uint64_t start_ticks, const dft_arg* args, uint32_t nargs);

/* Records an instant ("ph":"i") event at now. */
DFT_API void dft_instant(dft_id name, dft_id cat, const dft_arg* args, uint32_t nargs);
/* The same at the given tick time (a dft_ticks() value the caller already read). */
DFT_API void dft_instant_ticks(dft_id name, dft_id cat, uint64_t at_ticks, const dft_arg* args, uint32_t nargs);
/* The same with the name given as bytes, bounded like dft_complete_ticks_named. */
DFT_API void dft_instant_named(const char* name, size_t len, dft_id cat, const dft_arg* args, uint32_t nargs);

/* Records a counter ("ph":"C") event at the given tick time: each arg is
 * one series of the counter track `name` (Perfetto draws a graph per arg
 * key), numbers only (DFT_ARG_INT/UINT/DOUBLE). The memory capture writes
 * the bytes allocated per device this way. Hot-path rules as dft_complete. */
DFT_API void dft_counter_ticks(dft_id name, dft_id cat, uint64_t at_ticks, const dft_arg* args, uint32_t nargs);

/* Records a flow event ("ph":"s" when `start` is 1, else "ph":"f" with
 * "bp":"e") with the given flow id, at the given tick time: Perfetto draws an
 * arrow from the slice enclosing the "s" to the slice enclosing the "f". */
DFT_API void dft_flow(dft_id name, dft_id cat, uint64_t flow_id, int start, uint64_t at_ticks);

/* Records a metadata ("ph":"M") event named by its key: name `key`, cat
 * "dftracer", args {"name": key, "value": value} (the capture sources' own
 * metadata, e.g. "dynamo.graph"). */
DFT_API void dft_metadata(const char* key, const char* value);

/* The same with lengths: every byte is kept (an embedded NUL is written as
 * \u0000, invalid UTF-8 replaced), and a value longer than
 * DFT_MAX_INLINE_STR is written whole, never cut. */
DFT_API void dft_metadata_len(const char* key, size_t key_len, const char* value, size_t value_len);

/* pydftracer's log_metadata_event(key, value), as DFTracer writes it: a
 * metadata event named "CM" (custom metadata), cat "dftracer", args
 * {"name": key, "value": value}. Lengths and bytes as dft_metadata_len. */
DFT_API void dft_custom_metadata_len(const char* key, size_t key_len, const char* value, size_t value_len);

/* Records a metadata event that names a string and its 64-bit hash,
 * DFTracer's FH/SH convention: {"name": value, "value": "<hash>"}. Returns
 * the hash (xxh-style 64-bit, stable across processes and hosts). */
DFT_API uint64_t dft_hash_metadata(const char* kind, const char* value);
/* The same record with a hash the caller already has: the I/O library names
 * a descriptor a forked child inherited (its fhash, from the parent) by the
 * kernel's name for it, which may be spelled differently. */
DFT_API void dft_hash_metadata_as(const char* kind, const char* value, uint64_t hash);

/* 64-bit hash of a string as used in HH/FH/SH events. */
DFT_API uint64_t dft_hash64(const char* s, size_t len);

/* Sets the name shown for the calling thread (a "thread_name" metadata event). */
DFT_API void dft_set_thread_name(const char* name);

/* A metadata event named by its key whose value is a JSON number:
 * {"name": key, "value": 3} (the rank keys: "rank",
 * "world_size", "clock_offset_ns", ...). */
DFT_API void dft_metadata_i64(const char* key, int64_t value);

/* Writes the process's display name again (a "process_name" metadata event,
 * args {"name": name}); readers take a pid's last one. Used when a process
 * learns its rank after it started tracing: "rank 3 (pid 1234)". */
DFT_API void dft_set_process_name(const char* name);

/* The tracer's one diagnostics channel: writes `message` (one line, no
 * trailing newline needed) to stderr as "[dftracer] warning: <message>",
 * subject to DFTRACER_LOG_LEVEL. Used by the core, every capture source and
 * the Python package, so the tracer's warnings all look alike. Never on a
 * hot path. */
DFT_API void dft_warn(const char* message);
/* The program put a file on descriptor 2 on purpose (dup2/dup3 onto 2, or
 * dup returning 2; the I/O library's hooks call this): the tracer's messages
 * go there from now on. They go to descriptor 2 only while it names the
 * file it named when tracing started or at the last such call, and are
 * dropped otherwise: a program that closed 0-2 and opened its data files
 * gets them as 0-2, and a warning must never land in them. errno unchanged. */
DFT_API void dft_stderr_replaced(void);
/* 1 when descriptor 2 names the program's verified stderr (above), so a
 * warning written now reaches it; 0 when it would be dropped. errno unchanged. */
DFT_API int dft_stderr_verified(void);

/* For the I/O library: `hook` runs first thing on each thread the tracer
 * starts for itself (the writer, the signal thread), so the I/O hooks can
 * mark that thread as never traced. Those threads keep a descriptor table
 * of their own (docs/DESIGN.md), so a descriptor number there may name a
 * different file than the same number in the program's table. */
typedef void (*dft_thread_hook)(void);
DFT_API void dft_set_tracer_thread_hook(dft_thread_hook hook);

/* For the I/O library's sigaction/signal hooks: whether `handler` is the
 * core's handler of SIGTERM, SIGINT and the other signals it takes (installed
 * where the disposition was the default, to finalize the trace before the
 * process dies of the signal; an SA_SIGINFO handler, passed here as a plain
 * pointer), which the hooks report to the program as SIG_DFL.
 * Async-signal-safe. */
DFT_API int dft_is_tracer_signal_handler(void (*handler)(int));
/* Whether the core takes `sig` (one of those signals) where the program
 * asks for SIG_DFL: taken at start, or one the program had a handler for
 * then, while the core's signal thread runs; if so, fills `action` (a
 * struct sigaction *) with the core's action, which the hooks set in place
 * of SIG_DFL. Async-signal-safe. */
struct sigaction;
DFT_API int dft_tracer_signal_action(int sig, struct sigaction* action);

/* For the I/O library's _exit/_Exit and exec* hooks: the process image ends
 * without exit(), so atexit never finalizes. dft_finalize_before_exit
 * finalizes and returns when the file is complete (or after a deadline); it
 * may be called from a signal handler (the work is done on the core's signal
 * thread where there is one). dft_suspend_for_exec finalizes before an exec;
 * dft_resume_after_failed_exec starts tracing again, with the same settings,
 * if the exec returned. Both remove a file in which nothing was recorded
 * (a forked child that only exec'd). Never from a vfork child. */
DFT_API void dft_finalize_before_exit(void);
DFT_API void dft_suspend_for_exec(void);
DFT_API void dft_resume_after_failed_exec(void);
/* For the I/O library's setuid/setgid/setgroups/unshare/setns hooks: glibc
 * applies a credential change to every thread (and aborts when one of the
 * tracer's own refuses), and a new user namespace needs a single-threaded
 * process. Finalizes the trace (a file with nothing recorded is removed),
 * gives the signals it took their default action back and ends the tracer's
 * threads: the process runs on as untraced. Never from a vfork child. */
DFT_API void dft_stop_tracing_threads(void);

/* 1 when every thread of the tracer's has the calling thread's capability
 * sets (a credential change then goes through on them as on the caller,
 * and nothing needs stopping), else 0. */
DFT_API int dft_tracer_threads_share_capabilities(void);

/* --------------------------------------------------- device capture sources */

/* Launch scopes: how the op and kernel events of the capture sources (the
 * LibTorch observer, the torch.compile capture's marks, Inductor's kernel
 * marks) are tied to the device work they launch. A device capture source
 * (libdftracer_cuda: CUPTI's external correlation ids) sets a scope while it
 * records; around each traced op or kernel call the capture sources call
 * push() -- which returns the id it pushed, > 0 and < 2^53, written as the
 * event's "External id" arg -- and pop() when the call ends, on the same
 * thread. NULL (the default, and whenever no device source runs): nothing is
 * pushed and the capture sources pay one load and one branch per event.
 * The struct must stay valid for the life of the process (a static const).
 * struct_size is sizeof(dft_launch_scope) as the caller compiled it, so a
 * later version can add members at the end: a core reads only the members
 * that both it and the caller know. dft_set_launch_scope returns 0, or -1
 * (and leaves the current scope as it was) for a struct_size below
 * DFT_LAUNCH_SCOPE_MIN_SIZE (a caller that did not set it) or a NULL push or
 * pop; NULL (no scope) is always accepted.
 * before_finalize (optional, NULL for none): the device source's stop. The
 * core clears the scope and calls it once when the program's own thread is
 * about to finalize the trace -- dft_finalize, the exit handler, and before
 * a change of credentials (dft_stop_tracing_threads) -- on that thread,
 * before the trace's last records are drained and with no lock of the
 * core's held, so the source can record its last buffers into the trace
 * there; a second thread finalizing meanwhile waits (up to 10 s) for it to
 * return. Not at SIGTERM/SIGINT or _exit (the core's signal thread
 * finalizes then: it has none of the program's descriptors, and the thread
 * it stands in for may hold a lock the stop needs) nor at exec (a failed
 * exec goes on tracing): there the events of the source's last buffers are
 * lost. A forked child starts with no scope (the device source's threads
 * are the parent's). */
typedef struct dft_launch_scope {
  uint32_t struct_size; /* sizeof(dft_launch_scope): set it first */
  uint64_t (*push)(void);
  void (*pop)(void);
  void (*before_finalize)(void);
} dft_launch_scope;
/* The size of the first version (struct_size, push, pop). */
#define DFT_LAUNCH_SCOPE_MIN_SIZE (offsetof(dft_launch_scope, pop) + sizeof(void (*)(void)))
DFT_API int dft_set_launch_scope(const dft_launch_scope* scope);
DFT_API extern const dft_launch_scope* dft_launch_scope_current;
#if defined(__GNUC__) || defined(__clang__)
static inline const dft_launch_scope* dft_launch_scope_inline(void) {
  return __atomic_load_n(&dft_launch_scope_current, __ATOMIC_ACQUIRE);
}
#else
static inline const dft_launch_scope* dft_launch_scope_inline(void) { return dft_launch_scope_current; }
#endif

/* Events on another track than the calling thread's: a device's timeline
 * (libdftracer_cuda: pid = 0x40000000 | the process's pid << 8 | the device,
 * no real process's; tid = its stream), or a
 * host thread a device source reports for (CUPTI's launch records). For
 * device capture sources, from their own thread (never a recording one):
 * these copy into that thread's buffer like any record and the writer
 * drains them into the process's trace file. Times are ns since the epoch
 * (dft_now_ns's clock); the name is bounded as for dft_complete_ns_named;
 * pid and tid must fit 32 bits. */
DFT_API void dft_complete_ns_on_track(int64_t pid, int64_t tid, const char* name, size_t len, dft_id cat,
                                      uint64_t start_ns, uint64_t dur_ns, const dft_arg* args, uint32_t nargs);
/* A flow point ("ph":"s" when start is 1, else "f" with "bp":"e") at `at_ns`. */
DFT_API void dft_flow_ns_on_track(int64_t pid, int64_t tid, dft_id name, dft_id cat, uint64_t flow_id, int start,
                                  uint64_t at_ns);
/* Names a track: tid < 0, the process `pid` ("process_name"); else the
 * thread `tid` of `pid` ("thread_name"). */
DFT_API void dft_name_track(int64_t pid, int64_t tid, const char* name);

/* Process/thread ids as written in events. */
DFT_API int64_t dft_pid(void);
DFT_API int64_t dft_tid(void);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* DFTRACER_DFTRACER_H_ */
