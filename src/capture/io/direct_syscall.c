/*
 * When the traced open and close may issue their system call themselves
 * (direct_syscall.h says why and when), and the pthread_cancel hook that
 * turns that off for good.
 */
#define _GNU_SOURCE 1
#include "direct_syscall.h"

#include <dlfcn.h>
#include <pthread.h>

#include "dftracer/io.h"
#include "io_hook.h"

uint8_t dftio_fd_plain[DFTIO_MAX_FD];
static int g_cancel_seen;

void dftio_allow_direct_calls(void) {
#if DFTIO_DIRECT_SYSCALLS
  /* glibc's own definitions, to compare the resolved real functions with. */
  void* libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
  if (libc == NULL) return;
  unsigned mask = 0;
#define DFTIO_IF_GLIBCS(fn) \
  if (dftio_real.fn != NULL && (void*)dftio_real.fn == dlsym(libc, #fn)) mask |= 1u << DFTIO_CALL_##fn;
  DFTIO_IF_GLIBCS(open)
  DFTIO_IF_GLIBCS(open64)
  DFTIO_IF_GLIBCS(openat)
  DFTIO_IF_GLIBCS(openat64)
  DFTIO_IF_GLIBCS(close)
#undef DFTIO_IF_GLIBCS
  dlclose(libc);
  __atomic_store_n(&dftio_direct_calls, mask, __ATOMIC_SEQ_CST);
  /* A pthread_cancel racing with this store: whichever order, it ends at 0. */
  if (__atomic_load_n(&g_cancel_seen, __ATOMIC_SEQ_CST)) __atomic_store_n(&dftio_direct_calls, 0, __ATOMIC_SEQ_CST);
#endif
}

/* Not an event: it only turns the direct calls off, before the cancel is
 * sent, so no call that starts after it skips glibc's cancellation. */
int DFTIO_HOOK(pthread_cancel)(pthread_t thread) {
  __atomic_store_n(&g_cancel_seen, 1, __ATOMIC_SEQ_CST);
  __atomic_store_n(&dftio_direct_calls, 0, __ATOMIC_SEQ_CST);
  static int (*real)(pthread_t);
  int (*fn)(pthread_t) = (int (*)(pthread_t))dftio_resolve_named((void**)&real, "pthread_cancel");
  if (fn == NULL) return ESRCH; /* cannot happen with glibc >= 2.34 (it is in libc) */
  return fn(thread);
}

__attribute__((visibility("default"))) int dft_io_direct_syscalls(void) {
  unsigned m = __atomic_load_n(&dftio_direct_calls, __ATOMIC_ACQUIRE);
  const unsigned opens =
      1u << DFTIO_CALL_open | 1u << DFTIO_CALL_open64 | 1u << DFTIO_CALL_openat | 1u << DFTIO_CALL_openat64;
  return ((m & opens) == opens ? DFT_IO_DIRECT_OPEN : 0) | (m >> DFTIO_CALL_close & 1 ? DFT_IO_DIRECT_CLOSE : 0);
}
