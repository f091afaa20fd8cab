// 64-bit string hash for HH / FH / SH metadata: stable across processes,
// hosts and runs (no seed), so traces of many processes join on it.
#ifndef DFTRACER_SRC_CORE_HASH_H_
#define DFTRACER_SRC_CORE_HASH_H_

#include <cstddef>
#include <cstdint>

namespace dftracer {

// FNV-1a over the bytes, then a splitmix64 finalizer so that short, similar
// strings (paths differing in one digit) spread over all 64 bits.
inline uint64_t hash64(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; ++i) {
    h ^= static_cast<unsigned char>(s[i]);
    h *= 1099511628211ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace dftracer

#endif  // DFTRACER_SRC_CORE_HASH_H_
