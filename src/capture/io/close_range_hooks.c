/*
 * close_range and closefrom, not events: they close descriptors the program
 * may have opened traced, so the table forgets them. Without this, a
 * descriptor closed by them (Python's os.closerange) kept its fhash, and the
 * next file to get its number -- outside DFTRACER_DATA_DIR, or a pipe --
 * was recorded under the closed file's name.
 *
 * close_range with CLOSE_RANGE_CLOEXEC closes nothing (it marks the
 * descriptors close-on-exec): nothing to forget. Forgotten before the real
 * call, as close does (a number reused by another thread's open right after
 * must keep its new entry).
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <linux/close_range.h>
#include <unistd.h>

#include "io_hook.h"

typedef int (*close_range_fn)(unsigned, unsigned, int);
typedef void (*closefrom_fn)(int);
static close_range_fn g_close_range;
static closefrom_fn g_closefrom;

/* At start (the preload constructor, dft_io_install); a call before that
 * resolves itself. */
void dftio_resolve_close_range_calls(void) {
  dftio_resolve_named((void**)&g_close_range, "close_range");
  dftio_resolve_named((void**)&g_closefrom, "closefrom");
}

int DFTIO_HOOK(close_range)(unsigned first, unsigned last, int flags) {
  close_range_fn fn = (close_range_fn)dftio_resolve_named((void**)&g_close_range, "close_range");
  if (fn == NULL) {
    errno = ENOSYS;
    return -1;
  }
  if (!(flags & CLOSE_RANGE_CLOEXEC)) dftio_untrack_range(first, last);
  return fn(first, last, flags);
}

void DFTIO_HOOK(closefrom)(int lowfd) {
  closefrom_fn fn = (closefrom_fn)dftio_resolve_named((void**)&g_closefrom, "closefrom");
  if (fn == NULL) return;
  if (lowfd >= 0) dftio_untrack_range((unsigned)lowfd, ~0u);
  fn(lowfd);
}
