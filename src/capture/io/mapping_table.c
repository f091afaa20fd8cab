/* The mapping table (mapping_table.h). */
#include "mapping_table.h"

#include <stddef.h>

#define SLOTS 4096 /* a power of two */
#define MAX_PROBES 64
#define FREE ((uintptr_t)0)
#define GONE ((uintptr_t)1) /* tombstone: never a page-aligned address */

struct slot {
  uintptr_t addr;
  uint64_t fhash;
};

unsigned dftio_maps_live;
static struct slot g_slots[SLOTS];

static size_t home(uintptr_t a) { return (size_t)((a >> 12) * 0x9E3779B97F4A7C15ull >> 52) & (SLOTS - 1); }

void dftio_map_remember(const void* addr, uint64_t fhash) {
  uintptr_t a = (uintptr_t)addr;
  if (a <= GONE || fhash == 0) return;
  size_t i = home(a);
  for (int p = 0; p < MAX_PROBES; ++p, i = (i + 1) & (SLOTS - 1)) {
    struct slot* s = &g_slots[i];
    uintptr_t cur = __atomic_load_n(&s->addr, __ATOMIC_ACQUIRE);
    if (cur == a) { /* a stale entry for a reused address: take it over */
      __atomic_store_n(&s->fhash, fhash, __ATOMIC_RELEASE);
      return;
    }
    if ((cur == FREE || cur == GONE) && __atomic_compare_exchange_n(&s->addr, &cur, a, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      __atomic_store_n(&s->fhash, fhash, __ATOMIC_RELEASE);
      __atomic_add_fetch(&dftio_maps_live, 1, __ATOMIC_RELAXED);
      return;
    }
  }
}

uint64_t dftio_map_take(const void* addr) {
  uintptr_t a = (uintptr_t)addr;
  if (a <= GONE) return 0;
  size_t i = home(a);
  for (int p = 0; p < MAX_PROBES; ++p, i = (i + 1) & (SLOTS - 1)) {
    struct slot* s = &g_slots[i];
    uintptr_t cur = __atomic_load_n(&s->addr, __ATOMIC_ACQUIRE);
    if (cur == FREE) return 0;
    if (cur != a) continue;
    uint64_t h = __atomic_exchange_n(&s->fhash, 0, __ATOMIC_ACQ_REL);
    if (__atomic_compare_exchange_n(&s->addr, &cur, GONE, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
      __atomic_sub_fetch(&dftio_maps_live, 1, __ATOMIC_RELAXED);
    return h;
  }
  return 0;
}
