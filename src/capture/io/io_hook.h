/*
 * How a hook is written (posix_hooks.c, stdio_hooks.c).
 *
 * The same hook sources build both ways in: for libdftracer_preload.so
 * (DFTIO_PRELOAD) a hook IS the libc symbol (`read`), exported, so the
 * dynamic linker binds every object's calls to it; for libdftracer_io.so
 * (FUNCTION mode) it is `dftio_hook_read`, hidden, and the GOT patcher
 * (got_patch.cc) points the objects' GOT entries at it.
 */
#ifndef DFTRACER_IO_IO_HOOK_H_
#define DFTRACER_IO_IO_HOOK_H_

#include "io_runtime.h"

/* (Visibility comes from the target: C symbols are exported in the preload
 * library, hidden in libdftracer_io; the shared state is hidden in both.) */
#ifdef DFTIO_PRELOAD
#define DFTIO_HOOK(fn) fn
#else
#define DFTIO_HOOK(fn) dftio_hook_##fn
#endif

/* The body of a hook: `h` is the fhash (0: untraced, so just the real call);
 * otherwise `expr` (the real call) is timed, `fill` sets the args of `a_`
 * from the result `r_`, and the event is recorded. */
#define DFTIO_RUN(fn, h, rtype, expr, fill) DFTIO_RUN_TRACED(fn, h, rtype, expr, expr, fill)

/* The same, where the traced call is made another way (`traced_expr`: the
 * direct system call of the open and close hooks, direct_syscall.h) and an
 * untraced one is exactly the real function. */
#define DFTIO_RUN_TRACED(fn, h, rtype, expr, traced_expr, fill) \
  do {                                                         \
    uint64_t h_ = (h);                                         \
    if (!h_) return expr;                                      \
    uint64_t t0_ = dft_ticks_inline();                         \
    rtype r_ = traced_expr;                                    \
    uint64_t t1_ = dft_ticks_inline();                         \
    dftio_args a_ = {0, 0, 0, 0, 0, 0};                        \
    a_.fhash = h_;                                             \
    fill;                                                      \
    dftio_record(DFTIO_CALL_##fn, t0_, t1_, &a_);              \
    return r_;                                                 \
  } while (0)

/* Arg setters for `fill`. */
#define DFTIO_FD(v) (a_.fd = (int64_t)(v), a_.has |= DFTIO_HAS_FD)
#define DFTIO_SIZE(v) (a_.size = (int64_t)(v), a_.has |= DFTIO_HAS_SIZE)
#define DFTIO_RET(v) (a_.ret = (int64_t)(v), a_.has |= DFTIO_HAS_RET)
#define DFTIO_OFFSET(v) (a_.offset = (int64_t)(v), a_.has |= DFTIO_HAS_OFFSET)

#endif /* DFTRACER_IO_IO_HOOK_H_ */
