/*
 * _exit, _Exit and exec*, not events: the process image ends without
 * exit(), so the core's atexit handler never finalizes the trace. dash ends
 * every `sh -c` with _exit, Python's multiprocessing children and torch's
 * DataLoader workers (on their parent's SIGTERM) with os._exit, and every
 * fork+exec replaces the child's image: each used to leave an unfinalized
 * file, its events still in the buffers. So each finalizes first
 * (dft_finalize_before_exit, dft_suspend_for_exec): a file with nothing
 * recorded in it (a forked child that only exec'd) is removed, and an exec
 * that fails starts tracing again.
 *
 * Passed straight through in a vfork child (it runs in its parent's memory:
 * finalizing there would end the parent's trace) and on the tracer's own
 * threads. _exit may run in a signal handler: the core does the work on its
 * signal thread there. The real functions are resolved at start
 * (dftio_resolve_exit_calls), so no hook runs dlsym in a signal handler.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "dftracer/dftracer.h"
#include "io_hook.h"

typedef void (*exit_fn)(int);
typedef int (*execve_fn)(const char*, char* const[], char* const[]);
typedef int (*execv_fn)(const char*, char* const[]);
typedef int (*fexecve_fn)(int, char* const[], char* const[]);
typedef int (*execveat_fn)(int, const char*, char* const[], char* const[], int);

static exit_fn g_exit, g_Exit;
static execve_fn g_execve, g_execvpe;
static execv_fn g_execv, g_execvp;
static fexecve_fn g_fexecve;
static execveat_fn g_execveat;

void dftio_resolve_exit_calls(void) {
  dftio_resolve_named((void**)&g_exit, "_exit");
  dftio_resolve_named((void**)&g_Exit, "_Exit");
  dftio_resolve_named((void**)&g_execve, "execve");
  dftio_resolve_named((void**)&g_execvpe, "execvpe");
  dftio_resolve_named((void**)&g_execv, "execv");
  dftio_resolve_named((void**)&g_execvp, "execvp");
  dftio_resolve_named((void**)&g_fexecve, "fexecve");
  dftio_resolve_named((void**)&g_execveat, "execveat");
}

/* Whether the image ending is this process's own, with a trace to finish:
 * not a vfork child, not a tracer thread, tracing on. */
static int image_is_traced(void) { return dftio_closes_programs_fds() && dft_enabled_inline(); }

static void finish_before_exit(void) {
  if (image_is_traced()) dft_finalize_before_exit();
}

void DFTIO_HOOK(_exit)(int status) {
  finish_before_exit();
  exit_fn fn = (exit_fn)dftio_resolve_named((void**)&g_exit, "_exit");
  if (fn != NULL) fn(status);
  for (;;) syscall(SYS_exit_group, status); /* no libc _exit: cannot happen */
}

void DFTIO_HOOK(_Exit)(int status) {
  finish_before_exit();
  exit_fn fn = (exit_fn)dftio_resolve_named((void**)&g_Exit, "_Exit");
  if (fn != NULL) fn(status);
  for (;;) syscall(SYS_exit_group, status);
}

/* Every exec hook: finalize (if traced), the real call, and if it returned
 * (failed), trace again; errno as the real call left it. */
#define DFTIO_EXEC(slot, name, type, call)                              \
  do {                                                                  \
    type fn_ = (type)dftio_resolve_named((void**)&(slot), name);        \
    if (fn_ == NULL) {                                                  \
      errno = ENOSYS;                                                   \
      return -1;                                                        \
    }                                                                   \
    int traced_ = image_is_traced();                                    \
    if (traced_) dft_suspend_for_exec();                                \
    int r_ = call;                                                      \
    if (traced_) {                                                      \
      int saved_ = errno;                                               \
      dft_resume_after_failed_exec();                                   \
      errno = saved_;                                                   \
    }                                                                   \
    return r_;                                                          \
  } while (0)

int DFTIO_HOOK(execve)(const char* path, char* const argv[], char* const envp[]) {
  DFTIO_EXEC(g_execve, "execve", execve_fn, fn_(path, argv, envp));
}

int DFTIO_HOOK(execvpe)(const char* file, char* const argv[], char* const envp[]) {
  DFTIO_EXEC(g_execvpe, "execvpe", execve_fn, fn_(file, argv, envp));
}

int DFTIO_HOOK(execv)(const char* path, char* const argv[]) {
  DFTIO_EXEC(g_execv, "execv", execv_fn, fn_(path, argv));
}

int DFTIO_HOOK(execvp)(const char* file, char* const argv[]) {
  DFTIO_EXEC(g_execvp, "execvp", execv_fn, fn_(file, argv));
}

int DFTIO_HOOK(fexecve)(int fd, char* const argv[], char* const envp[]) {
  DFTIO_EXEC(g_fexecve, "fexecve", fexecve_fn, fn_(fd, argv, envp));
}

int DFTIO_HOOK(execveat)(int dirfd, const char* path, char* const argv[], char* const envp[], int flags) {
  DFTIO_EXEC(g_execveat, "execveat", execveat_fn, fn_(dirfd, path, argv, envp, flags));
}

/* execl, execlp, execle: the list as an argv on the stack (as glibc builds
 * it), then the vector call above. */
#define DFTIO_COLLECT_ARGS(arg0, ap, argv)       \
  size_t n_ = 1;                                 \
  va_start(ap, arg0);                            \
  while (va_arg(ap, char*) != NULL) ++n_;        \
  va_end(ap);                                    \
  char* argv[n_ + 1];                            \
  argv[0] = (char*)(arg0);                       \
  va_start(ap, arg0);                            \
  for (size_t i_ = 1; i_ <= n_; ++i_) argv[i_] = va_arg(ap, char*)

int DFTIO_HOOK(execl)(const char* path, const char* arg, ...) {
  va_list ap;
  DFTIO_COLLECT_ARGS(arg, ap, argv);
  va_end(ap);
  return DFTIO_HOOK(execv)(path, argv);
}

int DFTIO_HOOK(execlp)(const char* file, const char* arg, ...) {
  va_list ap;
  DFTIO_COLLECT_ARGS(arg, ap, argv);
  va_end(ap);
  return DFTIO_HOOK(execvp)(file, argv);
}

int DFTIO_HOOK(execle)(const char* path, const char* arg, ...) {
  va_list ap;
  DFTIO_COLLECT_ARGS(arg, ap, argv);
  char* const* envp = va_arg(ap, char* const*);
  va_end(ap);
  return DFTIO_HOOK(execve)(path, argv, envp);
}
