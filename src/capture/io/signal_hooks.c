/*
 * sigaction and signal, not events: the core's SIGTERM/SIGINT handler is
 * reported to the program as SIG_DFL, the disposition it replaced, and a
 * program that sets SIG_DFL for one of them gets the core's handler back
 * (its default action, after the trace is finalized).
 *
 * The core installs its handler (finalize the trace, then die of the signal)
 * only where the disposition is the default, so the process ends as it would
 * have. But a program that asks sees a handler it did not set. Under PRELOAD
 * the core starts before the program: CPython then takes SIGINT for somebody
 * else's and installs no KeyboardInterrupt handler (Ctrl-C kills it), and
 * reports both handlers as None, which code that saves and restores a
 * handler cannot put back (multiprocessing's forkserver: TypeError, and its
 * workers die). Reported as SIG_DFL, the program acts as untraced: CPython
 * installs its own SIGINT handler over ours (a KeyboardInterrupt ends in a
 * normal exit, which finalizes), and SIGTERM keeps finalizing, also after a
 * save and restore of its handler (which sets SIG_DFL again).
 *
 * Async-signal-safe as the real calls are: a compare after them.
 */
#define _GNU_SOURCE 1
#include <signal.h>

#include "dftracer/dftracer.h"
#include "io_hook.h"

typedef int (*sigaction_fn)(int, const struct sigaction*, struct sigaction*);
typedef sighandler_t (*signal_fn)(int, sighandler_t);
static sigaction_fn g_sigaction;
static signal_fn g_signal;

/* At start (the preload constructor, dft_io_install), so a first call from
 * a signal handler does not run dlsym; a call before that resolves itself. */
void dftio_resolve_signal_calls(void) {
  dftio_resolve_named((void**)&g_sigaction, "sigaction");
  dftio_resolve_named((void**)&g_signal, "signal");
}

int DFTIO_HOOK(sigaction)(int sig, const struct sigaction* act, struct sigaction* old) {
  sigaction_fn fn = (sigaction_fn)dftio_resolve_named((void**)&g_sigaction, "sigaction");
  if (fn == NULL) return -1; /* no libc sigaction: cannot happen */
  struct sigaction ours;
  if (act != NULL && act->sa_handler == SIG_DFL && !(act->sa_flags & SA_SIGINFO) && dft_tracer_signal_action(sig, &ours))
    act = &ours;
  int r = fn(sig, act, old);
  if (r == 0 && old != NULL && (old->sa_flags & SA_SIGINFO) && dft_is_tracer_signal_handler((sighandler_t)old->sa_sigaction)) {
    old->sa_handler = SIG_DFL;
    old->sa_flags = 0;
    sigemptyset(&old->sa_mask);
  }
  return r;
}

sighandler_t DFTIO_HOOK(signal)(int sig, sighandler_t handler) {
  signal_fn fn = (signal_fn)dftio_resolve_named((void**)&g_signal, "signal");
  if (fn == NULL) return SIG_ERR;
  struct sigaction ours, old;
  if (handler == SIG_DFL && dft_tracer_signal_action(sig, &ours)) {
    if (DFTIO_HOOK(sigaction)(sig, &ours, &old) != 0) return SIG_ERR;
    return old.sa_handler; /* already reported as SIG_DFL if it was ours */
  }
  sighandler_t r = fn(sig, handler);
  return r != SIG_ERR && dft_is_tracer_signal_handler(r) ? SIG_DFL : r;
}
