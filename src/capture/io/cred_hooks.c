/*
 * setuid & co., setgroups, unshare and setns, not events: a process that
 * changes its credentials or namespaces runs on as untraced. glibc applies
 * a credential change to every thread of the process and aborts when one
 * refuses (setpriv restores a capability on its own thread only, so the
 * tracer's threads refused: SIGABRT), and a new user namespace needs a
 * single-threaded process (`unshare -U` failed with EINVAL). So before the
 * real call the core finalizes the trace and ends its threads
 * (dft_stop_tracing_threads); the call then finds the process as it would
 * be untraced. Our preload library also leaves LD_PRELOAD: the programs it
 * execs run untraced too, and under the new credentials the dynamic loader
 * may not be allowed to read the library (a uid that cannot enter the
 * installation's directory: ld.so then writes an error into the program's
 * stderr).
 *
 * Without I/O tracing (DFTRACER_DISABLE_IO=1) a credential change keeps
 * tracing where our threads have the caller's capabilities
 * (before_credential_change).
 *
 * Passed straight through in a vfork child and on the tracer's own threads
 * (their unshare(CLONE_FILES) is the core's own), and for an unshare that
 * needs no single thread (no CLONE_NEWUSER, CLONE_THREAD, CLONE_SIGHAND or
 * CLONE_VM).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <grp.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dftracer/dftracer.h"
#include "io_hook.h"

/* LD_PRELOAD without the entries naming our preload library (entries are
 * separated by ':' or blanks, as ld.so reads them); unset when none is left. */
static void drop_our_preload(void) {
  const char* cur = getenv("LD_PRELOAD");
  if (cur == NULL || strstr(cur, "libdftracer_preload") == NULL) return;
  size_t n = strlen(cur);
  char* kept = (char*)malloc(n + 1);
  if (kept == NULL) return;
  size_t k = 0;
  for (const char* p = cur; *p;) {
    size_t len = strcspn(p, ": \t");
    if (len > 0 && !(memmem(p, len, "libdftracer_preload", 19) != NULL)) {
      if (k) kept[k++] = ':';
      memcpy(kept + k, p, len);
      k += len;
    }
    p += len;
    if (*p) ++p;
  }
  kept[k] = 0;
  if (k) setenv("LD_PRELOAD", kept, 1);
  else unsetenv("LD_PRELOAD");
  free(kept);
}

static void before_process_change(void) {
  if (dftio_closes_programs_fds()) dft_stop_tracing_threads();
  drop_our_preload();
}

/* Without I/O tracing (DFTRACER_DISABLE_IO=1: only the process hooks are
 * in) a credential change ends tracing only where glibc could abort: a
 * thread of the tracer's lacks a capability the calling thread has
 * (setpriv's case). With the same capabilities our threads take the change
 * as the caller does (os.setuid(os.getuid()), a root launcher dropping to a
 * user), and the trace goes on, under the new ids. */
static void before_credential_change(void) {
  if (!__atomic_load_n(&dftio_on, __ATOMIC_ACQUIRE) && dftio_closes_programs_fds() &&
      dft_tracer_threads_share_capabilities()) {
    drop_our_preload();
    return;
  }
  before_process_change();
}

/* The hook of `name`: stop the tracer's threads, then the real call. */
#define DFTIO_CRED_HOOK(name, params, args)                                   \
  int DFTIO_HOOK(name) params {                                               \
    static int(*real_) params;                                                \
    int(*fn_) params = (int(*) params)dftio_resolve_named((void**)&real_, #name); \
    if (fn_ == NULL) {                                                        \
      errno = ENOSYS;                                                         \
      return -1;                                                              \
    }                                                                         \
    before_credential_change();                                               \
    return fn_ args;                                                          \
  }

DFTIO_CRED_HOOK(setuid, (uid_t uid), (uid))
DFTIO_CRED_HOOK(setgid, (gid_t gid), (gid))
DFTIO_CRED_HOOK(seteuid, (uid_t uid), (uid))
DFTIO_CRED_HOOK(setegid, (gid_t gid), (gid))
DFTIO_CRED_HOOK(setreuid, (uid_t r, uid_t e), (r, e))
DFTIO_CRED_HOOK(setregid, (gid_t r, gid_t e), (r, e))
DFTIO_CRED_HOOK(setresuid, (uid_t r, uid_t e, uid_t s), (r, e, s))
DFTIO_CRED_HOOK(setresgid, (gid_t r, gid_t e, gid_t s), (r, e, s))
DFTIO_CRED_HOOK(setgroups, (size_t n, const gid_t* list), (n, list))
/* setns may need a single-threaded process (a user or mount namespace). */
int DFTIO_HOOK(setns)(int fd, int nstype) {
  static int (*real)(int, int);
  int (*fn)(int, int) = (int (*)(int, int))dftio_resolve_named((void**)&real, "setns");
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  before_process_change();
  return fn(fd, nstype);
}

int DFTIO_HOOK(unshare)(int flags) {
  static int (*real)(int);
  int (*fn)(int) = (int (*)(int))dftio_resolve_named((void**)&real, "unshare");
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  if (flags & (CLONE_NEWUSER | CLONE_THREAD | CLONE_SIGHAND | CLONE_VM)) before_process_change();
  return fn(flags);
}
