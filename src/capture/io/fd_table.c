/*
 * Descriptors at or above DFTIO_MAX_FD (io_runtime.h): a two-level table.
 * The directory has one pointer per page of DFTIO_MAX_FD descriptors and
 * covers every descriptor Linux can hand out (fs.nr_open is at most 2^30).
 * A page is mapped only when a traced descriptor in its range is opened or
 * duplicated (never on read or write), published with compare-and-swap
 * (the loser unmaps its copy) and never freed while the process lives, so
 * a reader never sees a page go away. mmap, not malloc: open is
 * async-signal-safe and the allocator may itself call the hooks.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <sys/mman.h>

#include "io_runtime.h"

#define PAGE_SHIFT __builtin_ctz(DFTIO_MAX_FD)
#define PAGES ((1u << 31) >> PAGE_SHIFT)
#define PAGE_BYTES (sizeof(uint64_t) << PAGE_SHIFT)

_Static_assert((DFTIO_MAX_FD & (DFTIO_MAX_FD - 1)) == 0, "DFTIO_MAX_FD is a power of two");

/* Page 0 is never used: those descriptors are in dftio_fd_hash. */
static uint64_t* g_pages[PAGES];

static uint64_t* page_of(int fd) {
  if (fd < 0) return NULL;
  return __atomic_load_n(&g_pages[(unsigned)fd >> PAGE_SHIFT], __ATOMIC_ACQUIRE);
}

static uint64_t* slot_of(int fd) {
  uint64_t* page = page_of(fd);
  return page != NULL ? &page[(unsigned)fd & (DFTIO_MAX_FD - 1)] : NULL;
}

uint64_t dftio_high_fd_load(int fd) {
  uint64_t* s = slot_of(fd);
  return s != NULL ? __atomic_load_n(s, __ATOMIC_RELAXED) : 0;
}

uint64_t dftio_high_fd_exchange(int fd) {
  uint64_t* s = slot_of(fd);
  return s != NULL ? __atomic_exchange_n(s, 0, __ATOMIC_RELAXED) : 0;
}

void dftio_high_fd_store(int fd, uint64_t h) {
  if (fd < 0) return;
  uint64_t* page = page_of(fd);
  if (page == NULL) {
    if (h == 0) return; /* nothing to forget */
    int saved = errno;   /* the traced call's errno, whatever mmap does */
    void* fresh = DFTIO_REAL(mmap)(NULL, PAGE_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    errno = saved;
    if (fresh == MAP_FAILED) return; /* out of memory: this descriptor stays untraced */
    uint64_t* expected = NULL;
    if (__atomic_compare_exchange_n(&g_pages[(unsigned)fd >> PAGE_SHIFT], &expected, (uint64_t*)fresh, 0,
                                    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      page = (uint64_t*)fresh;
    } else {
      DFTIO_REAL(munmap)(fresh, PAGE_BYTES);
      page = expected;
    }
  }
  __atomic_store_n(&page[(unsigned)fd & (DFTIO_MAX_FD - 1)], h, __ATOMIC_RELAXED);
}

void dftio_untrack_range(unsigned first, unsigned last) {
  if (!dftio_closes_programs_fds() || first > last) return;
  for (unsigned fd = first; fd <= last && fd < DFTIO_MAX_FD; ++fd)
    if (__atomic_load_n(&dftio_fd_hash[fd], __ATOMIC_RELAXED) != 0) __atomic_store_n(&dftio_fd_hash[fd], 0, __ATOMIC_RELAXED);
  if (last < DFTIO_MAX_FD) return;
  if (last > (1u << 31) - 1) last = (1u << 31) - 1;
  for (unsigned p = (first < DFTIO_MAX_FD ? DFTIO_MAX_FD : first) >> PAGE_SHIFT; p <= last >> PAGE_SHIFT; ++p) {
    uint64_t* page = __atomic_load_n(&g_pages[p], __ATOMIC_ACQUIRE);
    if (page == NULL) continue;
    for (unsigned i = 0; i < DFTIO_MAX_FD; ++i) {
      unsigned fd = (p << PAGE_SHIFT) | i;
      if (fd >= first && fd <= last && page[i] != 0) __atomic_store_n(&page[i], 0, __ATOMIC_RELAXED);
    }
  }
}
