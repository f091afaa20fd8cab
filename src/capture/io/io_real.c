/*
 * The real functions behind the hooks and the state the hooks share.
 *
 * PRELOAD: our library defines `read`, so the real one is the next
 * definition after it (RTLD_NEXT). FUNCTION: our library defines no libc
 * name, so the real one is what any object would bind to (RTLD_DEFAULT),
 * an allocator's or another interposer's included.
 */
#define _GNU_SOURCE 1
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "io_runtime.h"

uint64_t dftio_fd_hash[DFTIO_MAX_FD];
__thread int dftio_busy __attribute__((tls_model("initial-exec")));
struct dftio_hot_state dftio_hot __attribute__((aligned(64)));

#ifdef DFTIO_PRELOAD
#define DFTIO_LOOKUP RTLD_NEXT
#else
#define DFTIO_LOOKUP RTLD_DEFAULT
#endif

static const char* const k_names[DFTIO_CALL_COUNT] = {
#define DFTIO_NAME(fn) #fn,
    DFTIO_ALL_CALLS(DFTIO_NAME)
#undef DFTIO_NAME
};

static void** slot(enum dftio_call call) { return (void**)&dftio_real + call; }

void* dftio_resolve_named(void** slot, const char* name) {
  void* p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (p == NULL) {
    p = dlsym(DFTIO_LOOKUP, name);
    __atomic_store_n(slot, p, __ATOMIC_RELEASE);
  }
  return p;
}

void* dftio_resolve(enum dftio_call call) { return dftio_resolve_named(slot(call), k_names[call]); }

void dftio_resolve_all(void) {
  for (int c = 0; c < DFTIO_CALL_COUNT; ++c) dftio_resolve((enum dftio_call)c);
}

const char* dftio_call_name(enum dftio_call call) { return k_names[call]; }
