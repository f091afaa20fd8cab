// 64-bit string hash for HH / FH / SH metadata and the intern table: stable
// across processes, hosts and runs (no seed), so traces of many processes
// join on it.
//
// XXH3 (xxHash 0.8, Debian's libxxhash-dev, header-only here): it reads the
// string 8-16 bytes at a time, where the FNV-1a byte loop it replaces took
// one dependent multiply per byte -- about 1.5 ns per byte of a path on
// every traced open(), 60-150 ns for the paths a data loader opens. XXH3 is
// specified and frozen since 0.8.0: the same bytes give the same value on
// every platform and version. (Traces written before this change carry
// FNV-based hashes; a trace's FH/HH/SH records name its own hashes, so each
// file stays self-consistent.)
#ifndef DFTRACER_SRC_CORE_HASH_H_
#define DFTRACER_SRC_CORE_HASH_H_

#include <cstddef>
#include <cstdint>

#define XXH_INLINE_ALL
#include <xxhash.h>

namespace dftracer {

inline uint64_t hash64(const char* s, size_t n) { return XXH3_64bits(s, n); }

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_HASH_H_
