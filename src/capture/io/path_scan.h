// Word-at-a-time reading of a path on the open hooks' path, inline.
//
// Why not strlen/memcmp/memchr: on the project's VM a call into libc right
// after a system call costs more than its instructions (its PLT slot, its
// code page and its branches are cold again once the kernel has run: +8 ns
// for one strlen in a plain C program; docs/performance.md, #14). So the
// common open (an absolute, normal path) finds its length, whether it needs
// normalising, its DATA_DIR prefix and whether it names a trace file with
// these inline loops over 8-byte words and no call at all.
#ifndef DFTRACER_IO_PATH_SCAN_H_
#define DFTRACER_IO_PATH_SCAN_H_

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace dftracer::io::scan {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kLow7 = 0x7f7f7f7f7f7f7f7full;

// 0x80 in each byte of `x` equal to `c`, 0 in the others (exact: no false
// positives, unlike the shorter haszero trick, so masks can be combined).
inline uint64_t bytes_equal(uint64_t x, unsigned char c) {
  const uint64_t t = x ^ (kOnes * c);
  return ~(((t & kLow7) + kLow7) | t | kLow7);
}

inline uint64_t load8(const char* p) {
  uint64_t v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Bytes i of `x` with a '/' whose next byte is '/' or '.', within one word
// and across from the word before (`carry`: 0x80 when its last byte was
// '/'). '.' (0x2e) and '/' (0x2f) differ in bit 0 only, so one compare of
// `x | 1` finds both.
inline uint64_t slash_then_slash_or_dot(uint64_t slashes, uint64_t x, uint64_t carry) {
  return ((slashes << 8) | carry) & bytes_equal(x | kOnes, '/');
}

// strlen(path), and in *odd whether some '/' in it is followed by '/' or
// '.' (every absolute path that needs normalising and does not end in '/'
// has one; hidden files ("/x/.cache") have one too and need the exact
// check, path_needs_normalizing). One pass over aligned words: an aligned
// load never crosses into the next page, so reading up to 7 bytes past the
// NUL is safe -- but a sanitizer would call it an overflow, so those builds
// take strlen.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
size_t path_length_and_oddness(const char* path, bool* odd);  // path_normalize.cc
#else
inline size_t path_length_and_oddness(const char* path, bool* odd) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(path);
  const char* w = reinterpret_cast<const char*>(at & ~uintptr_t{7});
  const unsigned skip = static_cast<unsigned>(at & 7);
  // The bytes before `path` in the first word read as 0x01: not NUL, '/' or '.'.
  uint64_t x = load8(w);
  if (skip) {
    const uint64_t before = (uint64_t{1} << (8 * skip)) - 1;
    x = (x & ~before) | (kOnes & before);
  }
  uint64_t seen = 0, carry = 0;
  for (;;) {
    const uint64_t nul = bytes_equal(x, 0);
    const uint64_t slashes = bytes_equal(x, '/');
    const uint64_t pairs = slash_then_slash_or_dot(slashes, x, carry);
    if (nul) {
      seen |= pairs & ((nul & (0 - nul)) - 1);  // the bytes before the first NUL
      *odd = seen != 0;
      return static_cast<size_t>(w - path) + static_cast<size_t>(__builtin_ctzll(nul) >> 3);
    }
    seen |= pairs;
    carry = slashes >> 56;
    w += 8;
    x = load8(w);
  }
}
#endif

// memcmp(a, b, n) == 0 for n >= 1, a word at a time (the last word
// overlapping the one before); reads only [0, n) of each.
inline bool same_bytes(const char* a, const char* b, size_t n) {
  if (n < 8) {
    if (n >= 4) {
      uint32_t x, y, u, v;
      std::memcpy(&x, a, 4);
      std::memcpy(&y, b, 4);
      std::memcpy(&u, a + n - 4, 4);
      std::memcpy(&v, b + n - 4, 4);
      return ((x ^ y) | (u ^ v)) == 0;
    }
    for (size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return false;
    return true;
  }
  uint64_t diff = 0;
  for (size_t i = 0; i + 8 < n; i += 8) diff |= load8(a + i) ^ load8(b + i);
  return (diff | (load8(a + n - 8) ^ load8(b + n - 8))) == 0;
}

// Whether ".pfw" occurs in path[0, len) (our trace files and their indexes).
inline bool contains_pfw(const char* path, size_t len) {
  if (len < 4) return false;
  if (len < 11) {
    for (size_t i = 0; i + 4 <= len; ++i)
      if (path[i] == '.' && path[i + 1] == 'p' && path[i + 2] == 'f' && path[i + 3] == 'w') return true;
    return false;
  }
  // Start positions i..i+7 at once: byte k of the four words is path[i+k],
  // path[i+k+1], path[i+k+2], path[i+k+3]. The last round starts at len - 11,
  // so every start <= len - 4 is looked at and no read passes len.
  for (size_t i = 0;; i += 8) {
    if (i > len - 11) i = len - 11;
    if (bytes_equal(load8(path + i), '.') & bytes_equal(load8(path + i + 1), 'p') &
        bytes_equal(load8(path + i + 2), 'f') & bytes_equal(load8(path + i + 3), 'w'))
      return true;
    if (i == len - 11) return false;
  }
}

}  // namespace dftracer::io::scan

#endif  // DFTRACER_IO_PATH_SCAN_H_
