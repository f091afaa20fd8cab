/*
 * munmap has no descriptor, so it is tied to a file through the address a
 * traced mmap returned: a fixed open-addressing table of (address, fhash),
 * claimed and released with compare-and-swap (no lock, no allocation:
 * munmap is called from allocators and signal-safe code). A mapping the
 * table has no room for (more than 64 probes) is not remembered and its
 * munmap is not traced. Only a munmap starting at the mapping's start
 * address is matched; a mapping removed another way (mremap, MAP_FIXED over
 * it, libc's own unhooked munmap) leaves a stale entry that the next traced
 * mmap at that address replaces.
 */
#ifndef DFTRACER_IO_MAPPING_TABLE_H_
#define DFTRACER_IO_MAPPING_TABLE_H_

#include <stdint.h>

#define DFTIO_HIDDEN_MT __attribute__((visibility("hidden")))

#ifdef __cplusplus
extern "C" {
#endif

/* Entries in the table now: munmap skips the lookup while it is 0. */
DFTIO_HIDDEN_MT extern unsigned dftio_maps_live;

/* Remembers that the mapping at `addr` is of the file `fhash`. */
DFTIO_HIDDEN_MT void dftio_map_remember(const void* addr, uint64_t fhash);

/* Forgets the mapping at `addr`; its fhash, or 0 when none was remembered. */
DFTIO_HIDDEN_MT uint64_t dftio_map_take(const void* addr);

static inline uint64_t dftio_map_forget(const void* addr) {
  return __atomic_load_n(&dftio_maps_live, __ATOMIC_RELAXED) ? dftio_map_take(addr) : 0;
}

#ifdef __cplusplus
}
#endif

#endif /* DFTRACER_IO_MAPPING_TABLE_H_ */
