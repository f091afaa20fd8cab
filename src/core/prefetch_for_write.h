// Software prefetch for write on the record path. A recording thread writes
// its chunk front to back, and a recycled chunk's lines were last read by
// the writer thread on another core (or have left the caches): each new
// line costs a read-for-ownership the store would otherwise wait for.
// Asking for the line a few records ahead, in exclusive state, overlaps
// that transfer with the records in between.
#ifndef DFTRACER_SRC_CORE_PREFETCH_FOR_WRITE_H_
#define DFTRACER_SRC_CORE_PREFETCH_FOR_WRITE_H_

#include <cstdint>

namespace dftracer {

// How far ahead of the fill level to prefetch: 8 lines, 16 plain complete
// events or 8 op events. Far enough that a line arrives from another core
// before the records ahead of it are written (~100 ns), near enough that
// the lines stay in L1 until used.
constexpr uint32_t kPrefetchAheadBytes = 512;
constexpr uint32_t kCacheLine = 64;

// PREFETCHW (exclusive state) where the ISA has it: every x86-64 CPU with
// 3DNowPrefetch/PRFCHW, and a NOP on older Intel ones (its opcode lies in
// the hint-NOP space), so no CPU check is needed. Elsewhere the compiler's
// write prefetch. Never faults, whatever the address.
inline void prefetch_for_write(const void* p) {
#if defined(__x86_64__) || defined(__i386__)
  __asm__ volatile("prefetchw %0" : : "m"(*static_cast<const char*>(p)));
#else
  __builtin_prefetch(p, 1, 3);
#endif
}

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_PREFETCH_FOR_WRITE_H_
