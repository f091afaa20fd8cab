/*
 * PRELOAD mode (libdftracer_preload.so): LD_PRELOAD puts our definitions of
 * the calls in io_calls.h ahead of libc's for every object of the program
 * and, through the inherited environment, of its children. With
 * DFTRACER_INIT=PRELOAD and DFTRACER_ENABLE=1 the constructor starts
 * tracing and I/O tracing; otherwise every hook is the real call and one
 * load. A forked child keeps the hooks and its inherited descriptors; the
 * core gives it its own file.
 */
#define _GNU_SOURCE 1
#include <ctype.h>
#include <dlfcn.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "dftracer/io.h"
#include "io_runtime.h"

/* Found with dlsym by dft_io_install: FUNCTION mode stands aside. */
__attribute__((visibility("default"))) int dft_io_preload_loaded = 1;

/* Found with dlsym by dft_io_set_data_dir and dft_io_pause_thread: this
 * library's filter and thread marks are the ones its hooks read. */
__attribute__((visibility("default"))) void dft_io_preload_set_data_dir(const char* dirs) { dftio_set_data_dir(dirs); }
__attribute__((visibility("default"))) int dft_io_preload_pause_thread(int paused) { return dftio_pause_thread(paused); }

static int init_is_preload(void) {
  const char* v = getenv("DFTRACER_INIT");
  if (v == NULL) return 0;
  const char* want = "PRELOAD";
  size_t i = 0;
  for (; v[i] != '\0' && want[i] != '\0'; ++i)
    if (toupper((unsigned char)v[i]) != want[i]) return 0;
  return v[i] == '\0' && want[i] == '\0';
}

__attribute__((constructor)) static void dftio_preload_start(void) {
  dftio_busy = 1; /* the core's own start-up I/O (its trace file, /proc) is never an event */
  dftio_resolve_all();
  dftio_resolve_signal_calls();
  dftio_resolve_close_range_calls();
  dftio_resolve_exit_calls();
#if DFTIO_VFORK_HOOK
  __atomic_store_n(&dftio_real_vfork, (pid_t(*)(void))dlsym(RTLD_NEXT, "vfork"), __ATOMIC_RELEASE);
#endif
  /* Before the writer starts: its I/O (in a descriptor table of its own,
   * whose numbers are not the program's) must never be traced. */
  dft_set_tracer_thread_hook(&dftio_mark_tracer_thread);
  int traced = init_is_preload() && dft_init_from_env();
  dftio_busy = 0;
  if (traced) dftio_start();
}
